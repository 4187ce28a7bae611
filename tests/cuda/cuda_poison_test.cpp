// A sticky CUDA error poisons the context (§3.6; D1 under the one fault the
// backend cannot attribute). Its own executable, with one test: the fault
// leaves this process's CUDA context unusable, so nothing may run after it
// in the same process (ctest runs each test in a process of its own anyway).
// Not run under compute-sanitizer: the illegal address is the point.
#include <taintpool/cuda/cuda_backend.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/exception.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "gpu_support.hpp"

namespace taintpool::cuda::testing {
namespace {

constexpr std::size_t kN = 4096;
constexpr std::uint64_t kTileBytes = kTile * sizeof(float);

TEST(CudaPoison, D1_AStickyErrorFailsEveryUnconfirmedLaunchRefusesFurtherWorkAndNeverReadsGarbage) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  const Allocation early = device.create_buffer(kN * sizeof(float));
  const Allocation checked_out = device.create_buffer(kN * sizeof(float));
  const Allocation downstream = device.create_buffer(kN * sizeof(float));
  const Allocation later = device.create_buffer(kN * sizeof(float));

  // Confirmed before the fault: an unchecked fill, synchronised.
  ASSERT_TRUE(device
                  .launch("early", {}, {early.whole()},
                          [&](const KernelContext& context) {
                            fill(stream_of(context),
                                 reinterpret_cast<float*>(context.write_binding(0).data), kN, 1.0f);
                            return LaunchOutcome::success();
                          })
                  .ran());
  device.synchronize();

  // Unconfirmed: a checked fill that will succeed on the GPU, and a launch
  // that consumes it — then a kernel that writes through a wild pointer.
  ASSERT_TRUE(device
                  .launch("checked", {}, {checked_out.whole()},
                          [&](const KernelContext& context) {
                            fill(stream_of(context),
                                 reinterpret_cast<float*>(context.write_binding(0).data), kN, 2.0f,
                                 backend.checked(context, {kTileBytes}), kTile);
                            return LaunchOutcome::success();
                          })
                  .ran());
  ASSERT_TRUE(device
                  .launch("consumer", {checked_out.whole()}, {downstream.whole()},
                          [&](const KernelContext& context) {
                            fill(stream_of(context),
                                 reinterpret_cast<float*>(context.write_binding(0).data), kN, 3.0f);
                            return LaunchOutcome::success();
                          })
                  .ran());
  static_cast<void>(device.launch("wild", {}, {}, [&](const KernelContext& context) {
    illegal_address(stream_of(context));
    return LaunchOutcome::success();
  }));

  device.synchronize(); // The fault surfaces here at the latest.
  ASSERT_TRUE(backend.poisoned());
  const std::string poison = backend.poison()->message();
  std::cout << "poison: " << poison << "\n";
  EXPECT_NE(poison.find("cudaErrorIllegalAddress"), std::string::npos) << poison;
  EXPECT_EQ(backend.unconfirmed_launches(), 0u);

  // The unconfirmed checked launch was reported failed with no written
  // ranges, and its consumer's output with it.
  const std::vector<Report> checked_reports = device.stale_reports(checked_out.whole());
  ASSERT_EQ(checked_reports.size(), 1u);
  EXPECT_EQ(checked_reports[0].stale, ByteRange::sized(0, kN * sizeof(float)));
  EXPECT_NE(checked_reports[0].root.message().find("its outputs are unknown"), std::string::npos);
  const std::vector<Report> downstream_reports = device.stale_reports(downstream.whole());
  ASSERT_EQ(downstream_reports.size(), 1u);
  ASSERT_EQ(downstream_reports[0].path.size(), 1u);
  EXPECT_EQ(downstream_reports[0].path[0].kernel, "consumer");
  EXPECT_TRUE(downstream_reports[0].path[0].ran);

  // Confirmed bytes are not re-tainted, but cannot be read: the read throws
  // instead of returning memory the context has lost.
  EXPECT_TRUE(device.stale_reports(early.whole()).empty());
  try {
    static_cast<void>(device.read_bytes(early.whole()));
    FAIL() << "a poisoned device returned bytes";
  } catch (const StaleRead&) {
    FAIL() << "early was confirmed and should not be stale";
  } catch (const Exception& error) {
    EXPECT_NE(std::string(error.what()).find("cannot read"), std::string::npos) << error.what();
  }

  // Further work is refused, and what it would have written carries why.
  bool ran = false;
  const LaunchResult refused =
      device.launch("after", {}, {later.whole()}, [&](const KernelContext&) {
        ran = true;
        return LaunchOutcome::success();
      });
  EXPECT_FALSE(ran);
  EXPECT_EQ(refused.status, LaunchStatus::Failed);
  ASSERT_TRUE(refused.error.has_value());
  EXPECT_NE(refused.error->message().find("not run"), std::string::npos);
  const std::vector<float> host(kN, 9.0f);
  EXPECT_EQ(device.write(later.whole(), std::as_bytes(std::span<const float>(host))).status,
            LaunchStatus::Failed);
  EXPECT_FALSE(device.stale_reports(later.whole()).empty());
  device.check_invariants();
}

} // namespace
} // namespace taintpool::cuda::testing
