// The never-written mode on a real GPU (issue 15; proposed rules N1-N3),
// with no sanitizer: the mistake initcheck cannot see inside a pool — a
// kernel reading a recycled buffer before its new owner wrote it — caught
// by taintpool itself.
//
//   N1  under FreshBytes::NeverWritten a new allocation's bytes are claimed
//       by the memory's NeverWritten failure, however its memory was used
//       before (here: the same slice, written by a kernel of its previous
//       owner, so the bytes are real, stale floats);
//   N2  a launch whose kernel would read them is skipped (S1), or under
//       UnwrittenReads::Report runs — the kernel reads the stale floats —
//       and lists the never-written runs it read;
//   N3  a read of them fails naming the allocation, the bytes and the site.
//
// D1 is the contrast: in the default mode the same program reads the
// previous owner's floats as if they were its own.
//
// Label gpu; skipped without a device.
#include <taintpool/cuda/cuda_backend.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/exception.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_kernels.hpp"
#include "gpu_support.hpp"

namespace taintpool::cuda::testing {
namespace {

constexpr std::size_t kN = 4096;
constexpr std::uint64_t kBytes = kN * sizeof(float);

DeviceOptions never_written(const CudaBackend& backend, UnwrittenReads reads) {
  DeviceOptions options;
  options.memory = backend.memory_config(); // The GPU's pools (alignment, regions).
  options.memory->fresh_bytes = FreshBytes::NeverWritten;
  options.unwritten_reads = reads;
  return options;
}

const std::byte* address_of(Device& device, const Allocation& buffer) {
  return device.memory().resolve(buffer.whole()).data;
}

LaunchResult fill_on(Device& device, const Allocation& out, float value) {
  return device.launch("fill", {}, {out.whole()}, [&](const KernelContext& context) {
    fill(stream_of(context), reinterpret_cast<float*>(context.write_binding(0).data), kN, value);
    return LaunchOutcome::success();
  });
}

/// out = 2 * in + in, on the GPU; counts the bodies that ran.
LaunchResult triple_on(Device& device, const Allocation& in, const Allocation& out, int& ran) {
  return device.launch("triple", {in.whole()}, {out.whole()}, [&](const KernelContext& context) {
    ++ran;
    const auto* a = reinterpret_cast<const float*>(context.read_binding(0).data);
    axpy(stream_of(context), a, a, reinterpret_cast<float*>(context.write_binding(0).data), kN,
         2.0f);
    return LaunchOutcome::success();
  });
}

std::vector<float> floats(Device& device, const Allocation& buffer) {
  const std::vector<std::byte> bytes = device.read_bytes(buffer.whole());
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

/// A buffer the pool recycled: a kernel wrote 3.0f into its slice for a
/// previous owner, which was dropped; the new buffer gets the same slice
/// (checked: the premise of every test here).
Allocation recycled_buffer(Device& device, const char* site) {
  const std::byte* first = nullptr;
  {
    const Allocation previous = device.create_buffer(kBytes);
    EXPECT_TRUE(fill_on(device, previous, 3.0f).ran());
    EXPECT_EQ(floats(device, previous), std::vector<float>(kN, 3.0f));
    first = address_of(device, previous);
  }
  device.sweep();
  Allocation fresh = device.create_buffer(kBytes, device.default_stream(), site);
  EXPECT_EQ(address_of(device, fresh), first) << "the pool did not recycle the slice";
  return fresh;
}

TEST(CudaNeverWritten, D1_ByDefaultARecycledBufferReadsItsPreviousOwnersBytesAsItsOwn) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  const Allocation fresh = recycled_buffer(device, "");
  const Allocation out = device.create_buffer(kBytes);
  int ran = 0;
  ASSERT_TRUE(triple_on(device, fresh, out, ran).ran());
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(floats(device, fresh), std::vector<float>(kN, 3.0f)) << "the stale bytes, unnoticed";
  EXPECT_EQ(floats(device, out), std::vector<float>(kN, 9.0f));
  device.check_invariants();
}

TEST(CudaNeverWritten, S1_N3_UnderSkipAKernelThatWouldReadARecycledBufferIsSkippedAndAReadNamesIt) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend, never_written(backend, UnwrittenReads::Skip));
  const Allocation fresh = recycled_buffer(device, "recycled.cpp:7");
  const Allocation out = device.create_buffer(kBytes);
  int ran = 0;
  const LaunchResult result = triple_on(device, fresh, out, ran);
  EXPECT_EQ(result.status, LaunchStatus::Skipped);
  EXPECT_EQ(ran, 0) << "the kernel was launched";
  EXPECT_EQ(result.failure, device.memory().never_written_failure());
  EXPECT_EQ(result.needed, fresh.id());
  EXPECT_TRUE(result.unwritten.empty());
  // N3: the read names the allocation, the bytes and the site.
  std::vector<std::byte> bytes(kBytes);
  const ReadOutcome read = device.read(fresh.whole(), bytes);
  ASSERT_EQ(read.reports.size(), 1u);
  EXPECT_EQ(read.reports[0].root.kind(), ErrorKind::NeverWritten);
  EXPECT_EQ(to_string(read.reports[0]),
            to_string(fresh.id()) + " bytes [0, " + std::to_string(kBytes) +
                ") were never written since it was created (created at recycled.cpp:7)");
  EXPECT_THROW(static_cast<void>(device.read_bytes(fresh.whole())), StaleRead);
  // The skipped kernel's output carries the path back to the buffer.
  const std::vector<Report> reports = device.stale_reports(out.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_NE(to_string(reports[0]).find("triple was skipped: it needed " + to_string(fresh.id())),
            std::string::npos)
      << to_string(reports[0]);
  // Written by a kernel, the bytes are the new owner's: it runs now.
  ASSERT_TRUE(fill_on(device, fresh, 1.0f).ran());
  ASSERT_TRUE(triple_on(device, fresh, out, ran).ran());
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(floats(device, out), std::vector<float>(kN, 3.0f));
  device.check_invariants();
}

TEST(CudaNeverWritten, N2_UnderReportTheKernelReadsTheRecycledBytesAndTheResultListsThem) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend, never_written(backend, UnwrittenReads::Report));
  const Allocation fresh = recycled_buffer(device, "recycled.cpp:9");
  // The new owner writes the first half from the host; the second half is
  // still the previous owner's 3.0f.
  const std::vector<float> ones(kN / 2, 1.0f);
  std::vector<std::byte> half(kBytes / 2);
  std::memcpy(half.data(), ones.data(), half.size());
  ASSERT_TRUE(device.write(fresh.bind(0, kBytes / 2), half).ran());
  const Allocation out = device.create_buffer(kBytes);
  int ran = 0;
  const LaunchResult result = triple_on(device, fresh, out, ran);
  ASSERT_TRUE(result.ran());
  EXPECT_EQ(ran, 1);
  ASSERT_EQ(result.unwritten.size(), 1u);
  EXPECT_EQ(result.unwritten[0], (UnwrittenRead{fresh.id(), ByteRange::of(kBytes / 2, kBytes)}));
  // The kernel ran on what was there: its output is written (T2) and shows
  // the stale half.
  const std::vector<float> seen = floats(device, out);
  EXPECT_EQ(std::vector<float>(seen.begin(), seen.begin() + kN / 2),
            std::vector<float>(kN / 2, 3.0f));
  EXPECT_EQ(std::vector<float>(seen.begin() + kN / 2, seen.end()),
            std::vector<float>(kN / 2, 9.0f));
  // N3: reading the input still names the half nobody wrote.
  const std::vector<Report> reports = device.stale_reports(fresh.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(to_string(reports[0]), to_string(fresh.id()) + " bytes [" + std::to_string(kBytes / 2) +
                                       ", " + std::to_string(kBytes) +
                                       ") were never written since it was created "
                                       "(created at recycled.cpp:9)");
  device.check_invariants();
}

} // namespace
} // namespace taintpool::cuda::testing
