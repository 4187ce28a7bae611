// Pins the one cross-thread promise of the pool: handles may be copied and
// dropped on any thread while the manager works on its own. A drop touches
// only the slice's count and the lock-free release inbox; the manager
// discovers releases on its thread. Run under ThreadSanitizer by the tsan
// preset (.ci/run), where a data race fails the test.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
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

} // namespace
} // namespace taintpool
