// Pins P1 at each point an allocation ends for good, and R4: a failure's
// state lives exactly as long as some live allocation carries it.
//
//   * the manager discovers a dropped allocation at its next call, and clears
//     it there — not before (a handle may be dropped on any thread), not
//     later;
//   * a new allocation on an old slice, a split's remainder, a merged slice
//     all start clean;
//   * reset() and the manager's destruction tombstone live allocations:
//     cleared, and their surviving handles see NotFound;
//   * with every handle dropped and a sweep, the graph is empty.
#include <taintpool/exception.hpp>

#include <gtest/gtest.h>

#include "pool_fixture.hpp"

namespace taintpool {
namespace {

using testing::PoolTest;

TEST_F(PoolTest, P1_DroppingTheLastHandleClearsTheTaintAtTheManagersNextCall) {
  Allocation buffer = memory->allocate(512);
  const FailureId failure = taint_whole(buffer);
  Allocation copy = buffer;

  buffer.reset();
  memory->sweep();
  EXPECT_TRUE(graph.contains(failure)) << "a copy still holds the allocation";

  copy.reset();
  EXPECT_TRUE(graph.contains(failure)) << "nothing is cleared until the manager is called";
  EXPECT_EQ(graph.tags(failure), 1u);

  (void)memory->stats(); // Any call discovers the release.
  EXPECT_FALSE(graph.contains(failure)) << "its last carrier is gone";
}

TEST_F(PoolTest, P1_ANewAllocationOnAReusedSliceStartsClean) {
  Allocation first = memory->allocate(512);
  const std::byte* address = memory->resolve(first.whole()).data;
  taint_whole(first);
  first.reset();

  Allocation second = memory->allocate(512);
  ASSERT_EQ(memory->resolve(second.whole()).data, address) << "the slice was reused";
  EXPECT_EQ(memory->failure(second.whole()), std::nullopt);
  EXPECT_TRUE(graph.empty());
}

TEST_F(PoolTest, P1_ASplitRemainderAndAMergedSliceStartClean) {
  // Fill a page with two slices, taint both, free both: they merge back.
  Allocation left = memory->allocate(1024);
  Allocation right = memory->allocate(1024);
  taint_whole(left);
  taint_whole(right);
  left.reset();
  right.reset();
  memory->sweep();
  EXPECT_TRUE(graph.empty());

  // The merged slice is split again, differently: every piece is clean.
  std::vector<Allocation> pieces;
  for (int index = 0; index < 8; ++index) {
    pieces.push_back(memory->allocate(256));
    EXPECT_EQ(memory->failure(pieces.back().whole()), std::nullopt);
  }
  memory->check_invariants(); // Free slices carry no taint.
}

TEST_F(PoolTest, P1_ResetTombstonesLiveAllocationsAndTheirHandlesSeeNotFound) {
  Allocation buffer = memory->allocate(100);
  Allocation big = memory->allocate(200 << 10); // the arena
  const FailureId failure = taint_whole(buffer);
  taint_whole(big);

  memory->reset();
  EXPECT_FALSE(graph.contains(failure));
  EXPECT_TRUE(graph.empty());
  EXPECT_EQ(memory->stats().reserved, 0u) << "every page went back";
  EXPECT_FALSE(memory->contains(buffer.id()));
  try {
    (void)memory->failure(buffer.whole());
    FAIL() << "a binding of a tombstoned allocation must be NotFound";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::NotFound);
  }

  // The handles outlive their slices safely, and the memory is usable again.
  Allocation after = memory->allocate(100);
  buffer.reset();
  big.reset();
  memory->sweep();
  EXPECT_TRUE(memory->contains(after.id()));
}

TEST_F(PoolTest, P1_DestroyingTheManagerClearsEveryTaintAndHandlesOutliveIt) {
  Allocation survivor = memory->allocate(300);
  taint_whole(survivor);
  Allocation copy = survivor;
  memory.reset();
  EXPECT_TRUE(graph.empty());
  EXPECT_EQ(storage.live_bytes(), 0u) << "every page went back to storage";
  copy.reset();     // Dropping handles after the manager is gone is safe,
  survivor.reset(); // and the last one frees the slice record (ASan checks).
}

TEST_F(PoolTest, P1_CleanupGivesFreePagesBackAndKeepsLiveOnes) {
  Allocation kept = memory->allocate(500);
  std::vector<Allocation> dropped;
  for (int index = 0; index < 40; ++index) {
    dropped.push_back(memory->allocate(1000));
  }
  dropped.push_back(memory->allocate(100 << 10));
  const std::uint64_t before = memory->stats().reserved;
  dropped.clear();
  memory->cleanup();
  const MemoryStats after = memory->stats();
  EXPECT_LT(after.reserved, before);
  EXPECT_EQ(after.pages, 1u) << "only the page holding the live allocation stays";
  EXPECT_TRUE(memory->contains(kept.id()));
}

TEST_F(PoolTest, R4_WithEveryHandleDroppedAndASweepTheGraphIsEmpty) {
  std::vector<Allocation> buffers;
  for (std::uint64_t size : {0u, 1u, 255u, 256u, 3000u, 20000u, 300000u}) {
    buffers.push_back(memory->allocate(size));
  }
  const FailureId shared = fail("shared");
  for (const Allocation& buffer : buffers) {
    if (buffer.size() > 0) {
      taint_whole(buffer);
      memory->taint(buffer.bind(0, 1), shared);
    }
  }
  graph.prune(shared);
  EXPECT_FALSE(graph.empty());
  buffers.clear();
  memory->sweep();
  EXPECT_TRUE(graph.empty());
  EXPECT_EQ(memory->stats().allocations, 0u);
}

TEST_F(PoolTest, R1_AFailureIsTaggedOncePerAllocationThatCarriesIt) {
  Allocation a = memory->allocate(1000);
  Allocation b = memory->allocate(1000);
  const FailureId failure = fail();
  memory->taint(a.bind(0, 10), failure);
  memory->taint(a.bind(100, 10), failure);
  memory->taint(b.bind(5, 5), failure);
  EXPECT_EQ(graph.tags(failure), 2u);
  check_refcounts(graph, memory->carriers());
  memory->written(a.whole());
  EXPECT_EQ(graph.tags(failure), 1u);
  b.reset();
  memory->sweep();
  EXPECT_FALSE(graph.contains(failure));
}

} // namespace
} // namespace taintpool
