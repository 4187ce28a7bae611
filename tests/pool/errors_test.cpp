// Pins P3: bad input gets a clear error and loses nothing. Size 0 is valid;
// a size no pool can hold is BufferTooBig; a storage failure is OutOfMemory
// with a breakdown a person can act on — and only after the free pages
// were given back and the request retried; bindings past the end or to an
// allocation that is gone are InvalidBinding / NotFound. After every one of
// them the manager and the graph are exactly as they were.
#include <taintpool/exception.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "pool_fixture.hpp"

namespace taintpool {
namespace {

using testing::PoolTest;

/// What `action` is refused with (StorageExhausted's text); a failure of
/// the test, and no text, when it is not refused.
template <class Action>
std::string refusal_text(Action&& action) {
  try {
    action();
  } catch (const StorageExhausted& refused) {
    return refused.what();
  }
  ADD_FAILURE() << "expected StorageExhausted";
  return {};
}

/// What a failing call must leave unchanged.
struct Snapshot {
  MemoryStats stats;
  std::size_t failures;
  bool operator==(const Snapshot& other) const {
    return stats.in_use == other.stats.in_use && stats.reserved == other.stats.reserved &&
           stats.padding == other.stats.padding && stats.allocations == other.stats.allocations &&
           stats.pages == other.stats.pages && failures == other.failures;
  }
};

template <class Fn>
ErrorKind kind_thrown(Fn&& fn) {
  try {
    fn();
  } catch (const Exception& error) {
    return error.kind();
  }
  ADD_FAILURE() << "no taintpool::Exception was thrown";
  return ErrorKind::Generic;
}

TEST_F(PoolTest, P3_SizeZeroIsValidAndHoldsNoBytes) {
  Allocation empty = memory->allocate(0);
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(empty.whole().range.size(), 0u);
  EXPECT_EQ(memory->failure(empty.whole()), std::nullopt);
  const FailureId failure = fail();
  memory->taint(empty.whole(), failure); // claims nothing
  EXPECT_EQ(graph.tags(failure), 0u);
  graph.prune(failure);
  EXPECT_EQ(kind_thrown([&] { (void)empty.bind(0, 1); }), ErrorKind::InvalidBinding);
}

TEST_F(PoolTest, P3_ASizeNoPoolCanHoldIsBufferTooBigAndChangesNothing) {
  Allocation held = memory->allocate(5000);
  const Snapshot before{memory->stats(), graph.size()};
  try {
    (void)memory->allocate((1 << 20) + 1);
    FAIL() << "expected BufferTooBig";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BufferTooBig);
    const std::string message = error.what();
    EXPECT_NE(message.find("1048577 bytes"), std::string::npos) << message;
    EXPECT_NE(message.find("1048576"), std::string::npos) << "names the limit: " << message;
  }
  EXPECT_EQ(kind_thrown([&] { (void)memory->allocate(UINT64_MAX); }), ErrorKind::BufferTooBig);
  EXPECT_TRUE((Snapshot{memory->stats(), graph.size()} == before));
}

TEST_F(PoolTest, P3_AStorageFailureIsOutOfMemoryWithABreakdown) {
  Allocation held = memory->allocate(3000);
  taint_whole(held);
  const Snapshot before{memory->stats(), graph.size()};
  storage.fail_next(1); // no free page to give back, so no retry
  try {
    (void)memory->allocate(300 << 10);
    FAIL() << "expected OutOfMemory";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::OutOfMemory);
    const std::string message = error.what();
    for (const char* part : {"cannot allocate 307200 bytes", "in use 3000 bytes",
                             "reserved 65536 bytes", "largest free block", "injected fault"}) {
      EXPECT_NE(message.find(part), std::string::npos) << "missing '" << part << "': " << message;
    }
  }
  EXPECT_TRUE((Snapshot{memory->stats(), graph.size()} == before));
  memory->check_invariants();
  // Nothing was lost: the next request succeeds.
  Allocation after = memory->allocate(300 << 10);
  EXPECT_EQ(after.size(), 300u << 10);
}

TEST_F(PoolTest, P3_OutOfMemoryGivesFreePagesBackAndRetriesBeforeGivingUp) {
  {
    // Eight pages of the 8 KiB pool, then all of it free (cached, idle).
    std::vector<Allocation> small;
    for (int index = 0; index < 64; ++index) {
      small.push_back(memory->allocate(1024));
    }
  }
  memory->sweep();
  const std::uint64_t idle = memory->stats().reserved;
  ASSERT_EQ(idle, 64u << 10);
  // Room for what is cached but not one byte more: the arena's first chunk
  // (64 KiB) only fits once the cached pages went back.
  storage.limit_capacity(idle);
  Allocation fits = memory->allocate(40 << 10);
  EXPECT_EQ(fits.size(), 40u << 10) << "the idle pages were given back to make room";
  EXPECT_EQ(memory->stats().reserved, 64u << 10);
  EXPECT_EQ(memory->stats().pages, 1u);
  memory->check_invariants();
}

TEST_F(PoolTest, P3_OutOfMemoryAfterTheGiveBackSaysWhatWasGivenBack) {
  {
    std::vector<Allocation> small;
    for (int index = 0; index < 16; ++index) {
      small.push_back(memory->allocate(1024)); // two 8 KiB pages, then idle
    }
  }
  Allocation held = memory->allocate(3000); // one 64 KiB page, in use
  memory->sweep();
  storage.limit_capacity(storage.live_bytes() + (16 << 10)); // 16 KiB more at most
  try {
    (void)memory->allocate(100 << 10); // needs a 128 KiB chunk: refused twice
    FAIL() << "expected OutOfMemory";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::OutOfMemory);
    const std::string message = error.what();
    EXPECT_NE(message.find("gave back 16384 bytes in 2 pages of cached free memory first"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("in use 3000 bytes, reserved 65536 bytes in 1 pages"), std::string::npos)
        << "the breakdown is taken after the give-back: " << message;
  }
  memory->check_invariants();
}

// The out-of-memory message and the injected fault's are appended into one
// buffer (issue 13, twenty-first round), not built by operator+: every
// word, figure and separator must be what they always were, whole.
TEST_F(PoolTest, P3_TheOutOfMemoryMessageIsWordForWordTheBreakdownAndTheRefusal) {
  Allocation held = memory->allocate(3000); // one 64 KiB page, in use
  storage.limit_capacity(storage.live_bytes() + (16 << 10));
  try {
    (void)memory->allocate(100 << 10); // a 128 KiB chunk, nothing cached to give back
    FAIL() << "expected OutOfMemory";
  } catch (const Exception& error) {
    EXPECT_EQ(std::string(error.what()),
              "out of memory: cannot allocate 102400 bytes from " + storage.name() +
                  ": in use 3000 bytes, reserved 65536 bytes in 1 pages, largest free block "
                  "62464 bytes; gave back 0 bytes in 0 pages of cached free memory first (" +
                  host.name() +
                  ": injected fault: the capacity limit of 81920 bytes (65536 live) refused a "
                  "map of 131072 bytes)");
  }
  storage.limit_capacity(std::nullopt);
  storage.fail_next(1);
  EXPECT_EQ(refusal_text([&] { (void)storage.allocate(4096); }),
            host.name() + ": injected fault: a scheduled failure refused a page of 4096 bytes");
  storage.fail_randomly(7, 1);
  EXPECT_EQ(refusal_text([&] { (void)storage.reserve(64 << 10); }),
            host.name() + ": injected fault: a random failure (1 in 1) refused a "
                          "reservation of 65536 bytes");
  storage.stop_failing_randomly();
}

TEST_F(PoolTest, P3_OutOfMemoryGivesBackEveryLanesFreeMemory) {
  {
    Allocation other_lane = memory->allocate(300 << 10, 5); // lane 5's arena: 320 KiB
  }
  memory->sweep();
  storage.limit_capacity(storage.live_bytes()); // nothing more
  Allocation here = memory->allocate(300 << 10, 0);
  EXPECT_EQ(here.size(), 300u << 10) << "lane 5's free chunk went back and lane 0 got it";
  EXPECT_EQ(memory->stats().reserved, 320u << 10);
}

TEST_F(PoolTest, P3_ABindingPastTheEndIsInvalidBindingAndChangesNothing) {
  Allocation buffer = memory->allocate(100);
  const FailureId failure = fail();
  const Snapshot before{memory->stats(), graph.size()};
  EXPECT_EQ(kind_thrown([&] { (void)buffer.bind(50, 51); }), ErrorKind::InvalidBinding);
  const Binding forged{buffer.id(), ByteRange::of(0, 101)};
  EXPECT_EQ(kind_thrown([&] { memory->taint(forged, failure); }), ErrorKind::InvalidBinding);
  EXPECT_EQ(kind_thrown([&] { memory->written(forged); }), ErrorKind::InvalidBinding);
  EXPECT_EQ(kind_thrown([&] { (void)memory->resolve(forged); }), ErrorKind::InvalidBinding);
  EXPECT_EQ(graph.tags(failure), 0u);
  EXPECT_TRUE((Snapshot{memory->stats(), graph.size()} == before));
  graph.prune(failure);
  EXPECT_THROW((void)buffer.bind(UINT64_MAX, 2), std::overflow_error);
}

TEST_F(PoolTest, P3_ABindingToAnAllocationThatIsGoneIsNotFound) {
  Allocation buffer = memory->allocate(100);
  const Binding stale = buffer.whole();
  buffer.reset();
  try {
    (void)memory->failure(stale);
    FAIL() << "expected NotFound";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::NotFound);
    EXPECT_NE(std::string(error.what()).find(to_string(stale.allocation)), std::string::npos);
  }
  // Its slice may be reused: the new allocation has a new id, and the old
  // binding still finds nothing.
  Allocation reuse = memory->allocate(100);
  EXPECT_NE(reuse.id(), stale.allocation);
  EXPECT_EQ(kind_thrown([&] { (void)memory->failure(stale); }), ErrorKind::NotFound);
  const Binding never{AllocationId::from_raw(999999), ByteRange::of(0, 1)};
  EXPECT_EQ(kind_thrown([&] { memory->written(never); }), ErrorKind::NotFound);
}

// allocate() ends the allocations dropped since the last call first but
// erases their table entries on its way out (a cache-miss hiding measure):
// on every way out, a throw included, so no ended allocation stays findable.
TEST_F(PoolTest, P1_AllocationsEndedByAnAllocateThatThrowsAreGoneFromTheTable) {
  std::vector<Binding> ended;
  {
    std::vector<Allocation> batch;
    for (int index = 0; index < 20; ++index) { // more than one allocate defers
      batch.push_back(memory->allocate(100 + static_cast<std::uint64_t>(index)));
      ended.push_back(batch.back().whole());
    }
  }
  EXPECT_EQ(kind_thrown([&] { (void)memory->allocate((1 << 20) + 1); }), ErrorKind::BufferTooBig);
  for (const Binding& binding : ended) {
    EXPECT_FALSE(memory->contains(binding.allocation));
    EXPECT_EQ(kind_thrown([&] { (void)memory->failure(binding); }), ErrorKind::NotFound);
  }
  EXPECT_EQ(memory->stats().allocations, 0u);
  memory->check_invariants();
  // And on the way out of one that succeeds, with the table reused at once.
  Allocation again = memory->allocate(100);
  const Binding dropped = again.whole();
  again.reset();
  Allocation next = memory->allocate(100);
  EXPECT_FALSE(memory->contains(dropped.allocation));
  EXPECT_TRUE(memory->contains(next.id()));
  memory->check_invariants();
}

TEST_F(PoolTest, P3_TaintingWithADeadFailureIsAContractViolationThatChangesNothing) {
  Allocation buffer = memory->allocate(100);
  const FailureId gone = fail();
  graph.prune(gone);
  EXPECT_THROW(memory->taint(buffer.whole(), gone), std::logic_error);
  EXPECT_EQ(memory->failure(buffer.whole()), std::nullopt);
}

TEST(AllocationHandle, AnEmptyHandleHasNoIdAndBindsNothing) {
  Allocation empty;
  EXPECT_FALSE(empty);
  EXPECT_THROW((void)empty.id(), std::logic_error);
  EXPECT_THROW((void)empty.whole(), std::logic_error);
  Allocation moved = std::move(empty);
  EXPECT_FALSE(moved);
}

TEST_F(PoolTest, P3_SharingAnIdThatNeverExistedIsNotFoundAndADroppedOneGivesNoHandle) {
  const AllocationId never = AllocationId::from_raw(0xABCDEF);
  try {
    static_cast<void>(memory->share(never));
    ADD_FAILURE() << "an id never minted was shared";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::NotFound);
    EXPECT_NE(std::string(error.what()).find("no longer exists"), std::string::npos)
        << error.what();
  }
  EXPECT_FALSE(memory->info(never).has_value()) << "info of an id never minted is nullopt";
  Allocation kept = memory->allocate(64);
  const AllocationId id = kept.id();
  EXPECT_TRUE(memory->info(id).has_value());
  Allocation shared = memory->share(id);
  ASSERT_TRUE(shared);
  EXPECT_EQ(shared.id(), id);
  EXPECT_EQ(shared.size(), 64u);
}

} // namespace
} // namespace taintpool
