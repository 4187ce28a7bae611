// CudaStorage and the pool on GPU pages (§3.4, P1–P3). Label gpu: each test
// that needs a device skips, saying why, where there is none.
#include <taintpool/cuda/cuda_storage.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/exception.hpp>
#include <taintpool/pool/fault_injecting_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>
#include <taintpool/pool/virtual_memory.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cuda_runtime.h>
#include <random>
#include <stdexcept>
#include <vector>

#include "gpu_support.hpp"

namespace taintpool::cuda::testing {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

TEST(CudaStorage, P3_OnlyAnAlignmentOf256Or512IsAccepted) {
  // No CUDA call is made: this holds on any machine.
  EXPECT_THROW(CudaStorage(CudaStorageOptions{0, 128, false, nullptr}), std::invalid_argument);
  EXPECT_THROW(CudaStorage(CudaStorageOptions{0, 1024, false, nullptr}), std::invalid_argument);
  EXPECT_NO_THROW(CudaStorage(CudaStorageOptions{0, 256, false, nullptr}));
  EXPECT_NO_THROW(CudaStorage(CudaStorageOptions{0, 512, false, nullptr}));
  EXPECT_EQ(CudaStorage(CudaStorageOptions{0, 256, true, nullptr}).name(),
            "cuda device 0 (stream-ordered)");
}

TEST(CudaStorage, P2_PagesFromCudaMallocAreDeviceMemoryAlignedTo256) {
  TAINTPOOL_REQUIRE_GPU();
  CudaStorage storage;
  const StorageHandle page = storage.allocate(2 * kMiB);
  void* pointer = storage.resolve(page);
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, pointer), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attributes.device, 0);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pointer) % 256, 0u);
  EXPECT_EQ(storage.pages(), 1u);
  EXPECT_EQ(storage.bytes(), 2 * kMiB);
  ASSERT_EQ(cudaMemset(pointer, 0xAB, 2 * kMiB), cudaSuccess); // Really writable.
  storage.deallocate(page, 2 * kMiB);
  EXPECT_EQ(storage.pages(), 0u);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(CudaStorage, P2_StreamOrderedPagesComeFromCudaMallocAsyncOnTheirStream) {
  TAINTPOOL_REQUIRE_GPU();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  {
    CudaStorage storage(CudaStorageOptions{0, 256, true, stream});
    EXPECT_EQ(storage.name(), "cuda device 0 (stream-ordered)");
    const StorageHandle page = storage.allocate(3 * kMiB + 256);
    void* pointer = storage.resolve(page);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pointer) % 256, 0u);
    // Usable on its stream in order, without a synchronisation in between.
    ASSERT_EQ(cudaMemsetAsync(pointer, 0x5A, 3 * kMiB + 256, stream), cudaSuccess);
    std::uint8_t last = 0;
    ASSERT_EQ(cudaMemcpyAsync(&last, static_cast<std::uint8_t*>(pointer) + 3 * kMiB + 255, 1,
                              cudaMemcpyDeviceToHost, stream),
              cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(last, 0x5A);
    storage.deallocate(page, 3 * kMiB + 256);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  }
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST(CudaStorage, P2_EveryPageOfA512AlignedStorageIsAlignedTo512) {
  TAINTPOOL_REQUIRE_GPU();
  for (const bool ordered : {false, true}) {
    CudaStorage storage(CudaStorageOptions{0, 512, ordered, nullptr});
    std::vector<std::pair<StorageHandle, std::uint64_t>> pages;
    for (const std::uint64_t size : {std::uint64_t{256}, std::uint64_t{257}, std::uint64_t{768},
                                     std::uint64_t{1000}, 2 * kMiB + 256, std::uint64_t{4096}}) {
      for (int copy = 0; copy < 8; ++copy) {
        const StorageHandle page = storage.allocate(size);
        EXPECT_EQ(page.value % 512, 0u) << "a page of " << size << " bytes";
        pages.emplace_back(page, size);
      }
    }
    EXPECT_EQ(storage.pages(), pages.size());
    for (const auto& [page, size] : pages) {
      storage.deallocate(page, size);
    }
    EXPECT_EQ(storage.pages(), 0u);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
}

void expect_driver_out_of_memory(bool ordered) {
  CudaStorage storage(CudaStorageOptions{0, 256, ordered, nullptr});
  ErrorGraph graph;
  MemoryManager memory(storage, graph);
  const Allocation small = memory.allocate(1000); // So the breakdown has something in it.
  try {
    // 1 TiB: within MemoryConfig::max_allocation, beyond any GPU.
    const Allocation huge = memory.allocate(std::uint64_t{1} << 40);
    FAIL() << "a 1 TiB buffer was allocated";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::OutOfMemory);
    const std::string text = error.what();
    if (storage.virtual_memory() != nullptr) {
      // The arena maps: the driver's virtual memory calls refuse it.
      EXPECT_NE(text.find("cuMem"), std::string::npos) << text;
      EXPECT_NE(text.find("CUDA_ERROR_"), std::string::npos) << text;
    } else {
      EXPECT_NE(text.find(ordered ? "cudaMallocAsync" : "cudaMalloc"), std::string::npos) << text;
      EXPECT_NE(text.find("cudaErrorMemoryAllocation"), std::string::npos) << text;
    }
    EXPECT_NE(text.find("in use"), std::string::npos) << text;
    EXPECT_NE(text.find("largest free block"), std::string::npos) << text;
    EXPECT_NE(text.find(storage.name()), std::string::npos) << text;
  }
  // The runtime's last error was cleared; the pool is intact and usable.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  memory.check_invariants();
  const Allocation after = memory.allocate(5 * kMiB);
  EXPECT_TRUE(after);
  memory.check_invariants();
}

TEST(CudaStorage, P3_ADriverOutOfMemoryIsOutOfMemoryWithTheDriversReasonAndTheBreakdown) {
  TAINTPOOL_REQUIRE_GPU();
  expect_driver_out_of_memory(false);
}

TEST(CudaStorage, P3_AStreamOrderedOutOfMemoryIsReportedTheSameWay) {
  TAINTPOOL_REQUIRE_GPU();
  expect_driver_out_of_memory(true);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(CudaStorage, P3_AFaultInjectedCudaStorageFailsWithoutReachingTheDriver) {
  TAINTPOOL_REQUIRE_GPU();
  CudaStorage storage;
  FaultInjectingStorage faulty(storage);
  ErrorGraph graph;
  MemoryManager memory(faulty, graph);
  faulty.fail_next(1);
  try {
    const Allocation lost = memory.allocate(1000);
    FAIL() << "the injected failure did not fire";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::OutOfMemory);
    EXPECT_NE(std::string(error.what()).find("fault-injecting"), std::string::npos) << error.what();
  }
  EXPECT_EQ(storage.pages(), 0u);
  const Allocation kept = memory.allocate(1000);
  EXPECT_EQ(storage.pages(), 1u);
  memory.check_invariants();
}

TEST(CudaStorage, P1_P2_APoolOnCudaPagesReusesSlicesAndGivesEveryPageBackOnCleanup) {
  TAINTPOOL_REQUIRE_GPU();
  CudaStorage storage;
  ErrorGraph graph;
  {
    MemoryManager memory(storage, graph);
    std::mt19937_64 random(42);
    std::vector<Allocation> live;
    for (int round = 0; round < 3000; ++round) {
      if (!live.empty() && random() % 100 < 40) {
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(random() % live.size()));
        continue;
      }
      const std::uint64_t size = random() % 4 == 0 ? random() % (8 * kMiB) : random() % 70000;
      live.push_back(memory.allocate(size));
      const AllocationId id = live.back().id();
      memory.for_each_allocation([&](const AllocationInfo& info) {
        if (info.id == id && info.size != 0) {
          // Every byte of every allocation is real device memory.
          ASSERT_EQ(cudaMemset(const_cast<std::byte*>(info.data), 0x11, info.size), cudaSuccess);
        }
      });
    }
    memory.check_invariants();
    const MemoryStats busy = memory.stats();
    EXPECT_GT(busy.pages, 0u);
    EXPECT_EQ(busy.reserved, storage.bytes());
    live.clear();
    memory.cleanup();
    memory.check_invariants();
    EXPECT_EQ(memory.stats().pages, 0u);
    EXPECT_EQ(storage.pages(), 0u);
  }
  EXPECT_EQ(graph.size(), 0u); // R4
}

TEST(CudaStorage, P2_VirtualMemoryReservesAddressSpaceAndMapsWritableChunksIntoIt) {
  TAINTPOOL_REQUIRE_GPU();
  CudaStorage storage;
  VirtualMemory* memory = storage.virtual_memory();
  if (memory == nullptr) {
    GTEST_SKIP() << "this device has no virtual memory management";
  }
  const std::uint64_t granule = memory->granularity();
  EXPECT_GE(granule, 2 * kMiB);
  EXPECT_EQ(granule & (granule - 1), 0u);
  const StorageHandle range = memory->reserve(64 * granule);
  auto* base = static_cast<std::uint8_t*>(storage.resolve(range));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(base) % 512, 0u);
  // Two chunks, one after the other: one contiguous writable range.
  const StorageHandle first = memory->map(range, 0, 2 * granule);
  const StorageHandle second = memory->map(range, 2 * granule, granule);
  EXPECT_EQ(storage.pages(), 2u);
  EXPECT_EQ(storage.bytes(), 3 * granule);
  ASSERT_EQ(cudaMemset(base, 0x7E, 3 * granule), cudaSuccess);
  std::uint8_t last = 0;
  ASSERT_EQ(cudaMemcpy(&last, base + 3 * granule - 1, 1, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(last, 0x7E);
  memory->unmap(range, 2 * granule, granule, second);
  memory->unmap(range, 0, 2 * granule, first);
  memory->unreserve(range, 64 * granule);
  EXPECT_EQ(storage.pages(), 0u);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  // Off when asked, and with stream-ordered pages.
  EXPECT_EQ(CudaStorage(CudaStorageOptions{0, 256, false, nullptr, false}).virtual_memory(),
            nullptr);
  EXPECT_EQ(CudaStorage(CudaStorageOptions{0, 256, true, nullptr, true}).virtual_memory(), nullptr);
}

TEST(CudaStorage, P2_TheArenaGrowsInOneMappedRangeAndARefusedMapIsOutOfMemory) {
  TAINTPOOL_REQUIRE_GPU();
  CudaStorage storage;
  if (storage.virtual_memory() == nullptr) {
    GTEST_SKIP() << "this device has no virtual memory management";
  }
  FaultInjectingStorage faulty(storage);
  ErrorGraph graph;
  MemoryManager memory(faulty, graph);
  const Allocation first = memory.allocate(100 * kMiB);
  const Allocation second = memory.allocate(300 * kMiB);
  std::byte* a = memory.resolve(first.whole()).data;
  const std::byte* b = memory.resolve(second.whole()).data;
  EXPECT_EQ(b, a + 100 * kMiB) << "the second buffer follows the first in one range";
  ASSERT_EQ(cudaMemset(a, 1, 400 * kMiB), cudaSuccess);
  faulty.fail_next(1);
  try {
    const Allocation refused = memory.allocate(2048 * kMiB);
    FAIL() << "the injected map failure did not fire";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::OutOfMemory);
    EXPECT_NE(std::string(error.what()).find("refused a map"), std::string::npos) << error.what();
  }
  memory.check_invariants();
  const Allocation after = memory.allocate(2048 * kMiB);
  EXPECT_TRUE(after);
  memory.check_invariants();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

} // namespace
} // namespace taintpool::cuda::testing
