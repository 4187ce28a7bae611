// NvtxRegions' bookkeeping (cuda/nvtx_regions.hpp, issue 15), checked
// without a GPU: with no NVTX tool attached every NVTX call is a no-op, so
// the heaps and regions it keeps can be driven by host pages. What a
// sanitizer makes of them is sanitizer_probe's part (label sanitizer).
#include <taintpool/cuda/nvtx_regions.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace taintpool::cuda {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

TEST(NvtxRegions, AnAllocationAcrossAdjacentChunksIsOneRegionPerChunk) {
  std::vector<std::byte> memory(4 * kMiB);
  const std::byte* base = memory.data();
  NvtxRegions regions;
  regions.on_page_added(base, 2 * kMiB);
  regions.on_page_added(base + 2 * kMiB, 2 * kMiB); // The next chunk of a reservation.
  EXPECT_EQ(regions.heaps(), 2u);
  const AllocationId across = AllocationId::from_raw(1);
  regions.on_bound(across, base + 2 * kMiB - 100, 200);
  EXPECT_EQ(regions.regions(), 2u);
  const AllocationId inside = AllocationId::from_raw(2);
  regions.on_bound(inside, base, 100);
  EXPECT_EQ(regions.regions(), 3u);
  regions.on_released(across, base + 2 * kMiB - 100, 200);
  EXPECT_EQ(regions.regions(), 1u);
  regions.on_released(inside, base, 100);
  EXPECT_EQ(regions.regions(), 0u);
  regions.on_page_removed(base, 2 * kMiB);
  regions.on_page_removed(base + 2 * kMiB, 2 * kMiB);
  EXPECT_EQ(regions.heaps(), 0u);
}

TEST(NvtxRegions, AnEmptyAllocationHasNoRegionSoEveryAccessToItIsOutside) {
  std::vector<std::byte> memory(kMiB);
  NvtxRegions regions;
  regions.on_page_added(memory.data(), kMiB);
  regions.on_bound(AllocationId::from_raw(1), memory.data() + 256, 0);
  EXPECT_EQ(regions.regions(), 0u);
  regions.on_released(AllocationId::from_raw(1), memory.data() + 256, 0);
  EXPECT_EQ(regions.regions(), 0u);
}

TEST(NvtxRegions, MemoryNoPageHoldsIsNotDescribed) {
  std::vector<std::byte> memory(2 * kMiB);
  NvtxRegions regions;
  regions.on_page_added(memory.data() + kMiB, kMiB);
  regions.on_bound(AllocationId::from_raw(1), memory.data(), 100); // Before the page.
  EXPECT_EQ(regions.regions(), 0u);
  regions.on_page_removed(memory.data(), kMiB); // Never added: ignored.
  EXPECT_EQ(regions.heaps(), 1u);
}

class NvtxRegionsOnAPool : public ::testing::TestWithParam<bool> {};

TEST_P(NvtxRegionsOnAPool, EveryLiveAllocationIsCoveredAndNothingOutlivesTheManager) {
  HostStorage storage(HostStorageOptions{256, GetParam(), 2 * kMiB});
  ErrorGraph graph;
  NvtxRegions regions;
  MemoryConfig config;
  config.observer = &regions;
  {
    MemoryManager memory(storage, graph, config);
    std::vector<Allocation> held;
    std::uint64_t nonempty = 0;
    for (const std::uint64_t size : {std::uint64_t{0}, std::uint64_t{100}, 64 * std::uint64_t{1024},
                                     kMiB + 1, 3 * kMiB, 5 * kMiB + 7}) {
      held.push_back(memory.allocate(size));
      nonempty += size != 0 ? 1 : 0;
    }
    EXPECT_GE(regions.regions(), nonempty); // One or more regions each.
    EXPECT_GE(regions.heaps(), 2u);         // A sliced page and the arena's memory.
    held.clear();
    memory.sweep();
    EXPECT_EQ(regions.regions(), 0u);
    held.push_back(memory.allocate(100));
    EXPECT_EQ(regions.regions(), 1u);
    memory.cleanup();
    EXPECT_EQ(regions.heaps(), 1u); // Only the page that holds the live allocation.
  }
  EXPECT_EQ(regions.regions(), 0u);
  EXPECT_EQ(regions.heaps(), 0u);
}

INSTANTIATE_TEST_SUITE_P(HostStorage, NvtxRegionsOnAPool, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "VirtualMemory" : "Pages";
                         });

/// Sets (or, with null, unsets) an environment variable for one scope and
/// restores what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value)
      : name_(name) {
    if (const char* old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

TEST(NvtxRegions, RunningUnderSanitizerIsWhatComputeSanitizerSets) {
  // The variables compute-sanitizer 2025.3 set on an H200 (nvtx_regions.cpp).
  const ScopedEnv no_port("NV_SANITIZER_INJECTION_PORT_RANGE_BEGIN", nullptr);
  {
    const ScopedEnv no_tool("NVTX_INJECTION64_PATH", nullptr);
    EXPECT_FALSE(running_under_sanitizer());
    const ScopedEnv port("NV_SANITIZER_INJECTION_PORT_RANGE_BEGIN", "0");
    EXPECT_TRUE(running_under_sanitizer());
  }
  {
    const ScopedEnv sanitizer_tool("NVTX_INJECTION64_PATH", "libsanitizer-collection.so");
    EXPECT_TRUE(running_under_sanitizer());
  }
  {
    // Another NVTX tool (a profiler) is not the sanitizer.
    const ScopedEnv profiler("NVTX_INJECTION64_PATH", "/opt/nsight/libToolsInjection64.so");
    EXPECT_FALSE(running_under_sanitizer());
  }
}

} // namespace
} // namespace taintpool::cuda
