// The allocation observer (allocation_observer.hpp, issue 15): what a
// MemoryManager tells an observer, in what order, and that the manager's
// behaviour is unchanged by one. Checked against a recording observer over
// HostStorage with and without virtual memory, so every page source the
// pools have (sliced pages, arena pages, arena chunks mapped into a
// reservation) is covered without a GPU; cuda::NvtxRegions is the same
// interface.
#include <taintpool/error_graph.hpp>
#include <taintpool/exception.hpp>
#include <taintpool/pool/allocation_observer.hpp>
#include <taintpool/pool/counting_storage.hpp>
#include <taintpool/pool/fault_injecting_storage.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>
#include <taintpool/pool/observed_storage.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

namespace taintpool {
namespace {

/// Keeps what it was told and checks the observer contract as it goes:
/// pages never overlap, an allocation lies in pages it was told of, a
/// page goes only when no allocation is in it, and every call names a
/// page or allocation it knows.
class RecordingObserver final : public AllocationObserver {
 public:
  void on_page_added(const std::byte* base, std::uint64_t size) override {
    if (refuse_pages_) {
      throw std::bad_alloc();
    }
    const auto at = reinterpret_cast<std::uintptr_t>(base);
    auto next = pages_.lower_bound(at);
    if (next != pages_.end() && next->first < at + size) {
      violations_.push_back("a page overlaps a later one");
    }
    if (next != pages_.begin() && std::prev(next)->first + std::prev(next)->second > at) {
      violations_.push_back("a page overlaps an earlier one");
    }
    pages_.emplace(at, size);
    ++pages_added_;
  }
  void on_page_removed(const std::byte* base, std::uint64_t size) noexcept override {
    const auto at = reinterpret_cast<std::uintptr_t>(base);
    const auto page = pages_.find(at);
    if (page == pages_.end() || page->second != size) {
      violations_.push_back("removed a page never added");
      return;
    }
    for (const auto& [id, live] : live_) {
      if (live.first >= at && live.first < at + size) {
        violations_.push_back("removed a page that holds a live allocation");
      }
    }
    pages_.erase(page);
    ++pages_removed_;
  }
  void on_bound(AllocationId allocation, const std::byte* data,
                std::uint64_t size) noexcept override {
    const auto at = reinterpret_cast<std::uintptr_t>(data);
    if (!covered(at, size)) {
      violations_.push_back("an allocation outside the pages");
    }
    if (!live_.emplace(allocation.raw(), std::make_pair(at, size)).second) {
      violations_.push_back("bound twice");
    }
    ++bound_;
  }
  void on_released(AllocationId allocation, const std::byte* data,
                   std::uint64_t size) noexcept override {
    const auto entry = live_.find(allocation.raw());
    if (entry == live_.end() ||
        entry->second != std::make_pair(reinterpret_cast<std::uintptr_t>(data), size)) {
      violations_.push_back("released what was not bound so");
      return;
    }
    live_.erase(entry);
    ++released_;
  }

  /// [at, at + size) lies in pages told of, adjacent ones included (an
  /// allocation may span chunks of one reservation).
  [[nodiscard]] bool covered(std::uintptr_t at, std::uint64_t size) const {
    auto page = pages_.upper_bound(at);
    if (page == pages_.begin()) {
      return false;
    }
    --page;
    const std::uintptr_t end = at + (size == 0 ? 1 : size);
    while (page != pages_.end() && page->first <= at) {
      const std::uintptr_t page_end = page->first + page->second;
      if (end <= page_end) {
        return true;
      }
      at = page_end;
      ++page;
    }
    return false;
  }

  std::map<std::uintptr_t, std::uint64_t> pages_;
  std::map<std::uint64_t, std::pair<std::uintptr_t, std::uint64_t>> live_;
  std::vector<const char*> violations_;
  std::uint64_t pages_added_ = 0;
  std::uint64_t pages_removed_ = 0;
  std::uint64_t bound_ = 0;
  std::uint64_t released_ = 0;
  bool refuse_pages_ = false;
  bool accepts_chunks_ = true;

  [[nodiscard]] bool accepts_mapped_chunks() const noexcept override { return accepts_chunks_; }
};

MemoryConfig observed(RecordingObserver& observer) {
  MemoryConfig config;
  config.observer = &observer;
  return config;
}

/// Sizes that reach every pool: the sliced ladder (up to 64 KiB) and the
/// arena, including ones larger than a 2 MiB chunk.
const std::vector<std::uint64_t> kSizes = {0,     1,     255,      256,      4097,
                                           65536, 65537, 1u << 20, 3u << 20, (5u << 20) + 7};

/// Three rounds of allocating every size and dropping every other
/// allocation; returns what is still held.
std::vector<Allocation> churn(MemoryManager& memory) {
  std::vector<Allocation> held;
  for (int round = 0; round < 3; ++round) {
    for (const std::uint64_t size : kSizes) {
      held.push_back(memory.allocate(size));
    }
    // Drop every other one: their slices are recycled in the next round.
    for (std::size_t i = 0; i < held.size(); i += 2) {
      held[i] = Allocation();
    }
    memory.sweep();
  }
  return held;
}

class Observer : public ::testing::TestWithParam<bool> {};

TEST_P(Observer, TellsEveryPageAndAllocationInOrderAndEndsBalanced) {
  HostStorage storage(HostStorageOptions{256, GetParam(), std::uint64_t{2} << 20});
  ErrorGraph graph;
  RecordingObserver observer;
  {
    MemoryManager memory(storage, graph, observed(observer));
    std::vector<Allocation> held = churn(memory);
    const MemoryStats stats = memory.stats();
    EXPECT_EQ(observer.live_.size(), stats.allocations);
    EXPECT_EQ(observer.bound_, 3 * kSizes.size());
    std::uint64_t page_bytes = 0;
    for (const auto& [base, size] : observer.pages_) {
      page_bytes += size;
    }
    EXPECT_EQ(page_bytes, stats.reserved); // Every byte of memory the pool holds, and only those.
    // Each live allocation is where the manager says it is.
    memory.for_each_allocation([&](const AllocationInfo& info) {
      const auto entry = observer.live_.find(info.id.raw());
      ASSERT_NE(entry, observer.live_.end());
      EXPECT_EQ(entry->second.first, reinterpret_cast<std::uintptr_t>(info.data));
      EXPECT_EQ(entry->second.second, info.size);
    });
    // Free pages and chunks go back; the page with a live allocation stays
    // until the destructor, which ends the allocation first.
    const Allocation survivor = memory.allocate(100);
    held.clear();
    memory.cleanup();
    EXPECT_GT(observer.pages_removed_, 0u);
    EXPECT_EQ(observer.pages_.size(), 1u);
    EXPECT_EQ(observer.live_.size(), 1u);
  }
  // The destructor ends every allocation, then gives every page back.
  EXPECT_TRUE(observer.violations_.empty()) << observer.violations_.front();
  EXPECT_TRUE(observer.live_.empty());
  EXPECT_TRUE(observer.pages_.empty());
  EXPECT_EQ(observer.released_, observer.bound_);
  EXPECT_EQ(observer.pages_removed_, observer.pages_added_);
}

TEST_P(Observer, P1_ResetEndsEveryAllocationBeforeItsPageGoes) {
  HostStorage storage(HostStorageOptions{256, GetParam(), std::uint64_t{2} << 20});
  ErrorGraph graph;
  RecordingObserver observer;
  MemoryManager memory(storage, graph, observed(observer));
  const Allocation kept = memory.allocate(100);
  const Allocation big = memory.allocate(std::uint64_t{3} << 20);
  memory.reset();
  EXPECT_TRUE(observer.violations_.empty()) << observer.violations_.front();
  EXPECT_TRUE(observer.live_.empty());
  EXPECT_TRUE(observer.pages_.empty());
  EXPECT_EQ(observer.released_, 2u);
}

TEST_P(Observer, ChangesNothingTheManagerDoes) {
  // The same calls with and without an observer: the same figures and the
  // same storage calls.
  HostStorage plain_storage(HostStorageOptions{256, GetParam(), std::uint64_t{2} << 20});
  HostStorage observed_storage(HostStorageOptions{256, GetParam(), std::uint64_t{2} << 20});
  CountingStorage plain_counted(plain_storage);
  CountingStorage observed_counted(observed_storage);
  ErrorGraph graph;
  RecordingObserver observer;
  MemoryManager plain(plain_counted, graph);
  MemoryManager watched(observed_counted, graph, observed(observer));
  const std::vector<Allocation> plain_held = churn(plain);
  const std::vector<Allocation> watched_held = churn(watched);
  const MemoryStats a = plain.stats();
  const MemoryStats b = watched.stats();
  EXPECT_EQ(a.in_use, b.in_use);
  EXPECT_EQ(a.reserved, b.reserved);
  EXPECT_EQ(a.pages, b.pages);
  EXPECT_EQ(a.allocations, b.allocations);
  EXPECT_EQ(a.largest_free_block, b.largest_free_block);
  EXPECT_EQ(plain_counted.counts().calls(), observed_counted.counts().calls());
  EXPECT_EQ(&watched.storage(), &observed_counted); // The caller's storage, not the adaptor.
  watched.check_invariants();
}

TEST_P(Observer, P3_AnObserverThatCannotRecordAPageIsOutOfMemoryAndLosesNothing) {
  HostStorage storage(HostStorageOptions{256, GetParam(), std::uint64_t{2} << 20});
  CountingStorage counted(storage);
  ErrorGraph graph;
  RecordingObserver observer;
  MemoryManager memory(counted, graph, observed(observer));
  observer.refuse_pages_ = true;
  try {
    static_cast<void>(memory.allocate(100));
    FAIL() << "allocate succeeded with no page";
  } catch (const Exception& error) {
    EXPECT_EQ(error.error().kind(), ErrorKind::OutOfMemory);
  }
  EXPECT_EQ(counted.counts().live_bytes, 0u); // The page the observer refused went back.
  EXPECT_EQ(memory.stats().reserved, 0u);
  observer.refuse_pages_ = false;
  const Allocation works = memory.allocate(100);
  EXPECT_EQ(observer.bound_, 1u);
  memory.check_invariants();
}

INSTANTIATE_TEST_SUITE_P(Storage, Observer, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "VirtualMemory" : "Pages";
                         });

TEST(ObservedStorage, ReportsPagesAndMappedChunksButNotAddressSpace) {
  HostStorage storage(HostStorageOptions{256, true, std::uint64_t{2} << 20});
  RecordingObserver observer;
  ObservedStorage adaptor(storage, observer);
  const StorageHandle page = adaptor.allocate(4096);
  EXPECT_EQ(observer.pages_.size(), 1u);
  VirtualMemory* memory = adaptor.virtual_memory();
  ASSERT_EQ(memory, &adaptor);
  const std::uint64_t granule = memory->granularity();
  const StorageHandle reservation = memory->reserve(4 * granule);
  EXPECT_EQ(observer.pages_.size(), 1u); // Address space is no memory.
  const StorageHandle chunk = memory->map(reservation, granule, granule);
  ASSERT_EQ(observer.pages_.size(), 2u);
  EXPECT_EQ(observer.pages_.count(reinterpret_cast<std::uintptr_t>(adaptor.resolve(reservation)) +
                                  granule),
            1u);
  memory->unmap(reservation, granule, granule, chunk);
  memory->unreserve(reservation, 4 * granule);
  adaptor.deallocate(page, 4096);
  EXPECT_TRUE(observer.pages_.empty());
  EXPECT_TRUE(observer.violations_.empty());
  EXPECT_EQ(adaptor.name(), storage.name());
  EXPECT_EQ(adaptor.alignment(), storage.alignment());
}

TEST(ObservedStorage, AnObserverThatRefusesMappedChunksGetsNoVirtualMemoryAndOnlyPages) {
  // cuda::NvtxRegions refuses them (compute-sanitizer takes no cuMemMap
  // chunk as a heap): the arena then grows by pages, each reported as one.
  HostStorage storage(HostStorageOptions{256, true, std::uint64_t{2} << 20});
  RecordingObserver observer;
  observer.accepts_chunks_ = false;
  ObservedStorage adaptor(storage, observer);
  EXPECT_EQ(adaptor.virtual_memory(), nullptr);
  CountingStorage counted(storage);
  ErrorGraph graph;
  {
    MemoryManager memory(counted, graph, observed(observer));
    const std::vector<Allocation> held = churn(memory); // Arena sizes up to 5 MiB.
    memory.check_invariants();
    EXPECT_EQ(counted.counts().reserves, 0u) << "the arena reserved address space";
    EXPECT_EQ(counted.counts().maps, 0u) << "the arena mapped a chunk";
    EXPECT_EQ(observer.pages_added_, counted.counts().allocations);
  }
  EXPECT_TRUE(observer.pages_.empty());
  EXPECT_TRUE(observer.violations_.empty());
}

TEST(ObservedStorage, OffersVirtualMemoryExactlyWhenTheInnerStorageDoes) {
  HostStorage storage(HostStorageOptions{256, false, std::uint64_t{2} << 20});
  RecordingObserver observer;
  ObservedStorage adaptor(storage, observer);
  EXPECT_EQ(adaptor.virtual_memory(), nullptr);
}

} // namespace
} // namespace taintpool
