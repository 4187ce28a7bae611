// Pins P4 (lane-ordered reuse, proposed): memory an allocation of lane L
// released is handed only to allocations of lane L until it goes back to
// storage; lanes are made on first use, at most MemoryManager::max_lanes;
// lanes share the allocation table, the stats and the graph; bound bytes and
// allocation info say the lane.
//
// Why: a stream-ordered runtime (issue 11) maps each stream to a lane. Memory
// freed in one stream's order may still be read by that stream's queued work,
// so it must not reach another stream before the storage has it back (which
// waits for the device) — the bug class behind pytorch#188655.
#include <taintpool/exception.hpp>
#include <taintpool/pool/counting_storage.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "pool_fixture.hpp"

namespace taintpool {
namespace {

using testing::PoolTest;

const std::byte* where(MemoryManager& memory, const Allocation& allocation) {
  return memory.resolve(allocation.whole()).data;
}

TEST_F(PoolTest, P4_AReleasedRangeIsReusedByItsOwnLaneAndNoOther) {
  for (const std::uint64_t size :
       {std::uint64_t{300}, std::uint64_t{5000}, std::uint64_t{100} << 10}) {
    Allocation first = memory->allocate(size, 1);
    const std::byte* released = where(*memory, first);
    first.reset();
    const Allocation other = memory->allocate(size, 2);
    EXPECT_NE(where(*memory, other), released)
        << "lane 2 was handed bytes lane 1 released (" << size << " bytes)";
    const Allocation again = memory->allocate(size, 1);
    EXPECT_EQ(where(*memory, again), released) << "lane 1 reuses what it released";
  }
}

TEST_F(PoolTest, P4_ALaneWithNothingFreeOfItsOwnGetsNewMemoryRatherThanAnotherLanes) {
  CountingStorage counting(host);
  ErrorGraph own_graph;
  MemoryManager lanes(counting, own_graph, testing::small_ladder());
  {
    std::vector<Allocation> busy;
    for (int index = 0; index < 4; ++index) {
      busy.push_back(lanes.allocate(100 << 10, 3));
    }
  }
  lanes.sweep();
  const std::uint64_t before = counting.counts().calls();
  const MemoryStats cached = lanes.stats();
  const Allocation here = lanes.allocate(100 << 10, 4);
  EXPECT_GT(counting.counts().calls(), before) << "lane 4 asked the storage";
  EXPECT_GT(lanes.stats().reserved, cached.reserved);
  // Once lane 3's memory went back to storage, it is anyone's.
  lanes.cleanup();
  EXPECT_LT(lanes.stats().reserved, cached.reserved + (128u << 10));
  lanes.check_invariants();
}

TEST_F(PoolTest, P4_LanesAreMadeOnFirstUseAndOnePastTheLastIsABadArgument) {
  EXPECT_EQ(memory->lane_count(), 0u);
  const Allocation zero = memory->allocate(100);
  const Allocation last = memory->allocate(100, MemoryManager::max_lanes - 1);
  EXPECT_EQ(memory->lane_count(), 2u);
  const MemoryStats before = memory->stats();
  try {
    (void)memory->allocate(100, MemoryManager::max_lanes);
    FAIL() << "a lane past the last was served";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("lane 64 is not one of the 64 lanes"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW((void)memory->allocate(0, 1000), std::invalid_argument);
  EXPECT_EQ(memory->lane_count(), 2u);
  const MemoryStats after = memory->stats();
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(after.reserved, before.reserved);
  // A size no pool holds is BufferTooBig whatever the lane.
  try {
    (void)memory->allocate(std::uint64_t{1} << 30, MemoryManager::max_lanes);
    FAIL() << "expected BufferTooBig";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BufferTooBig);
  }
}

TEST_F(PoolTest, P4_BoundBytesAndAllocationInfoSayTheLane) {
  const Allocation a = memory->allocate(100, 5);
  const Allocation b = memory->allocate(300 << 10, 7);
  EXPECT_EQ(memory->resolve(a.whole()).lane, 5u);
  EXPECT_EQ(memory->resolve(b.whole()).lane, 7u);
  EXPECT_EQ(memory->info(a.id())->lane, 5u);
  EXPECT_EQ(memory->info(b.id())->pool, 2u) << "the arena";
  EXPECT_EQ(memory->info(b.id())->lane, 7u);
}

TEST_F(PoolTest, P4_LanesShareTheAllocationTableTheStatsAndTheGraph) {
  const Allocation a = memory->allocate(1000, 0);
  const Allocation b = memory->allocate(1000, 1);
  const Allocation c = memory->allocate(1000, 2);
  EXPECT_EQ(b.id().raw(), a.id().raw() + 1) << "one sequence of ids";
  EXPECT_EQ(c.id().raw(), b.id().raw() + 1);
  EXPECT_EQ(memory->stats().in_use, 3000u) << "one set of figures";
  const FailureId failure = taint_whole(b);
  EXPECT_EQ(graph.tags(failure), 1u) << "one graph";
  EXPECT_EQ(memory->failure(b.whole()), failure);
  memory->written(b.whole());
  EXPECT_FALSE(graph.contains(failure));
}

} // namespace
} // namespace taintpool
