// Pins: ByteRange (DESIGN.md §3.1) — the half-open range every claim, write
// and read is made of. overlaps/touches/contains/intersect agree with their
// per-byte definitions on every small range (RapidCheck), the checked
// constructors throw exactly on bad input and never otherwise, and equality,
// order and printing are what the rest of the code relies on.
//
// Why: T1–T3 are only as right as this algebra. "Overlaps" must mean "shares
// a byte" (an empty range shares none, so a zero-sized binding trips nothing),
// "touches" must mean "no byte between them" (that is what T5 fuses), and
// of/sized are the only doors a bad range could come in by.
#include <taintpool/byte_range.hpp>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

namespace taintpool {
namespace {

/// Small offsets, so a per-byte loop can define each relation.
constexpr std::uint64_t kSmall = 12;

rc::Gen<ByteRange> small_range() {
  return rc::gen::exec([] {
    const auto begin = *rc::gen::inRange<std::uint64_t>(0, kSmall + 1);
    const auto end = *rc::gen::inRange<std::uint64_t>(begin, kSmall + 1);
    return ByteRange::of(begin, end);
  });
}

bool holds_byte(ByteRange range, std::uint64_t byte) {
  return range.begin() <= byte && byte < range.end();
}

/// Offsets anywhere, biased towards the edges of the 64-bit space.
rc::Gen<std::uint64_t> any_offset() {
  return rc::gen::oneOf(rc::gen::inRange<std::uint64_t>(0, 16),
                        rc::gen::map(rc::gen::inRange<std::uint64_t>(0, 16),
                                     [](std::uint64_t down) { return UINT64_MAX - down; }),
                        rc::gen::arbitrary<std::uint64_t>());
}

// ---- the per-byte definitions --------------------------------------------------

RC_GTEST_PROP(ByteRange, T3_OverlapsMeansTheyShareAByte, ()) {
  const ByteRange a = *small_range();
  const ByteRange b = *small_range();
  bool shared = false;
  for (std::uint64_t byte = 0; byte <= kSmall; ++byte) {
    shared = shared || (holds_byte(a, byte) && holds_byte(b, byte));
  }
  RC_ASSERT(a.overlaps(b) == shared);
  RC_ASSERT(b.overlaps(a) == shared);
}

RC_GTEST_PROP(ByteRange, T5_TouchesMeansNoByteLiesBetweenThem, ()) {
  // As closed sets of positions (a boundary is a position), they meet.
  const ByteRange a = *small_range();
  const ByteRange b = *small_range();
  bool meet = false;
  for (std::uint64_t point = 0; point <= kSmall; ++point) {
    meet =
        meet || (a.begin() <= point && point <= a.end() && b.begin() <= point && point <= b.end());
  }
  RC_ASSERT(a.touches(b) == meet);
  RC_ASSERT(b.touches(a) == meet);
  if (a.overlaps(b)) {
    RC_ASSERT(a.touches(b));
  }
}

RC_GTEST_PROP(ByteRange, ContainsMeansEveryByteOfTheOtherIsInside, ()) {
  const ByteRange a = *small_range();
  const ByteRange b = *small_range();
  bool every = true;
  for (std::uint64_t byte = 0; byte <= kSmall; ++byte) {
    every = every && (!holds_byte(b, byte) || holds_byte(a, byte));
  }
  RC_ASSERT(a.contains(b) == every);
}

RC_GTEST_PROP(ByteRange, IntersectHoldsExactlyTheSharedBytes, ()) {
  const ByteRange a = *small_range();
  const ByteRange b = *small_range();
  const ByteRange both = a.intersect(b);
  for (std::uint64_t byte = 0; byte <= kSmall; ++byte) {
    RC_ASSERT(holds_byte(both, byte) == (holds_byte(a, byte) && holds_byte(b, byte)));
  }
  RC_ASSERT(both == b.intersect(a));
  RC_ASSERT(both.empty() == !a.overlaps(b));
  if (both.empty()) {
    RC_ASSERT(both == ByteRange()); // the canonical empty range, [0, 0)
  }
}

RC_GTEST_PROP(ByteRange, SizeAndEmptyCountTheBytes, ()) {
  const ByteRange a = *small_range();
  std::uint64_t bytes = 0;
  for (std::uint64_t byte = 0; byte <= kSmall; ++byte) {
    bytes += holds_byte(a, byte) ? 1u : 0u;
  }
  RC_ASSERT(a.size() == bytes);
  RC_ASSERT(a.empty() == (bytes == 0));
}

// ---- the checked constructors ----------------------------------------------------

RC_GTEST_PROP(ByteRange, OfThrowsExactlyWhenBeginIsAfterEnd, ()) {
  const std::uint64_t begin = *any_offset();
  const std::uint64_t end = *any_offset();
  if (begin > end) {
    RC_ASSERT_THROWS_AS(static_cast<void>(ByteRange::of(begin, end)), std::invalid_argument);
  } else {
    const ByteRange range = ByteRange::of(begin, end);
    RC_ASSERT(range.begin() == begin);
    RC_ASSERT(range.end() == end);
  }
}

RC_GTEST_PROP(ByteRange, SizedThrowsExactlyWhenTheEndWouldPass2To64, ()) {
  const std::uint64_t offset = *any_offset();
  const std::uint64_t size = *any_offset();
  const bool overflows = offset + size < offset; // unsigned addition wrapped around
  if (overflows) {
    RC_ASSERT_THROWS_AS(static_cast<void>(ByteRange::sized(offset, size)), std::overflow_error);
  } else {
    const ByteRange range = ByteRange::sized(offset, size);
    RC_ASSERT(range.begin() == offset);
    RC_ASSERT(range.size() == size);
  }
}

TEST(ByteRange, OfNamesBothBoundsWhenItRejectsAnInvertedRange) {
  try {
    static_cast<void>(ByteRange::of(10, 5));
    ADD_FAILURE() << "[10, 5) was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("begins after it ends"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("begin 10 > end 5"), std::string::npos)
        << error.what();
  }
}

TEST(ByteRange, SizedNamesOffsetAndSizeWhenItRejectsAnOverflow) {
  try {
    static_cast<void>(ByteRange::sized(UINT64_MAX - 3, 4));
    ADD_FAILURE() << "an end past 2^64 - 1 was accepted";
  } catch (const std::overflow_error& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("overflows 64 bits"), std::string::npos) << what;
    EXPECT_NE(what.find("offset " + std::to_string(UINT64_MAX - 3)), std::string::npos) << what;
    EXPECT_NE(what.find("size 4"), std::string::npos) << what;
  }
}

TEST(ByteRange, TheLastRepresentableRangesAreAccepted) {
  EXPECT_EQ(ByteRange::sized(UINT64_MAX - 3, 3).end(), UINT64_MAX);
  EXPECT_TRUE(ByteRange::sized(UINT64_MAX, 0).empty());
  EXPECT_EQ(ByteRange::of(0, UINT64_MAX).size(), UINT64_MAX);
  EXPECT_TRUE(ByteRange::of(UINT64_MAX, UINT64_MAX).empty());
}

TEST(ByteRange, TheCheckedConstructorsWorkAtCompileTime) {
  constexpr ByteRange range = ByteRange::sized(8, 8);
  static_assert(range == ByteRange::of(8, 16));
  static_assert(range.overlaps(ByteRange::of(15, 20)));
  static_assert(!range.overlaps(ByteRange::of(16, 20)));
  EXPECT_EQ(range.size(), 8u);
}

// ---- value semantics ---------------------------------------------------------------

TEST(ByteRange, EmptyRangesAtDifferentPositionsAreDifferentValues) {
  EXPECT_NE(ByteRange::of(3, 3), ByteRange::of(5, 5));
  EXPECT_EQ(ByteRange(), ByteRange::of(0, 0));
  EXPECT_FALSE(ByteRange::of(5, 5).overlaps(ByteRange::of(0, 10)))
      << "an empty range shares no byte even with a range around it";
  EXPECT_TRUE(ByteRange::of(0, 10).contains(ByteRange::of(50, 50)))
      << "every range contains the empty range";
}

RC_GTEST_PROP(ByteRange, OrderIsByBeginThenEnd, ()) {
  const ByteRange a = *small_range();
  const ByteRange b = *small_range();
  const bool less = a.begin() < b.begin() || (a.begin() == b.begin() && a.end() < b.end());
  RC_ASSERT((a < b) == less);
  RC_ASSERT((a == b) == (a.begin() == b.begin() && a.end() == b.end()));
}

TEST(ByteRange, PrintsAsHalfOpenInterval) {
  EXPECT_EQ(to_string(ByteRange::of(3, 7)), "[3, 7)");
  std::ostringstream out;
  out << ByteRange::of(0, 0);
  EXPECT_EQ(out.str(), "[0, 0)");
}

} // namespace
} // namespace taintpool
