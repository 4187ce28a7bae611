// Pins the pool's steady state as a number: once warmed up, reserve + bind +
// release (allocate, drop, discover) performs zero heap allocations, in
// every pool — slice records are recycled, the id table has grown, pages are
// reused. A timing would be noisy; a count is exact. Its own executable: it
// replaces the global operator new (testing/src/replace_new.cpp).
#include <taintpool/exception.hpp>
#include <taintpool/pool/storage.hpp>
#include <taintpool/testing/heap_allocations.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "pool_fixture.hpp"

namespace taintpool {
namespace {

using testing::allocations_during;
using testing::allocations_refusing;
using testing::PoolTest;

TEST_F(PoolTest, AWarmReserveBindReleaseCycleAllocatesNothing) {
  for (const std::uint64_t size :
       {std::uint64_t{0}, std::uint64_t{300}, std::uint64_t{8000}, std::uint64_t{200000}}) {
    auto cycle = [&] {
      for (int round = 0; round < 64; ++round) {
        Allocation allocation = memory->allocate(size);
      }
      memory->sweep();
    };
    cycle(); // warm-up: pages, slice records, the id table
    EXPECT_EQ(allocations_during(cycle), 0u) << "size " << size;
  }
}

TEST_F(PoolTest, AWarmChurnOfMixedSizesAllocatesNothing) {
  std::vector<Allocation> live;
  live.reserve(64);
  // The same sequence each time, from an empty pool: once the pages it
  // needs exist, it needs nothing else.
  auto churn = [&] {
    std::uint64_t state = 1;
    for (int step = 0; step < 2000; ++step) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const std::uint64_t size = (state >> 33) % 3000;
      if (live.size() < 48) {
        live.push_back(memory->allocate(size));
      } else {
        live[static_cast<std::size_t>(size % live.size())] = memory->allocate(size);
      }
    }
    live.clear();
    memory->sweep();
  };
  for (int warm = 0; warm < 3; ++warm) {
    churn();
  }
  EXPECT_EQ(allocations_during(churn), 0u);
}

TEST_F(PoolTest, AWarmArenaChurnOnTwoLanesAllocatesNothing) {
  std::vector<Allocation> live;
  live.reserve(32);
  // Mixed large sizes on lanes 0 and 3: splits, merges, best fit, no growth
  // once warm (P4 keeps each lane to its own arena).
  auto churn = [&] {
    std::uint64_t state = 7;
    for (int step = 0; step < 500; ++step) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const std::uint64_t size = (20u << 10) + (state >> 33) % (400u << 10);
      const std::uint32_t lane = (state >> 20) % 2 == 0 ? 0 : 3;
      if (live.size() < 24) {
        live.push_back(memory->allocate(size, lane));
      } else {
        live[static_cast<std::size_t>(size % live.size())] = memory->allocate(size, lane);
      }
    }
    live.clear();
    memory->sweep();
  };
  for (int warm = 0; warm < 3; ++warm) {
    churn();
  }
  EXPECT_EQ(allocations_during(churn), 0u);
}

TEST_F(PoolTest, TaintAndReleaseOnABoundSliceAllocateNothingForOneClaim) {
  Allocation buffer = memory->allocate(4096);
  const Binding whole = buffer.whole();
  auto scope = [&] {
    for (int round = 0; round < 100; ++round) {
      const FailureId provisional = graph.insert(Error::torn_down());
      memory->taint(whole, provisional);
      memory->written(whole);
      graph.prune(provisional);
    }
  };
  scope();
  EXPECT_EQ(allocations_during(scope), 0u);
}

// reset() empties the allocation table in place, as restart() does: a
// round that holds 2000 allocations and then resets the manager allocates,
// once the first round has grown the table, only the pages it takes again
// from storage — exactly what the same round with restart() allocates,
// round after round. Before, reset() freed the table's slots, and every
// round grew them again from 8 slots (ten more allocations a round here;
// pool_fuzzer's inputs that reset kept a block, fuzz/ROUNDS.md, round 55).
// The handles outlive the reset (tombstoned, P1) and go after it, so both
// ways of emptying the table are exercised: the reset's own, with live
// entries, and the next round's discovery of the tombstoned records.
TEST_F(PoolTest, P1_AResetKeepsTheAllocationTableSoLaterRoundsAllocateOnlyTheirPages) {
  std::vector<Allocation> live;
  live.reserve(2000);
  const auto round = [&](bool restart) {
    for (int count = 0; count < 2000; ++count) {
      live.push_back(memory->allocate(300));
    }
    if (restart) {
      memory->restart();
    } else {
      memory->reset();
    }
    live.clear();
  };
  round(false); // warm-up: the table's slots, the slice records
  const std::uint64_t first_reset = allocations_during([&] { round(false); });
  const std::uint64_t second_reset = allocations_during([&] { round(false); });
  const std::uint64_t restarted = allocations_during([&] { round(true); });
  const std::uint64_t reset_after_restart = allocations_during([&] { round(false); });
  EXPECT_EQ(first_reset, second_reset);
  EXPECT_EQ(first_reset, restarted) << "reset() keeps the table's slots, as restart() does";
  EXPECT_EQ(first_reset, reset_after_restart);
  memory->sweep();
}

// Each refusal is its words in one string sized once (the Error's message)
// and the Exception's what() in one more; nothing else. Before, the same
// refusals cost 6, 5, 3, 7 and 4 (operator+ chains, a temporary per piece,
// and the runtime_error's own copy of the text): the pool fuzzer refuses
// on purpose several times an input (issue 13, twenty-ninth round). The
// words themselves are pinned in refusal_text_test.cpp.
TEST_F(PoolTest, P3_EachRefusalOfTheManagerAllocatesItsMessageAndItsWhatTextOnly) {
  Allocation buffer = memory->allocate(100);
  const Binding past{buffer.id(), ByteRange::of(40, 101)};
  Allocation gone = memory->allocate(100);
  const Binding stale = gone.whole();
  gone.reset();
  memory->sweep();
  ErrorGraph other_graph;
  MemoryManager other(storage, other_graph, testing::small_ladder());
  Allocation theirs = other.allocate(8);
  const Binding foreign = theirs.whole();
  EXPECT_EQ(allocations_refusing<Exception>([&] { (void)memory->allocate((1 << 20) + 1); }), 2u)
      << "BufferTooBig";
  EXPECT_EQ(allocations_refusing<Exception>([&] { memory->written(past); }), 2u)
      << "InvalidBinding, past the end";
  EXPECT_EQ(allocations_refusing<Exception>([&] { (void)memory->failure(stale); }), 2u)
      << "NotFound";
  EXPECT_EQ(allocations_refusing<Exception>([&] { memory->written(foreign); }), 2u)
      << "InvalidBinding, another manager's";
  // std::invalid_argument copies its text into its own buffer, so the text
  // is written on the stack and that copy is the only allocation (it was
  // two, the text in a std::string first: issue 13, forty-second round).
  EXPECT_EQ(allocations_refusing<std::invalid_argument>(
                [&] { (void)memory->allocate(8, MemoryManager::max_lanes); }),
            1u)
      << "a lane past the last";
}

// An injected fault is its text, kept in the StorageExhausted itself; an
// out-of-memory refusal is that fault, its message (the storage's name
// appended in place) and the Exception's what() — beside the record the
// pool makes for its page before it asks the storage (so that a yes is
// never followed by a refusal). Before: 2 and 6 — the runtime_error's own
// copy of the fault's text, and the adaptor's name returned as a heap
// string ("host (fault-injecting)" is past the short-string buffer). The
// pool fuzzer's faults refuse on purpose (issue 13, thirtieth round); the
// words are pinned in refusal_text_test.cpp.
TEST_F(PoolTest, P3_AnInjectedFaultAllocatesItsTextOnlyAndAnOutOfMemoryRefusalTwoMore) {
  storage.fail_next(1);
  EXPECT_EQ(allocations_refusing<StorageExhausted>([&] { (void)storage.allocate(4096); }), 1u)
      << "a scheduled fault";
  // A sliced pool's first page, refused: lane 0 is open (the 3000-byte
  // allocation's pool has its page), the 1 KiB pool has none to give back.
  Allocation held = memory->allocate(3000);
  storage.fail_next(1);
  EXPECT_EQ(allocations_refusing<Exception>([&] { (void)memory->allocate(500); }), 4u)
      << "out of memory: the page's record, the scheduled fault, the message, what()";
}

// R1's carriers into a list the caller keeps: once it has room, a check
// allocates nothing for it (the pool fuzzer lists them every full check:
// about 3% of a run, issue 13, thirtieth round), and it lists what
// carriers() returns.
TEST_F(PoolTest, R1_CarriersIntoAKeptListAllocateNothingOnceWarmAndAreTheCarriers) {
  std::vector<Allocation> live;
  for (int index = 0; index < 6; ++index) {
    live.push_back(memory->allocate(100));
  }
  const FailureId failure = fail();
  for (std::size_t index = 0; index < live.size(); index += 2) {
    memory->taint(live[index].whole(), failure);
  }
  std::vector<const Taint*> kept;
  memory->carriers(kept);  // sizes the list
  kept.push_back(nullptr); // stale: carriers(into) must clear it
  EXPECT_EQ(allocations_during([&] { memory->carriers(kept); }), 0u);
  std::vector<const Taint*> returned = memory->carriers();
  std::sort(kept.begin(), kept.end());
  std::sort(returned.begin(), returned.end());
  EXPECT_EQ(kept, returned);
  EXPECT_EQ(kept.size(), 3u) << "the three tainted allocations, nothing else";
  graph.prune(failure);
}

TEST(ExceptionAllocations, P3_AnExceptionAllocatesItsWhatTextOnceAndNothingForAnEmptyMessage) {
  Error worded = Error::not_found("allocation 12345 no longer exists, and this is long");
  EXPECT_EQ(allocations_during([&] { const Exception error(std::move(worded)); }), 1u)
      << "one buffer for what(), the message moved in";
  EXPECT_EQ(allocations_during([] { const Exception error(Error::torn_down()); }), 0u)
      << "\"torn down\" fits the string's own buffer, and runtime_error holds no text";
}

} // namespace
} // namespace taintpool
