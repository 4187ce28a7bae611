// Checked kernels on the CUDA backend (§3.6; S2 on an asynchronous device,
// D1): a kernel reports failure and its finished tiles through a status
// slot; the backend reads it at the next synchronisation and the Device
// attributes it to the launch's unfinished bytes and to everything that
// consumed them since — as DeferredHostBackend does on the CPU. Label gpu.
#include <taintpool/cuda/cuda_backend.hpp>
#include <taintpool/device/device.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu_support.hpp"

namespace taintpool::cuda::testing {
namespace {

constexpr std::size_t kN = 4096;
constexpr std::uint64_t kTileBytes = kTile * sizeof(float);

/// A checked fill; tile `fail_tile` reports failure code 7.
LaunchResult checked_fill(CudaBackend& backend, Device& device, const Allocation& out, float value,
                          std::uint32_t fail_tile = kNoFailure, std::string_view kernel = "fill") {
  return device.launch(kernel, {}, {out.whole()}, [&](const KernelContext& context) {
    const KernelStatus status = backend.checked(context, {kTileBytes});
    fill(stream_of(context), reinterpret_cast<float*>(context.write_binding(0).data),
         context.write_binding(0).range.size() / sizeof(float), value, status, kTile, fail_tile);
    return LaunchOutcome::success();
  });
}

LaunchResult unchecked_axpy(Device& device, const Allocation& a, const Allocation& b,
                            const Allocation& out, std::string_view kernel) {
  return device.launch(
      kernel, {a.whole(), b.whole()}, {out.whole()}, [&](const KernelContext& context) {
        axpy(stream_of(context), reinterpret_cast<const float*>(context.read_binding(0).data),
             reinterpret_cast<const float*>(context.read_binding(1).data),
             reinterpret_cast<float*>(context.write_binding(0).data), kN, 1.0f);
        return LaunchOutcome::success();
      });
}

bool readable(Device& device, const Binding& binding) {
  std::vector<std::byte> bytes(static_cast<std::size_t>(binding.range.size()));
  return device.read(binding, bytes).ok();
}

TEST(CudaChecked, S2_ACheckedKernelThatMarksEveryTileIsConfirmedAtTheNextSynchronisation) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  const Allocation y = device.create_buffer(kN * sizeof(float));
  const LaunchResult result = checked_fill(backend, device, y, 3.0f);
  EXPECT_TRUE(result.ran());
  EXPECT_EQ(backend.unconfirmed_launches(), 1u);
  ASSERT_TRUE(backend.oldest_unconfirmed_launch().has_value());
  device.synchronize();
  EXPECT_EQ(backend.unconfirmed_launches(), 0u);
  EXPECT_FALSE(backend.oldest_unconfirmed_launch().has_value());
  const std::vector<std::byte> bytes = device.read_bytes(y.whole());
  std::vector<float> values(kN);
  std::memcpy(values.data(), bytes.data(), bytes.size());
  EXPECT_EQ(values, std::vector<float>(kN, 3.0f));
  EXPECT_EQ(device.graph().size(), 0u);
  device.check_invariants();
}

TEST(CudaChecked, S2_ACheckedFailureTaintsExactlyTheTilesItDidNotFinish) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  const Allocation y = device.create_buffer(kN * sizeof(float));
  // Queued, so it looks fine until the device synchronises.
  EXPECT_TRUE(checked_fill(backend, device, y, 3.0f, 5, "load").ran());
  const std::vector<Report> reports = device.stale_reports(y.whole()); // Synchronises.
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].root.kind(), ErrorKind::Launch);
  const std::string& message = reports[0].root.message();
  EXPECT_NE(message.find("load"), std::string::npos) << message;
  EXPECT_NE(message.find("failure code 7"), std::string::npos) << message;
  EXPECT_NE(message.find("15 of 16 tiles finished"), std::string::npos) << message;
  EXPECT_NE(message.find("reported when the device synchronised"), std::string::npos) << message;
  EXPECT_EQ(reports[0].stale, ByteRange::sized(5 * kTileBytes, kTileBytes));
  for (std::uint64_t tile = 0; tile < kN / kTile; ++tile) {
    EXPECT_EQ(readable(device, y.bind(tile * kTileBytes, kTileBytes)), tile != 5)
        << "tile " << tile;
  }
  device.check_invariants();
}

TEST(CudaChecked, S2_ALateFailureReachesEveryLaunchThatConsumedItsOutputsSince) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  const Allocation x = device.create_buffer(kN * sizeof(float));
  const Allocation y = device.create_buffer(kN * sizeof(float));
  const Allocation z = device.create_buffer(kN * sizeof(float));
  const Allocation w = device.create_buffer(kN * sizeof(float));
  const Allocation unrelated = device.create_buffer(kN * sizeof(float));
  ASSERT_TRUE(checked_fill(backend, device, x, 1.0f).ran());
  ASSERT_TRUE(checked_fill(backend, device, y, 2.0f, 0, "load y").ran());
  // Both run on the GPU before anyone knows y is bad:
  ASSERT_TRUE(unchecked_axpy(device, x, y, z, "linear").ran());
  ASSERT_TRUE(unchecked_axpy(device, z, x, w, "softmax").ran());
  ASSERT_TRUE(unchecked_axpy(device, x, x, unrelated, "other").ran());
  device.synchronize();

  const std::vector<Report> reports = device.stale_reports(w.whole());
  ASSERT_EQ(reports.size(), 1u);
  const Report& report = reports[0];
  EXPECT_EQ(report.origin, y.id());
  ASSERT_EQ(report.path.size(), 2u);
  EXPECT_EQ(report.path[0].kernel, "softmax");
  EXPECT_TRUE(report.path[0].ran);
  EXPECT_EQ(report.path[0].needed, z.id());
  EXPECT_EQ(report.path[1].kernel, "linear");
  EXPECT_TRUE(report.path[1].ran);
  EXPECT_EQ(report.path[1].needed, y.id());
  std::cout << to_string(report) << "\n";
  EXPECT_FALSE(readable(device, z.whole()));
  EXPECT_FALSE(readable(device, y.bind(0, kTileBytes)));
  EXPECT_TRUE(readable(device, y.bind(kTileBytes, kN * sizeof(float) - kTileBytes)));
  EXPECT_TRUE(readable(device, x.whole()));         // Only read by the failures.
  EXPECT_TRUE(readable(device, unrelated.whole())); // D2.
  device.check_invariants();
}

TEST(CudaChecked, S2_ALaunchThatOverwroteTheStaleBytesBeforeTheSynchronisationKeepsThemClean) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  const Allocation y = device.create_buffer(kN * sizeof(float));
  ASSERT_TRUE(checked_fill(backend, device, y, 2.0f, 3).ran());
  ASSERT_TRUE(checked_fill(backend, device, y, 4.0f).ran()); // Overwrites every byte.
  device.synchronize();
  EXPECT_TRUE(readable(device, y.whole()));
  EXPECT_EQ(device.graph().size(), 0u);
  device.check_invariants();
}

TEST(CudaChecked, S2_TilesAKernelLeftUnmarkedCountAsUnwrittenEvenWithNoReportedFailure) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  const Allocation y = device.create_buffer(kN * sizeof(float));
  ASSERT_TRUE(device
                  .launch("off by one", {}, {y.whole()},
                          [&](const KernelContext& context) {
                            fill_marking_out_of_range(
                                stream_of(context),
                                reinterpret_cast<float*>(context.write_binding(0).data), kN, 1.0f,
                                backend.checked(context, {kTileBytes}), kTile);
                            return LaunchOutcome::success();
                          })
                  .ran());
  const std::vector<Report> reports = device.stale_reports(y.whole());
  ASSERT_EQ(reports.size(), 1u);
  const std::string& message = reports[0].root.message();
  EXPECT_NE(message.find("left tiles unmarked"), std::string::npos) << message;
  EXPECT_NE(message.find("1 tile marks named no tile"), std::string::npos) << message;
  EXPECT_EQ(reports[0].stale, ByteRange::sized(0, kTileBytes));
  EXPECT_TRUE(readable(device, y.bind(kTileBytes, kN * sizeof(float) - kTileBytes)));
  device.check_invariants();
}

TEST(CudaChecked, S2_CheckedFaultsAtEveryStepLeaveWhatTheHostBackendWithDeferredChecksLeaves) {
  TAINTPOOL_REQUIRE_GPU();
  for (std::size_t step = 0; step < 7; ++step) {
    SCOPED_TRACE("checked failure at step " + std::to_string(step));
    HostOps host(true);
    CudaOps gpu(true);
    const Observation expected = run_dataflow(host, step, Fault::CheckedFailure);
    const Observation seen = run_dataflow(gpu, step, Fault::CheckedFailure);
    EXPECT_EQ(seen.statuses, expected.statuses);
    ASSERT_EQ(seen.reads.size(), expected.reads.size());
    for (std::size_t at = 0; at < seen.reads.size(); ++at) {
      EXPECT_EQ(seen.reads[at].second, expected.reads[at].second)
          << "reading " << seen.reads[at].first;
    }
  }
  for (const std::size_t step : {std::size_t{0}, std::size_t{3}, std::size_t{5}}) {
    SCOPED_TRACE("unmarked tiles at step " + std::to_string(step));
    HostOps host(true);
    CudaOps gpu(true);
    const Observation expected = run_dataflow(host, step, Fault::UnmarkedTiles);
    const Observation seen = run_dataflow(gpu, step, Fault::UnmarkedTiles);
    EXPECT_EQ(seen.statuses, expected.statuses);
    ASSERT_EQ(seen.reads.size(), expected.reads.size());
    for (std::size_t at = 0; at < seen.reads.size(); ++at) {
      EXPECT_EQ(seen.reads[at].second, expected.reads[at].second)
          << "reading " << seen.reads[at].first;
    }
  }
}

TEST(CudaChecked, S1_ACheckedLaunchRefusedAtLaunchTimeIsReportedOnceNotAgainAtSynchronisation) {
  TAINTPOOL_REQUIRE_GPU();
  CudaOps ops(true);
  Device& device = ops.device();
  const Allocation y = device.create_buffer(kN * sizeof(float));
  const LaunchResult result = ops.fill("fill", y, 1.0f, Fault::InvalidConfiguration);
  EXPECT_EQ(result.status, LaunchStatus::Failed);
  EXPECT_EQ(ops.backend().unconfirmed_launches(), 0u);
  EXPECT_TRUE(ops.backend().synchronize().empty());
  const std::vector<Report> reports = device.stale_reports(y.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_TRUE(names_cuda_error_of(reports[0].root.message(), Fault::InvalidConfiguration))
      << reports[0].root.message();
  device.check_invariants();
}

TEST(CudaChecked, S2_ChecksBeyondTheStatusArenaAreDrainedEarlyAndStillAttributed) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackendOptions options;
  options.status_words = 64; // 3 words a launch: 21 launches fill it.
  CudaBackend backend(options);
  Device device(backend);
  std::vector<Allocation> buffers;
  std::vector<Allocation> consumers;
  const Allocation ones = device.create_buffer(kN * sizeof(float));
  ASSERT_TRUE(checked_fill(backend, device, ones, 1.0f).ran());
  for (int index = 0; index < 100; ++index) {
    buffers.push_back(device.create_buffer(kN * sizeof(float)));
    consumers.push_back(device.create_buffer(kN * sizeof(float)));
    const bool fails = index == 5 || index == 50 || index == 99;
    ASSERT_TRUE(checked_fill(backend, device, buffers.back(), 2.0f, fails ? 1 : kNoFailure).ran());
    // Consumed at once, long before the slot is read.
    ASSERT_TRUE(unchecked_axpy(device, buffers.back(), ones, consumers.back(), "consume").ran());
  }
  EXPECT_GT(backend.early_drains(), 3u);
  device.synchronize();
  EXPECT_EQ(backend.unconfirmed_launches(), 0u);
  for (int index = 0; index < 100; ++index) {
    const bool fails = index == 5 || index == 50 || index == 99;
    EXPECT_EQ(
        readable(device, buffers[static_cast<std::size_t>(index)].bind(kTileBytes, kTileBytes)),
        !fails)
        << "buffer " << index;
    EXPECT_TRUE(readable(device, buffers[static_cast<std::size_t>(index)].bind(0, kTileBytes)));
    EXPECT_EQ(readable(device, consumers[static_cast<std::size_t>(index)].whole()), !fails)
        << "consumer " << index;
  }
  device.check_invariants();
}

TEST(CudaChecked, S3_ALayoutThatCannotBeCheckedThrowsFromTheBodyAndLeavesTheOutputsTornDown) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackendOptions options;
  options.status_words = 16;
  CudaBackend backend(options);
  Device device(backend);
  const Allocation y = device.create_buffer(kN * sizeof(float));
  // 4096 one-float tiles need 130 words: more than the arena.
  EXPECT_THROW(device.launch("too fine", {}, {y.whole()},
                             [&](const KernelContext& context) {
                               static_cast<void>(backend.checked(context, {4}));
                               return LaunchOutcome::success();
                             }),
               std::length_error);
  EXPECT_THROW(device.launch("wrong count", {}, {y.whole()},
                             [&](const KernelContext& context) {
                               static_cast<void>(backend.checked(context, {4, 4}));
                               return LaunchOutcome::success();
                             }),
               std::invalid_argument);
  const std::vector<Report> reports = device.stale_reports(y.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].root.kind(), ErrorKind::TornDown);
  EXPECT_EQ(backend.unconfirmed_launches(), 0u);
  device.check_invariants();
}

} // namespace
} // namespace taintpool::cuda::testing
