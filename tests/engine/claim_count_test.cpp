// Pins: R1 as a number — Taint::claim_count() is the number of distinct
// failures with a claim (each holds one tag), for an inline claim, a spilled
// one, a failure split over many segments, and more distinct failures than
// the count's stack buffer remembers (32; past it the count looks back over
// the earlier segments) — and it never allocates.
//
// Why: the fuzzers ask claim_count() after every op for every touched
// allocation; when it sorted a scratch vector it was a third of
// taint_fuzzer's allocations (issue 13). A count that stays exact but
// allocates would slow them again silently; a faster count that drops a
// repeat or counts one twice would break R1's check. Lives in the
// allocation-counting executable (testing/src/replace_new.cpp); no assertion
// macro runs inside a measured region.
#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/taint.hpp>
#include <taintpool/testing/heap_allocations.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace taintpool {
namespace {

using testing::allocations_during;

/// `count` failures, each claiming `copies` disjoint, non-touching ranges of
/// one taint, interleaved: failure i's copy c is bytes [10 (c n + i), +5).
/// So every failure is split over `copies` segments, and its repeats come
/// after every other failure's first segment.
struct Interleaved {
  ErrorGraph graph;
  std::vector<FailureId> failures;
  Taint taint;

  Interleaved(std::size_t count, std::size_t copies) {
    for (std::size_t at = 0; at < count; ++at) {
      failures.push_back(graph.insert(Error::launch("f")));
    }
    for (std::size_t copy = 0; copy < copies; ++copy) {
      for (std::size_t at = 0; at < count; ++at) {
        const std::uint64_t begin = 10 * (copy * count + at);
        taint.taint(ByteRange::sized(begin, 5), failures[at], graph);
      }
    }
  }
  Interleaved(const Interleaved&) = delete;
  Interleaved& operator=(const Interleaved&) = delete;
  ~Interleaved() { taint.clear(graph); }

  /// Segments of the spilled array, counted through the public visit.
  [[nodiscard]] std::size_t segments() const {
    std::size_t seen = 0;
    taint.for_each_claim([&](FailureId, ByteRange) { ++seen; });
    return seen;
  }
};

TEST(ClaimCount, R1_ACleanTaintCountsNoClaim) {
  const Taint taint{};
  EXPECT_EQ(taint.claim_count(), 0u);
}

TEST(ClaimCount, R1_OneFailureOverOneRangeCountsOneWhetherInlineOrNot) {
  ErrorGraph graph;
  const FailureId failure = graph.insert(Error::launch("f"));
  Taint taint;
  taint.taint(ByteRange::of(0, 100), failure, graph);
  EXPECT_EQ(taint.is_spilled(), !Taint::inline_claims) << "T6";
  EXPECT_EQ(taint.claim_count(), 1u);
  taint.clear(graph);
}

TEST(ClaimCount, R1_AFailureSplitIntoSegmentsCountsOnce) {
  ErrorGraph graph;
  const FailureId failure = graph.insert(Error::launch("f"));
  Taint taint;
  taint.taint(ByteRange::of(0, 100), failure, graph);
  taint.written(ByteRange::of(20, 30), graph);
  taint.written(ByteRange::of(60, 70), graph);
  ASSERT_TRUE(taint.is_spilled());
  EXPECT_EQ(taint.claim_count(), 1u) << "three segments, one failure, one tag";
  taint.clear(graph);
}

TEST(ClaimCount, R1_SpilledFailuresWithRepeatedSegmentsCountOncePerFailure) {
  Interleaved three(3, 4);
  ASSERT_TRUE(three.taint.is_spilled());
  ASSERT_EQ(three.segments(), 12u);
  EXPECT_EQ(three.taint.claim_count(), 3u);
  // A write that takes one failure's every byte takes its count with it.
  three.taint.written(ByteRange::of(0, 10 * 12), three.graph);
  EXPECT_EQ(three.taint.claim_count(), 0u);
}

TEST(ClaimCount, R1_MoreDistinctFailuresThanTheStackBufferAreStillCountedOnceEach) {
  // 32 is the count's buffer; 31, 32, 33 and 40 cross its edge, and the
  // repeats of the failures past it exercise the look-back.
  for (const std::size_t count : {31u, 32u, 33u, 40u, 70u}) {
    Interleaved many(count, 3);
    ASSERT_EQ(many.segments(), 3 * count);
    EXPECT_EQ(many.taint.claim_count(), count) << count << " failures, 3 segments each";
    EXPECT_EQ(many.taint.claim_count(), many.graph.size()) << "one tag per carrier";
  }
}

TEST(ClaimCount, R1_CountingNeverAllocatesInlineOrSpilledOrPastTheBuffer) {
  ErrorGraph graph;
  const FailureId failure = graph.insert(Error::launch("f"));
  Taint inline_claim;
  inline_claim.taint(ByteRange::of(0, 100), failure, graph);
  Interleaved few(3, 4);
  Interleaved many(40, 3);
  std::size_t counted = 0;
  const std::uint64_t allocations = allocations_during([&] {
    for (int round = 0; round < 100; ++round) {
      counted += inline_claim.claim_count();
      counted += few.taint.claim_count();
      counted += many.taint.claim_count();
    }
  });
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(counted, 100u * (1 + 3 + 40)) << "the loop counted, so the zero means something";
  inline_claim.clear(graph);
}

} // namespace
} // namespace taintpool
