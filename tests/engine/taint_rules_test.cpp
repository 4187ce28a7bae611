// Pins: the Taint rules of DESIGN.md §3.2, one test per sentence of each rule
// — T1 taint (set, never add; others lose the bytes; tag once), T2 written
// (exactly the bytes covered; untag at once), T3 failure/failures (a shared
// byte, never a touch; all of them), T4 clear, T5 shape (sorted, disjoint,
// fused), T6 inline storage (24 bytes; one range inline, anything else
// spilled, and back).
//
// Why: the taint is the carrier side of every refcount and the answer to
// every read. Each test names the rule it proves, so a failure points at the
// sentence of the design that broke. check_invariants() (T5) runs after every
// scenario through Scenario's destructor, and every scenario ends with the
// graph's tag counts compared against the carriers (R1).
#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/taint.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "engine_snapshot.hpp"

namespace taintpool {
namespace {

using testing::Claims;
using testing::claims_of;

ByteRange r(std::uint64_t begin, std::uint64_t end) {
  return ByteRange::of(begin, end);
}

/// A graph and three carriers. On the way out it checks T5 and R1 on
/// whatever the test left, then clears every carrier (a Taint must not be
/// destroyed holding claims) and checks that the graph emptied (R4).
struct Scenario {
  ErrorGraph graph;
  Taint a;
  Taint b;
  Taint c;

  Scenario() = default;
  Scenario(const Scenario&) = delete;
  Scenario& operator=(const Scenario&) = delete;
  ~Scenario() {
    const std::array<const Taint*, 3> carriers{&a, &b, &c};
    for (const Taint* taint : carriers) {
      EXPECT_NO_THROW(taint->check_invariants());
    }
    std::vector<FailureId> held; // inserted by the test, never tagged
    graph.for_each([&](FailureId id, const Error&, std::uint64_t tags) {
      if (tags == 0) {
        held.push_back(id);
      }
    });
    EXPECT_NO_THROW(check_refcounts(graph, carriers, held));
    a.clear(graph);
    b.clear(graph);
    c.clear(graph);
    for (FailureId id : held) {
      graph.prune(id);
    }
    EXPECT_TRUE(graph.empty()) << "R4: clearing every carrier empties the graph";
  }
};

FailureId fail(ErrorGraph& graph, const char* what = "launch") {
  return graph.insert(Error::launch(what));
}

// ---- T1 taint ----------------------------------------------------------------

TEST(Taint, T1_AnEmptyRangeClaimsNothingAndTagsNothing) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(7, 7), f, graph);
  EXPECT_TRUE(a.is_clean());
  EXPECT_EQ(graph.tags(f), 0u);
}

TEST(Taint, T1_TheFirstClaimOfAFailureTagsItOnce) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(0, 10), f, graph);
  EXPECT_EQ(graph.tags(f), 1u);
  a.taint(r(20, 30), f, graph); // a second range of the same failure
  a.taint(r(40, 50), f, graph);
  EXPECT_EQ(graph.tags(f), 1u) << "one tag per carrier, however many ranges";
  EXPECT_EQ(a.claim_count(), 1u);
}

TEST(Taint, T1_EachCarrierHoldsItsOwnTag) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(0, 10), f, graph);
  b.taint(r(0, 10), f, graph);
  EXPECT_EQ(graph.tags(f), 2u);
  a.written(r(0, 10), graph);
  EXPECT_EQ(graph.tags(f), 1u);
  EXPECT_TRUE(graph.contains(f)) << "b still carries it";
}

TEST(Taint, T1_RetaintingBytesTheFailureAlreadyClaimsChangesNothing) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(0, 100), f, graph);
  const Claims before = claims_of(a);
  a.taint(r(0, 100), f, graph);
  a.taint(r(10, 20), f, graph);
  EXPECT_EQ(claims_of(a), before) << "set, never add";
  EXPECT_EQ(graph.tags(f), 1u);
}

TEST(Taint, T1_ANewFailureSplitsAnotherFailuresClaimItLandsInside) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId old_failure = fail(graph, "old");
  const FailureId new_failure = fail(graph, "new");
  a.taint(r(0, 100), old_failure, graph);
  a.taint(r(40, 60), new_failure, graph);
  EXPECT_EQ(claims_of(a),
            (Claims{{old_failure, r(0, 40)}, {new_failure, r(40, 60)}, {old_failure, r(60, 100)}}));
  EXPECT_EQ(graph.tags(old_failure), 1u) << "split in two, still one carrier";
  EXPECT_EQ(graph.tags(new_failure), 1u);
}

TEST(Taint, T1_AnotherFailureLeftWithNoBytesDropsAndIsUntaggedAtOnce) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId old_failure = fail(graph, "old");
  const FailureId new_failure = fail(graph, "new");
  a.taint(r(10, 20), old_failure, graph);
  a.taint(r(30, 40), old_failure, graph);
  a.taint(r(0, 50), new_failure, graph);
  EXPECT_FALSE(a.carries(old_failure));
  EXPECT_FALSE(graph.contains(old_failure)) << "its last carrier let go: the node is gone";
  EXPECT_EQ(claims_of(a), (Claims{{new_failure, r(0, 50)}}));
}

TEST(Taint, T1_AnotherFailureKeepsItsTagWhileItHoldsABytePartlyOverwritten) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId old_failure = fail(graph, "old");
  const FailureId new_failure = fail(graph, "new");
  a.taint(r(0, 50), old_failure, graph);
  a.taint(r(49, 100), new_failure, graph);
  EXPECT_EQ(claims_of(a), (Claims{{old_failure, r(0, 49)}, {new_failure, r(49, 100)}}));
  EXPECT_EQ(graph.tags(old_failure), 1u);
}

TEST(Taint, T1_ATaintOnOneAllocationLeavesAnotherUntouched) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId old_failure = fail(graph, "old");
  const FailureId new_failure = fail(graph, "new");
  a.taint(r(0, 10), old_failure, graph);
  b.taint(r(0, 10), old_failure, graph);
  a.taint(r(0, 10), new_failure, graph);
  EXPECT_EQ(claims_of(b), (Claims{{old_failure, r(0, 10)}}));
  EXPECT_EQ(graph.tags(old_failure), 1u);
}

TEST(Taint, T1_ClaimsFromSeveralFailuresAreAllReplacedByOneWideTaint) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f1 = fail(graph, "1");
  const FailureId f2 = fail(graph, "2");
  const FailureId f3 = fail(graph, "3");
  const FailureId wide = fail(graph, "wide");
  a.taint(r(0, 10), f1, graph);
  a.taint(r(10, 20), f2, graph);
  a.taint(r(25, 30), f3, graph);
  a.taint(r(5, 28), wide, graph);
  EXPECT_EQ(claims_of(a), (Claims{{f1, r(0, 5)}, {wide, r(5, 28)}, {f3, r(28, 30)}}));
  EXPECT_FALSE(graph.contains(f2));
  EXPECT_EQ(graph.tags(f1), 1u);
  EXPECT_EQ(graph.tags(f3), 1u);
}

// ---- T2 written --------------------------------------------------------------

TEST(Taint, T2_APartialWriteReleasesOnlyTheBytesItCovers) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(0, 100), f, graph);
  a.written(r(30, 70), graph);
  EXPECT_EQ(claims_of(a), (Claims{{f, r(0, 30)}, {f, r(70, 100)}}));
  EXPECT_EQ(a.failure(r(29, 30)), f);
  EXPECT_EQ(a.failure(r(30, 70)), std::nullopt);
  EXPECT_EQ(a.failure(r(70, 71)), f);
}

TEST(Taint, T2_AWriteAtEitherEdgeTrimsTheClaim) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(10, 20), f, graph);
  a.written(r(0, 12), graph);
  a.written(r(18, 30), graph);
  EXPECT_EQ(claims_of(a), (Claims{{f, r(12, 18)}}));
}

TEST(Taint, T2_AWriteThatEmptiesAClaimUntagsAtOnceNotDeferred) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(0, 10), f, graph);
  a.taint(r(20, 30), f, graph);
  a.written(r(0, 10), graph);
  EXPECT_TRUE(graph.contains(f)) << "[20,30) still carries it";
  a.written(r(20, 30), graph);
  EXPECT_FALSE(graph.contains(f)) << "removed on the write that took its last byte";
  EXPECT_TRUE(a.is_clean());
}

TEST(Taint, T2_OneWriteReleasesEveryFailureItCovers) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f1 = fail(graph, "1");
  const FailureId f2 = fail(graph, "2");
  a.taint(r(0, 10), f1, graph);
  a.taint(r(10, 20), f2, graph);
  b.taint(r(0, 5), f2, graph);
  a.written(r(0, 20), graph);
  EXPECT_TRUE(a.is_clean());
  EXPECT_FALSE(graph.contains(f1));
  EXPECT_EQ(graph.tags(f2), 1u) << "b still carries f2";
}

TEST(Taint, T2_AnEmptyOrDisjointWriteChangesNothing) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(10, 20), f, graph);
  a.written(r(15, 15), graph);
  a.written(r(0, 10), graph);  // touches, shares no byte
  a.written(r(20, 30), graph); // touches, shares no byte
  EXPECT_EQ(claims_of(a), (Claims{{f, r(10, 20)}}));
  EXPECT_EQ(graph.tags(f), 1u);
}

TEST(Taint, T2_AWriteOnACleanTaintDoesNothing) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  a.written(r(0, 100), graph);
  EXPECT_TRUE(a.is_clean());
  EXPECT_TRUE(graph.empty());
}

// ---- T3 failure / failures ---------------------------------------------------

TEST(Taint, T3_FailureNamesTheClaimantOfAnySharedByte) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(10, 20), f, graph);
  EXPECT_EQ(a.failure(r(0, 11)), f);
  EXPECT_EQ(a.failure(r(19, 40)), f);
  EXPECT_EQ(a.failure(r(0, 100)), f);
}

TEST(Taint, T3_ARangeThatOnlyTouchesAClaimHasNoFailure) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(10, 20), f, graph);
  EXPECT_EQ(a.failure(r(0, 10)), std::nullopt);
  EXPECT_EQ(a.failure(r(20, 30)), std::nullopt);
  EXPECT_TRUE(a.failures(r(20, 30)).empty());
}

TEST(Taint, T3_AnEmptyRangeHasNoFailureEvenInsideAClaim) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(10, 20), f, graph);
  EXPECT_EQ(a.failure(r(15, 15)), std::nullopt);
  EXPECT_TRUE(a.failures(r(15, 15)).empty());
}

TEST(Taint, T3_FailuresGivesEveryClaimantOnceInAscendingOrder) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f1 = fail(graph, "1");
  const FailureId f2 = fail(graph, "2");
  a.taint(r(0, 100), f2, graph);
  a.taint(r(10, 20), f1, graph); // splits f2 around it
  EXPECT_EQ(a.failures(r(0, 100)), (std::vector<FailureId>{f1, f2}));
  EXPECT_EQ(a.failures(r(50, 60)), (std::vector<FailureId>{f2}));
  const std::optional<FailureId> one = a.failure(r(5, 15));
  ASSERT_TRUE(one.has_value());
  EXPECT_TRUE(*one == f1 || *one == f2) << "one of the overlapping failures, unspecified which";
}

TEST(Taint, T3_ACleanTaintHasNoFailureAnywhere) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  EXPECT_EQ(a.failure(r(0, UINT64_MAX)), std::nullopt);
  EXPECT_TRUE(a.failures(r(0, UINT64_MAX)).empty());
}

// ---- T4 clear ----------------------------------------------------------------

TEST(Taint, T4_ClearUntagsEveryClaimOnceAndLeavesTheTaintClean) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f1 = fail(graph, "1");
  const FailureId f2 = fail(graph, "2");
  // f1 over three separate ranges: clear must untag it once, not three times.
  a.taint(r(0, 10), f1, graph);
  a.taint(r(20, 30), f1, graph);
  a.taint(r(40, 50), f1, graph);
  a.taint(r(30, 40), f2, graph);
  b.taint(r(0, 10), f1, graph);
  b.taint(r(0, 10), f1, graph);
  a.clear(graph);
  EXPECT_TRUE(a.is_clean());
  EXPECT_FALSE(a.is_spilled());
  EXPECT_EQ(graph.tags(f1), 1u) << "b's tag is b's";
  EXPECT_FALSE(graph.contains(f2));
}

TEST(Taint, T4_ClearingACleanTaintDoesNothing) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  b.taint(r(0, 1), f, graph);
  a.clear(graph);
  EXPECT_TRUE(a.is_clean());
  EXPECT_EQ(graph.tags(f), 1u);
}

TEST(Taint, T4_AClearedTaintCanCarryAgain) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(0, 10), f, graph);
  a.taint(r(20, 30), f, graph);
  a.clear(graph);
  const FailureId g = fail(graph, "again");
  a.taint(r(5, 6), g, graph);
  EXPECT_EQ(claims_of(a), (Claims{{g, r(5, 6)}}));
  EXPECT_EQ(graph.tags(g), 1u);
}

TEST(Taint, T4_ClearingAnInlineClaimUntagsItOnceAndEndsItsFailureWhenLast) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(0, 10), f, graph);
  b.taint(r(4, 8), f, graph);
  a.clear(graph);
  EXPECT_TRUE(a.is_clean());
  EXPECT_EQ(graph.tags(f), 1u) << "b still carries it";
  b.clear(graph);
  EXPECT_FALSE(graph.contains(f)) << "G3: the last untag ends it";
}

// claims_only(f, R): every claim is f's and a write of R would release
// them all (T2 = T4 there). Each case is checked against the write itself
// on a twin taint.
TEST(Taint, T1_ClaimTaggedRefusesATaintWithAClaimOrAnEmptyRangeAndChangesNothing) {
  // claim_tagged trusts the caller's tag; on a taint that already claims
  // something, or for no bytes, that tag would have no carrier of its own
  // (R1), so it throws before storing anything.
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph, "f");
  a.taint(r(0, 8), f, graph);
  EXPECT_THROW(a.claim_tagged(r(8, 16), f), std::logic_error);
  EXPECT_EQ(claims_of(a), (Claims{{f, r(0, 8)}}));
  EXPECT_THROW(b.claim_tagged(r(4, 4), f), std::logic_error);
  EXPECT_TRUE(b.is_clean());
  graph.tag(f); // What the caller does before a claim_tagged that succeeds.
  b.claim_tagged(r(4, 12), f);
  EXPECT_EQ(claims_of(b), (Claims{{f, r(4, 12)}}));
  EXPECT_EQ(graph.tags(f), 2u);
}

TEST(Taint, T2_ClaimsOnlyIsTrueExactlyWhenEveryClaimIsTheFailuresAndAWriteOfTheRangeClearsIt) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph, "f");
  const FailureId g = fail(graph, "g");
  c.taint(r(1000, 1001), f, graph); // c keeps both alive between cases (G3).
  c.taint(r(2000, 2001), g, graph);
  struct Case {
    std::vector<std::pair<FailureId, ByteRange>> claims;
    ByteRange within;
    bool expected;
  };
  const std::vector<Case> cases = {
      {{}, r(0, 0), true},                                // clean
      {{{f, r(10, 20)}}, r(10, 20), true},                // inline, exact
      {{{f, r(10, 20)}}, r(0, 100), true},                // inline, inside
      {{{f, r(10, 20)}}, r(11, 20), false},               // inline, a byte outside
      {{{f, r(10, 20)}}, r(10, 19), false},               // inline, the last byte outside
      {{{g, r(10, 20)}}, r(0, 100), false},               // inline, another failure
      {{{f, r(0, 10)}, {f, r(20, 30)}}, r(0, 30), true},  // spilled, one failure
      {{{f, r(0, 10)}, {f, r(20, 30)}}, r(0, 29), false}, // spilled, a byte outside
      {{{f, r(0, 10)}, {g, r(20, 30)}}, r(0, 30), false}, // spilled, two failures
  };
  for (const Case& one : cases) {
    for (const auto& [failure, range] : one.claims) {
      a.taint(range, failure, graph);
      b.taint(range, failure, graph);
    }
    EXPECT_EQ(a.claims_only(f, one.within), one.expected) << one.within;
    bool only_f = true;
    b.for_each_claim([&](FailureId failure, ByteRange) { only_f = only_f && failure == f; });
    b.written(one.within, graph);
    EXPECT_EQ(only_f && b.is_clean(), one.expected) << one.within;
    a.clear(graph);
    b.clear(graph);
  }
}

// ---- T5 shape ----------------------------------------------------------------

TEST(Taint, T5_TouchingRangesOfOneFailureFuse) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(0, 10), f, graph);
  a.taint(r(10, 20), f, graph);
  EXPECT_EQ(claims_of(a), (Claims{{f, r(0, 20)}}));
}

TEST(Taint, T5_OverlappingRangesOfOneFailureFuse) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(0, 10), f, graph);
  a.taint(r(30, 40), f, graph);
  a.taint(r(5, 35), f, graph);
  EXPECT_EQ(claims_of(a), (Claims{{f, r(0, 40)}}));
  EXPECT_FALSE(a.is_spilled()) << "fused back to one range: inline again (T6)";
}

TEST(Taint, T5_ATaintBridgingSeveralRangesOfItsFailureFusesThemAll) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  const FailureId other = fail(graph, "other");
  a.taint(r(0, 5), f, graph);
  a.taint(r(10, 15), f, graph);
  a.taint(r(20, 25), f, graph);
  a.taint(r(30, 35), other, graph);
  a.taint(r(5, 20), f, graph);
  EXPECT_EQ(claims_of(a), (Claims{{f, r(0, 25)}, {other, r(30, 35)}}));
}

TEST(Taint, T5_RangesOfOneFailureWithAGapStaySeparate) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(0, 10), f, graph);
  a.taint(r(11, 20), f, graph);
  EXPECT_EQ(claims_of(a), (Claims{{f, r(0, 10)}, {f, r(11, 20)}}));
}

TEST(Taint, T5_DifferentFailuresMayTouchButNeverFuse) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f1 = fail(graph, "1");
  const FailureId f2 = fail(graph, "2");
  a.taint(r(0, 10), f1, graph);
  a.taint(r(10, 20), f2, graph);
  EXPECT_EQ(claims_of(a), (Claims{{f1, r(0, 10)}, {f2, r(10, 20)}}));
}

TEST(Taint, T5_ClaimsStaySortedWhateverOrderTheyArrive) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f1 = fail(graph, "1");
  const FailureId f2 = fail(graph, "2");
  a.taint(r(50, 60), f1, graph);
  a.taint(r(10, 20), f2, graph);
  a.taint(r(30, 40), f1, graph);
  a.taint(r(0, 5), f2, graph);
  EXPECT_EQ(claims_of(a),
            (Claims{{f2, r(0, 5)}, {f2, r(10, 20)}, {f1, r(30, 40)}, {f1, r(50, 60)}}));
  EXPECT_EQ(a.claim_count(), 2u) << "at most one claim per failure";
}

TEST(Taint, T5_ClaimsOfDifferentFailuresNeverShareAByte) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f1 = fail(graph, "1");
  const FailureId f2 = fail(graph, "2");
  a.taint(r(0, 20), f1, graph);
  a.taint(r(10, 30), f2, graph);
  for (std::uint64_t byte = 0; byte < 30; ++byte) {
    EXPECT_EQ(a.failures(r(byte, byte + 1)).size(), 1u) << "byte " << byte;
  }
}

// ---- T6 inline storage -------------------------------------------------------

TEST(Taint, T6_ATaintIsAtMostThreeWords) {
  EXPECT_LE(sizeof(Taint), 24u);
  EXPECT_TRUE(Taint::inline_claims) << "the test suite builds with inline claims (the default)";
}

TEST(Taint, T6_OneFailureOverOneRangeDoesNotSpill) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(0, 4096), f, graph);
  EXPECT_FALSE(a.is_spilled());
  a.taint(r(4096, 8192), f, graph); // fuses: still one range
  EXPECT_FALSE(a.is_spilled());
  a.written(r(0, 100), graph); // trims an edge: still one range
  EXPECT_FALSE(a.is_spilled());
  EXPECT_EQ(claims_of(a), (Claims{{f, r(100, 8192)}}));
}

TEST(Taint, T6_ASplitByAPartialWriteSpillsAndShrinksBackWhenOneRangeRemains) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(0, 100), f, graph);
  a.written(r(40, 60), graph);
  EXPECT_TRUE(a.is_spilled()) << "two ranges of one failure";
  a.written(r(0, 40), graph);
  EXPECT_FALSE(a.is_spilled()) << "one range left: back inline";
  EXPECT_EQ(claims_of(a), (Claims{{f, r(60, 100)}}));
  a.written(r(60, 100), graph);
  EXPECT_TRUE(a.is_clean());
  EXPECT_FALSE(a.is_spilled());
}

TEST(Taint, T6_ASecondFailureSpillsAndShrinksBackWhenItLeaves) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f1 = fail(graph, "1");
  const FailureId f2 = fail(graph, "2");
  a.taint(r(0, 50), f1, graph);
  a.taint(r(50, 100), f2, graph);
  EXPECT_TRUE(a.is_spilled()) << "two failures";
  a.written(r(50, 100), graph);
  EXPECT_FALSE(a.is_spilled());
  EXPECT_EQ(claims_of(a), (Claims{{f1, r(0, 50)}}));
}

TEST(Taint, T6_FusingTwoRangesBackIntoOneReturnsInline) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f = fail(graph);
  a.taint(r(0, 100), f, graph);
  a.written(r(40, 60), graph);
  ASSERT_TRUE(a.is_spilled());
  a.taint(r(40, 60), f, graph);
  EXPECT_FALSE(a.is_spilled());
  EXPECT_EQ(claims_of(a), (Claims{{f, r(0, 100)}}));
}

TEST(Taint, T6_ClearingASpilledTaintReturnsItToTheCleanInlineState) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f1 = fail(graph, "1");
  const FailureId f2 = fail(graph, "2");
  for (std::uint64_t tile = 0; tile < 32; ++tile) {
    a.taint(r(tile * 10, tile * 10 + 5), tile % 2 == 0 ? f1 : f2, graph);
  }
  EXPECT_TRUE(a.is_spilled());
  a.clear(graph);
  EXPECT_TRUE(a.is_clean());
  EXPECT_FALSE(a.is_spilled());
  EXPECT_TRUE(graph.empty());
}

TEST(Taint, T6_AMovedTaintTakesItsClaimsAndTagsAndLeavesTheSourceClean) {
  Scenario s;
  [[maybe_unused]] auto& [graph, a, b, c] = s;
  const FailureId f1 = fail(graph, "1");
  const FailureId f2 = fail(graph, "2");
  a.taint(r(0, 10), f1, graph);
  a.taint(r(10, 20), f2, graph);
  const Claims before = claims_of(a);
  Taint moved(std::move(a));
  EXPECT_TRUE(a.is_clean()); // NOLINT(bugprone-use-after-move): the contract says so
  EXPECT_EQ(claims_of(moved), before);
  EXPECT_EQ(graph.tags(f1), 1u);
  c = std::move(moved);          // move-assign into a clean taint is allowed
  EXPECT_TRUE(moved.is_clean()); // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(claims_of(c), before);
}

} // namespace
} // namespace taintpool
