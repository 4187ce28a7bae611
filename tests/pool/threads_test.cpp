// Pins the one cross-thread promise of the pool: handles may be copied and
// dropped on any thread while the manager works on its own. A drop touches
// only the slice's count and the lock-free release inbox; the manager
// discovers releases on its thread. Run under ThreadSanitizer by the tsan
// preset (.ci/run), where a data race fails the test.
#include <taintpool/pool/allocation_observer.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <unordered_map>
#include <vector>

#include "pool_fixture.hpp"

namespace taintpool {
namespace {

using testing::PoolTest;

TEST_F(PoolTest, P1_HandlesDroppedOnOtherThreadsAreDiscoveredAndCleared) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 200;
  std::vector<std::thread> droppers;
  std::vector<std::vector<Allocation>> batches(kThreads);
  std::atomic<int> ready{0};

  for (int round = 0; round < kRounds; ++round) {
    // The manager's thread allocates and taints a batch per dropper...
    for (auto& batch : batches) {
      for (int index = 0; index < 8; ++index) {
        batch.push_back(memory->allocate(64 + static_cast<std::uint64_t>(index) * 100));
        if (index % 2 == 0) {
          taint_whole(batch.back());
        }
      }
    }
    // ...which other threads copy and drop, while it keeps allocating.
    ready = 0;
    for (int thread = 0; thread < kThreads; ++thread) {
      droppers.emplace_back([&, thread] {
        std::vector<Allocation> mine = std::move(batches[static_cast<std::size_t>(thread)]);
        std::vector<Allocation> copies = mine;
        ++ready;
        mine.clear();
        copies.clear();
      });
    }
    std::vector<Allocation> meanwhile;
    for (int index = 0; index < 16; ++index) {
      meanwhile.push_back(memory->allocate(128));
    }
    for (std::thread& dropper : droppers) {
      dropper.join();
    }
    droppers.clear();
    for (auto& batch : batches) {
      batch.clear();
    }
  }
  memory->sweep();
  EXPECT_TRUE(graph.empty()) << "every tainted allocation was dropped and discovered";
  EXPECT_EQ(memory->stats().allocations, 0u);
}

TEST_F(PoolTest, P1_CopiesSharedAcrossThreadsKeepTheAllocationAliveUntilTheLastDrop) {
  Allocation buffer = memory->allocate(512);
  const FailureId failure = taint_whole(buffer);
  std::vector<std::thread> holders;
  std::atomic<bool> release{false};
  for (int thread = 0; thread < 4; ++thread) {
    holders.emplace_back([copy = buffer, &release]() mutable {
      while (!release.load()) {
        std::this_thread::yield();
      }
      copy.reset();
    });
  }
  buffer.reset();
  memory->sweep();
  EXPECT_TRUE(graph.contains(failure)) << "the threads' copies still hold it";
  release = true;
  for (std::thread& holder : holders) {
    holder.join();
  }
  memory->sweep();
  EXPECT_FALSE(graph.contains(failure));
}

/// Counts, per allocation id, how often the manager said it was bound and
/// how often ended. Called on the manager's thread only.
class EndCounter final : public AllocationObserver {
 public:
  void on_page_added(const std::byte*, std::uint64_t) override {}
  void on_page_removed(const std::byte*, std::uint64_t) noexcept override {}
  void on_bound(AllocationId allocation, const std::byte*, std::uint64_t) noexcept override {
    ++bound[allocation.raw()];
  }
  void on_released(AllocationId allocation, const std::byte*, std::uint64_t) noexcept override {
    ++ended[allocation.raw()];
  }

  std::unordered_map<std::uint64_t, int> bound;
  std::unordered_map<std::uint64_t, int> ended;
};

// Several threads drop batches of up to thousands at once while the manager
// allocates, drops on its own thread and drains: the release inbox
// (detail/slice.hpp) must hand each ended allocation to the manager once —
// none lost, none ended twice — and under ThreadSanitizer a missing
// ordering between a dropper and the manager fails the test. Any new
// hand-over (issue 12 item 4 tried arrays; bench/RESULTS.md) must pass it.
TEST(PoolThreads, P1_EverySliceDroppedFromManyThreadsAtOnceIsEndedExactlyOnce) {
  HostStorage host{testing::small_granules()};
  ErrorGraph graph;
  EndCounter counter;
  MemoryConfig config = testing::small_ladder();
  config.observer = &counter;
  MemoryManager memory(host, graph, config);
  constexpr int kThreads = 4;
  constexpr int kRounds = 24;
  std::uint64_t made = 0;
  for (int round = 0; round < kRounds; ++round) {
    // Batches of 16 to 2048 a thread, doubling, three times over: a
    // hand-over sized by the batches it sees is resized while drops land.
    const int batch_size = 16 << (round % 8);
    std::vector<std::vector<Allocation>> batches(kThreads);
    for (auto& batch : batches) {
      for (int index = 0; index < batch_size; ++index) {
        batch.push_back(memory.allocate(64 + static_cast<std::uint64_t>(index % 7) * 200));
        ++made;
      }
    }
    std::atomic<int> done{0};
    std::vector<std::thread> droppers;
    for (int thread = 0; thread < kThreads; ++thread) {
      droppers.emplace_back(
          [&, mine = std::move(batches[static_cast<std::size_t>(thread)])]() mutable {
            // A copy of every other handle: both must go before the end.
            std::vector<Allocation> copies;
            for (std::size_t index = 0; index < mine.size(); index += 2) {
              copies.push_back(mine[index]);
            }
            mine.clear();
            copies.clear();
            ++done;
          });
    }
    // The manager allocates, drops on its own thread and drains while the
    // droppers push.
    std::vector<Allocation> meanwhile;
    while (done.load() < kThreads) {
      meanwhile.push_back(memory.allocate(128));
      ++made;
      if (meanwhile.size() == 50) {
        meanwhile.clear();
        memory.sweep();
      }
    }
    for (std::thread& dropper : droppers) {
      dropper.join();
    }
    meanwhile.clear();
    memory.sweep();
    EXPECT_EQ(memory.stats().allocations, 0u) << "round " << round;
    memory.check_invariants();
  }
  EXPECT_EQ(counter.bound.size(), made);
  EXPECT_EQ(counter.ended.size(), made) << "every allocation was ended";
  int twice = 0;
  for (const auto& [allocation, times] : counter.ended) {
    twice += static_cast<int>(times != 1 || counter.bound.count(allocation) == 0);
  }
  EXPECT_EQ(twice, 0) << "no allocation was ended twice or without being bound";
  EXPECT_TRUE(graph.empty());
}

} // namespace
} // namespace taintpool
