// Pins the pool's refusals word for word (P3): what a person reads when a
// size is too big, a binding reaches past its allocation, names one that is
// gone or one another manager made, or a lane is past the last — and that
// an Exception's what() is exactly to_string(error()) for every kind. The
// messages are built in one reserved string each, and Exception keeps its
// own text (issue 13, twenty-ninth round); these expectations were written
// against the operator+ chains that came before and pass on both, so the
// rewrite changed no word.
#include <taintpool/exception.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>

#include "pool_fixture.hpp"

namespace taintpool {
namespace {

using testing::PoolTest;

/// what() of the taintpool::Exception `fn` throws; a failure of the test,
/// and no text, when it throws none.
template <class Fn>
std::string exception_text(Fn&& fn) {
  try {
    fn();
  } catch (const Exception& error) {
    EXPECT_EQ(std::string(error.what()), to_string(error.error()))
        << "P3: what() is to_string(error())";
    return error.what();
  }
  ADD_FAILURE() << "no taintpool::Exception was thrown";
  return {};
}

TEST(ExceptionText, P3_WhatIsToStringOfItsErrorForEveryKindWithAndWithoutAMessage) {
  for (std::uint8_t raw = 0; raw <= static_cast<std::uint8_t>(ErrorKind::NeverWritten); ++raw) {
    const auto kind = static_cast<ErrorKind>(raw);
    const Error worded{kind, "a message longer than any short-string buffer holds"};
    const Exception with(worded);
    EXPECT_EQ(std::string(with.what()),
              std::string(name(kind)) + ": a message longer than any short-string buffer holds");
    EXPECT_EQ(with.error(), worded);
    EXPECT_EQ(with.kind(), kind);
    const Exception bare(Error{kind, std::string()});
    EXPECT_EQ(std::string(bare.what()), std::string(name(kind)));
    EXPECT_EQ(std::string(static_cast<const std::exception&>(bare).what()), std::string(name(kind)))
        << "what() through the base is the same text";
  }
}

TEST(ExceptionText, P3_ACopiedExceptionSaysTheSameWordsAsItsOriginal) {
  const Exception original(Error::not_found("allocation 3 no longer exists"));
  const Exception copy = original; // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(std::string(copy.what()), "not found: allocation 3 no longer exists");
  EXPECT_EQ(copy.error(), original.error());
}

TEST_F(PoolTest, P3_ASizeNoPoolHoldsIsRefusedInTheseWords) {
  EXPECT_EQ(exception_text([&] { (void)memory->allocate((1 << 20) + 1); }),
            "buffer too big: cannot allocate 1048577 bytes: no pool holds more than 1048576 "
            "bytes (MemoryConfig::max_allocation)");
}

TEST_F(PoolTest, P3_ABindingPastTheEndIsRefusedInTheseWords) {
  Allocation buffer = memory->allocate(100);
  const Binding past{buffer.id(), ByteRange::of(40, 101)};
  EXPECT_EQ(exception_text([&] { memory->written(past); }),
            "invalid binding: bytes [40, 101) reach past the end of " + to_string(buffer.id()) +
                " (size 100)");
}

TEST_F(PoolTest, P3_ABindingToAnAllocationThatIsGoneIsRefusedInTheseWords) {
  Allocation buffer = memory->allocate(100);
  const Binding stale = buffer.whole();
  buffer.reset();
  EXPECT_EQ(exception_text([&] { (void)memory->failure(stale); }),
            "not found: " + to_string(stale.allocation) +
                " no longer exists: its last handle was dropped, or the memory was reset");
}

TEST_F(PoolTest, P3_ABindingAnotherManagerMadeIsRefusedInTheseWords) {
  ErrorGraph other_graph;
  MemoryManager other(storage, other_graph, testing::small_ladder());
  Allocation theirs = other.allocate(8);
  const Binding foreign = theirs.whole();
  const std::uint32_t space = allocation_space(foreign.allocation);
  ASSERT_NE(space, memory->id_space());
  EXPECT_EQ(exception_text([&] { memory->written(foreign); }),
            "invalid binding: " + to_string(foreign.allocation) +
                " was made by another memory manager (memory " + std::to_string(space) +
                "), not this one (memory " + std::to_string(memory->id_space()) +
                "): a binding is used only on the device that made its buffer");
}

TEST_F(PoolTest, P4_ALanePastTheLastIsRefusedInTheseWords) {
  const std::uint32_t past = MemoryManager::max_lanes;
  try {
    (void)memory->allocate(8, past);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()),
              "MemoryManager: lane " + std::to_string(past) + " is not one of the " +
                  std::to_string(MemoryManager::max_lanes) + " lanes a manager serves (0 to " +
                  std::to_string(MemoryManager::max_lanes - 1) + ")");
  }
}

// The lane refusal is written into a fixed stack buffer (issue 13,
// forty-second round): the widest lane number, ten digits, must still come
// out whole, and a lane far past the last is refused as one just past it.
TEST_F(PoolTest, P4_TheWidestLaneNumberIsRefusedInTheseWordsWhole) {
  for (const std::uint32_t lane : {std::uint32_t{1000}, std::uint32_t{4294967295}}) {
    try {
      (void)memory->allocate(8, lane);
      FAIL() << "expected std::invalid_argument for lane " << lane;
    } catch (const std::invalid_argument& error) {
      EXPECT_EQ(std::string(error.what()), "MemoryManager: lane " + std::to_string(lane) +
                                               " is not one of the 64 lanes a "
                                               "manager serves (0 to 63)");
    }
  }
  EXPECT_EQ(memory->stats().allocations, 0u) << "P4: a refused lane allocates nothing";
}

// The storage's name is appended in place now (Storage::append_name, issue
// 13, thirtieth round), not returned and copied: these words are literal,
// not storage.name(), so a name() and an append_name() that drifted apart
// would show here.
TEST_F(PoolTest, P3_AFaultInjectingStorageNamesItselfInTheseWordsEitherWay) {
  EXPECT_EQ(storage.name(), "host (fault-injecting)");
  std::string text = "from ";
  storage.append_name(text);
  EXPECT_EQ(text, "from host (fault-injecting)");
  FaultInjectingStorage twice(static_cast<Storage&>(storage)); // over it, not a copy of it
  EXPECT_EQ(twice.name(), "host (fault-injecting) (fault-injecting)");
}

TEST_F(PoolTest, P3_AnOutOfMemoryRefusalAndItsFaultAreWordedInTheseWords) {
  Allocation held = memory->allocate(3000); // one 64 KiB page, in use
  storage.limit_capacity(storage.live_bytes() + (16 << 10));
  EXPECT_EQ(exception_text([&] { (void)memory->allocate(100 << 10); }),
            "out of memory: cannot allocate 102400 bytes from host (fault-injecting): in use "
            "3000 bytes, reserved 65536 bytes in 1 pages, largest free block 62464 bytes; gave "
            "back 0 bytes in 0 pages of cached free memory first (host: injected fault: the "
            "capacity limit of 81920 bytes (65536 live) refused a map of 131072 bytes)");
  storage.limit_capacity(std::nullopt);
  storage.fail_next(1);
  try {
    (void)storage.allocate(4096);
    FAIL() << "expected StorageExhausted";
  } catch (const StorageExhausted& error) {
    EXPECT_EQ(std::string(error.what()),
              "host: injected fault: a scheduled failure refused a page of 4096 bytes");
    EXPECT_EQ(std::string(static_cast<const std::exception&>(error).what()),
              std::string(error.what()))
        << "what() through the base is the same text";
    const StorageExhausted copy = error; // NOLINT(performance-unnecessary-copy-initialization)
    EXPECT_EQ(std::string(copy.what()), std::string(error.what()));
  }
}

} // namespace
} // namespace taintpool
