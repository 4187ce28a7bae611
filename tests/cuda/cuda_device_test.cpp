// The Device's scopes on the CUDA backend with real kernels (§3.5, §3.6;
// S1–S5, D1–D2): launch-time errors become failures that taint the write
// set, skips carry them, reads report them, host writes and relaunches
// repair — and the whole dataflow leaves exactly what the host backend
// leaves. Label gpu; skipped without a device.
#include <taintpool/cuda/cuda_backend.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/exception.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <cuda_runtime.h>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu_support.hpp"

namespace taintpool::cuda::testing {
namespace {

constexpr std::size_t kN = 4096;

std::vector<float> floats(Device& device, const Allocation& buffer) {
  const std::vector<std::byte> bytes = device.read_bytes(buffer.whole());
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

LaunchResult fill_on(Device& device, const Allocation& out, float value,
                     std::string_view kernel = "fill") {
  return device.launch(kernel, {}, {out.whole()}, [&](const KernelContext& context) {
    fill(stream_of(context), reinterpret_cast<float*>(context.write_binding(0).data),
         context.write_binding(0).range.size() / sizeof(float), value);
    return LaunchOutcome::success();
  });
}

/// Runs the dataflow on both backends with `fault` at `step` and expects the
/// same statuses and the same reads, tile by tile. Returns the GPU's root
/// messages for CUDA-specific checks.
std::vector<std::string> expect_same_as_host(std::size_t step, Fault fault, bool checked,
                                             CudaBackendOptions options = {}) {
  SCOPED_TRACE(std::string("fault '") + name(fault) + "' at step " + std::to_string(step) +
               (checked ? ", checked launches" : ", unchecked launches"));
  HostOps host(checked);
  CudaOps gpu(checked, std::move(options));
  const Observation expected = run_dataflow(host, step, fault);
  const Observation seen = run_dataflow(gpu, step, fault);
  EXPECT_EQ(seen.statuses, expected.statuses);
  EXPECT_EQ(seen.reads.size(), expected.reads.size());
  for (std::size_t at = 0; at < std::min(seen.reads.size(), expected.reads.size()); ++at) {
    EXPECT_EQ(seen.reads[at].first, expected.reads[at].first);
    EXPECT_EQ(seen.reads[at].second, expected.reads[at].second)
        << "reading " << seen.reads[at].first;
  }
  EXPECT_EQ(gpu.backend().unconfirmed_launches(), 0u);
  EXPECT_FALSE(gpu.backend().poisoned());
  return seen.root_messages;
}

bool mentions(const std::vector<std::string>& messages, Fault fault) {
  for (const std::string& message : messages) {
    if (names_cuda_error_of(message, fault)) {
      return true;
    }
  }
  return false;
}

/// A launch-time fault on a lone fill: the launch fails with the runtime's
/// error, its output reads as stale with that root, and the dataflow with
/// the fault at its first step matches the host backend.
void expect_launch_time_fault(Fault fault) {
  {
    CudaOps lone(false);
    const Allocation y = lone.device().create_buffer(kN * sizeof(float));
    const LaunchResult failed = lone.fill("faulty fill", y, 2.0f, fault);
    EXPECT_EQ(failed.status, LaunchStatus::Failed);
    ASSERT_TRUE(failed.error.has_value());
    EXPECT_EQ(failed.error->kind(), ErrorKind::Launch);
    EXPECT_TRUE(names_cuda_error_of(failed.error->message(), fault)) << failed.error->message();
    EXPECT_NE(failed.error->message().find("faulty fill"), std::string::npos);
    const std::vector<Report> reports = lone.device().stale_reports(y.whole());
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_EQ(reports[0].root.kind(), ErrorKind::Launch);
    EXPECT_EQ(reports[0].origin, y.id());
    EXPECT_EQ(reports[0].stale, ByteRange::sized(0, kN * sizeof(float)));
    EXPECT_THROW(static_cast<void>(lone.device().read_bytes(y.whole())), StaleRead);
    EXPECT_FALSE(lone.backend().poisoned()) << "a launch-time error is not sticky";
    // The device is still healthy: the next launch into the same buffer runs
    // and repairs it (S5).
    ASSERT_TRUE(fill_on(lone.device(), y, 4.0f).ran());
    EXPECT_EQ(floats(lone.device(), y), std::vector<float>(kN, 4.0f));
    lone.device().check_invariants();
  }
  const std::vector<std::string> roots = expect_same_as_host(0, fault, false);
  EXPECT_TRUE(mentions(roots, fault)) << "no root names " << cuda_error_of(fault);
}

TEST(CudaDevice, S1_AFillKernelWritesItsOutputAndTheReadReturnsItsBytes) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  EXPECT_NE(backend.name().find("cuda device 0"), std::string::npos);
  const Allocation y = device.create_buffer(kN * sizeof(float));
  const LaunchResult result = fill_on(device, y, 2.5f);
  EXPECT_TRUE(result.ran());
  EXPECT_EQ(floats(device, y), std::vector<float>(kN, 2.5f));
  EXPECT_EQ(backend.unconfirmed_launches(), 0u);
  device.check_invariants();
}

TEST(CudaDevice, D1_FillAxpyAndMatmulGiveTheHostBackendsBytesBitForBit) {
  TAINTPOOL_REQUIRE_GPU();
  static_cast<void>(expect_same_as_host(~std::size_t{0}, Fault::None, false));
  static_cast<void>(expect_same_as_host(~std::size_t{0}, Fault::None, true));
}

TEST(CudaDevice, S1_ALaunchWithAnInvalidConfigurationTaintsItsOutputs) {
  TAINTPOOL_REQUIRE_GPU();
  expect_launch_time_fault(Fault::InvalidConfiguration);
}

TEST(CudaDevice, S1_ALaunchThatAsksForTooManyResourcesTaintsItsOutputs) {
  TAINTPOOL_REQUIRE_GPU();
  const int registers = register_hungry_registers();
  ASSERT_GT(registers, 64) << "the kernel must need more registers than 1024 threads can have";
  expect_launch_time_fault(Fault::TooManyResources);
}

TEST(CudaDevice, S1_AKernelWithNoImageForTheDeviceTaintsItsOutputs) {
  TAINTPOOL_REQUIRE_GPU();
  int major = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  if (major >= 10) {
    GTEST_SKIP() << "this GPU (compute capability " << major << ".x) can run the sm_100 kernel";
  }
  expect_launch_time_fault(Fault::NoKernelImage);
}

TEST(CudaDevice, S1_AFailedStagingAllocationTaintsItsOutputs) {
  TAINTPOOL_REQUIRE_GPU();
  expect_launch_time_fault(Fault::StagingAllocation);
}

TEST(CudaDevice, S1_S4_EveryLaunchTimeFaultAtEveryStepLeavesWhatTheHostBackendLeaves) {
  TAINTPOOL_REQUIRE_GPU();
  for (const Fault fault : {Fault::InvalidConfiguration, Fault::TooManyResources,
                            Fault::NoKernelImage, Fault::StagingAllocation}) {
    for (std::size_t step = 0; step < 7; ++step) {
      for (const bool checked : {false, true}) {
        const std::vector<std::string> roots = expect_same_as_host(step, fault, checked);
        EXPECT_TRUE(mentions(roots, fault))
            << name(fault) << " at step " << step << ": no root names " << cuda_error_of(fault);
      }
    }
  }
}

TEST(CudaDevice, S4_ASkippedLaunchRunsNoKernelAndTheReadNamesTheRootAndThePath) {
  TAINTPOOL_REQUIRE_GPU();
  CudaOps ops(false);
  Device& device = ops.device();
  const Allocation x = device.create_buffer(kN * sizeof(float));
  const Allocation y = device.create_buffer(kN * sizeof(float));
  const Allocation z = device.create_buffer(kN * sizeof(float));
  const Allocation w = device.create_buffer(kN * sizeof(float));
  ASSERT_TRUE(fill_on(device, x, 1.0f).ran());
  ASSERT_EQ(ops.fill("load y", y, 2.0f, Fault::InvalidConfiguration).status, LaunchStatus::Failed);
  bool ran = false;
  const LaunchResult skipped =
      device.launch("linear", {x.whole(), y.whole()}, {z.whole()}, [&](const KernelContext&) {
        ran = true;
        return LaunchOutcome::success();
      });
  EXPECT_EQ(skipped.status, LaunchStatus::Skipped);
  EXPECT_FALSE(ran);
  EXPECT_EQ(skipped.needed, y.id());
  EXPECT_EQ(ops.axpy("softmax", z, x, w, 1.0f, Fault::None).status, LaunchStatus::Skipped);

  const std::vector<Report> reports = device.stale_reports(w.whole());
  ASSERT_EQ(reports.size(), 1u);
  const Report& report = reports[0];
  EXPECT_EQ(report.root.kind(), ErrorKind::Launch);
  EXPECT_NE(report.root.message().find("load y"), std::string::npos) << report.root.message();
  EXPECT_TRUE(names_cuda_error_of(report.root.message(), Fault::InvalidConfiguration))
      << report.root.message();
  EXPECT_EQ(report.origin, y.id());
  ASSERT_EQ(report.path.size(), 2u);
  EXPECT_EQ(report.path[0].kernel, "softmax");
  EXPECT_EQ(report.path[0].needed, z.id());
  EXPECT_EQ(report.path[1].kernel, "linear");
  EXPECT_EQ(report.path[1].needed, y.id());
  EXPECT_FALSE(report.path[0].ran);
  EXPECT_EQ(floats(device, x), std::vector<float>(kN, 1.0f)); // D2: x was only read.
  std::cout << to_string(report) << "\n";
  device.check_invariants();
}

TEST(CudaDevice, S5_AHostWriteRepairsATaintedBuffer) {
  TAINTPOOL_REQUIRE_GPU();
  CudaOps ops(false);
  Device& device = ops.device();
  const Allocation y = device.create_buffer(kN * sizeof(float));
  ASSERT_EQ(ops.fill("fill", y, 1.0f, Fault::InvalidConfiguration).status, LaunchStatus::Failed);
  ASSERT_FALSE(device.stale_reports(y.whole()).empty());
  // Half by a host write: exactly those bytes are repaired.
  std::vector<float> half(kN / 2, 6.0f);
  EXPECT_TRUE(
      device.write(y.bind(0, kN / 2 * sizeof(float)), std::as_bytes(std::span<const float>(half)))
          .ran());
  std::vector<std::byte> bytes(kN / 2 * sizeof(float));
  EXPECT_TRUE(device.read(y.bind(0, kN / 2 * sizeof(float)), bytes));
  EXPECT_EQ(std::memcmp(bytes.data(), half.data(), bytes.size()), 0);
  EXPECT_FALSE(device.read(y.bind(kN / 2 * sizeof(float), kN / 2 * sizeof(float)), bytes));
  device.check_invariants();
}

TEST(CudaDevice, S5_ARelaunchIntoATaintedOutputRepairsIt) {
  TAINTPOOL_REQUIRE_GPU();
  CudaOps ops(false);
  Device& device = ops.device();
  const Allocation y = device.create_buffer(kN * sizeof(float));
  ASSERT_EQ(ops.fill("fill", y, 1.0f, Fault::StagingAllocation).status, LaunchStatus::Failed);
  const std::uint64_t failures = device.graph().size();
  EXPECT_EQ(failures, 1u);
  ASSERT_TRUE(ops.fill("fill again", y, 3.0f, Fault::None).ran());
  EXPECT_EQ(floats(device, y), std::vector<float>(kN, 3.0f));
  EXPECT_EQ(device.graph().size(), 0u); // R1: the failure died with its last claim.
  device.check_invariants();
}

TEST(CudaDevice, D2_AFailureNeverReachesAChainThatSharesNoBuffer) {
  TAINTPOOL_REQUIRE_GPU();
  CudaOps ops(false);
  Device& device = ops.device();
  const Allocation a = device.create_buffer(kN * sizeof(float));
  const Allocation b = device.create_buffer(kN * sizeof(float));
  const Allocation p = device.create_buffer(kN * sizeof(float));
  const Allocation q = device.create_buffer(kN * sizeof(float));
  ASSERT_EQ(ops.fill("a", a, 1.0f, Fault::TooManyResources).status, LaunchStatus::Failed);
  ASSERT_EQ(ops.axpy("b", a, a, b, 1.0f, Fault::None).status, LaunchStatus::Skipped);
  ASSERT_TRUE(ops.fill("p", p, 2.0f, Fault::None).ran());
  ASSERT_TRUE(ops.axpy("q", p, p, q, 0.5f, Fault::None).ran());
  EXPECT_EQ(floats(device, q), std::vector<float>(kN, 3.0f));
  EXPECT_FALSE(device.stale_reports(b.whole()).empty());
  device.check_invariants();
}

TEST(CudaDevice, S1_AnErrorLeftPendingByAnUnrelatedCallIsNotBlamedOnTheNextLaunch) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  const Allocation y = device.create_buffer(kN * sizeof(float));
  void* impossible = nullptr;
  ASSERT_NE(cudaMalloc(&impossible, std::size_t{1} << 50), cudaSuccess); // Left pending.
  EXPECT_TRUE(fill_on(device, y, 5.0f).ran());
  EXPECT_EQ(floats(device, y), std::vector<float>(kN, 5.0f));
}

TEST(CudaDevice, S3_ABodyThatThrowsAfterLaunchingLeavesItsOutputsTornDown) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  const Allocation y = device.create_buffer(kN * sizeof(float));
  EXPECT_THROW(device.launch("throws", {}, {y.whole()},
                             [&](const KernelContext& context) -> LaunchOutcome {
                               fill(stream_of(context),
                                    reinterpret_cast<float*>(context.write_binding(0).data), kN,
                                    1.0f);
                               throw std::runtime_error("host-side bookkeeping failed");
                             }),
               std::runtime_error);
  const std::vector<Report> reports = device.stale_reports(y.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].root.kind(), ErrorKind::TornDown);
  EXPECT_NE(reports[0].root.message().find("host-side bookkeeping failed"), std::string::npos);
  device.check_invariants();
}

TEST(CudaDevice, P3_ABufferTheDriverCannotBackIsOutOfMemoryAndTheDeviceCarriesOn) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  try {
    const Allocation huge = device.create_buffer(std::uint64_t{1} << 40);
    FAIL() << "a 1 TiB buffer was allocated";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::OutOfMemory);
    // The driver's own words: the runtime's name for it when the arena's
    // page came from cudaMalloc, the driver API's when it maps virtual
    // memory (cuMemCreate).
    const std::string what = error.what();
    EXPECT_TRUE(what.find("cudaErrorMemoryAllocation") != std::string::npos ||
                what.find("CUDA_ERROR_OUT_OF_MEMORY") != std::string::npos)
        << what;
  }
  const Allocation y = device.create_buffer(kN * sizeof(float));
  EXPECT_TRUE(fill_on(device, y, 1.5f).ran());
  EXPECT_EQ(floats(device, y), std::vector<float>(kN, 1.5f));
}

TEST(CudaDevice, D1_AStreamOrderedAnd512AlignedBackendRunsTheSameDataflow) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackendOptions ordered;
  ordered.stream_ordered_storage = true;
  static_cast<void>(expect_same_as_host(~std::size_t{0}, Fault::None, false, ordered));
  static_cast<void>(expect_same_as_host(1, Fault::InvalidConfiguration, false, ordered));
  CudaBackendOptions wide;
  wide.alignment = 512;
  static_cast<void>(expect_same_as_host(4, Fault::TooManyResources, false, wide));
}

TEST(CudaDevice, D1_ABorrowedStreamCarriesTheLaunchesAndIsLeftAlive) {
  TAINTPOOL_REQUIRE_GPU();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  {
    CudaBackendOptions options;
    options.stream = stream;
    CudaBackend backend(options);
    EXPECT_EQ(backend.stream(), stream);
    Device device(backend);
    const Allocation y = device.create_buffer(kN * sizeof(float));
    ASSERT_TRUE(device
                    .launch("fill", {}, {y.whole()},
                            [&](const KernelContext& context) {
                              EXPECT_EQ(stream_of(context), stream);
                              fill(stream_of(context),
                                   reinterpret_cast<float*>(context.write_binding(0).data), kN,
                                   8.0f);
                              return LaunchOutcome::success();
                            })
                    .ran());
    EXPECT_EQ(floats(device, y), std::vector<float>(kN, 8.0f));
  }
  EXPECT_EQ(cudaStreamQuery(stream), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

} // namespace
} // namespace taintpool::cuda::testing
