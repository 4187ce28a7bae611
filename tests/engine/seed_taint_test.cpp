// Pins: the reference semantics — every test of the Rust original
// (/work/shared/seed/taint.rs), ported scenario for scenario and assertion
// for assertion onto the C++ Taint and ErrorGraph.
//
// Why: DESIGN.md §3.2 names the seed as the reference semantics of T1–T5.
// If the rewrite disagrees with the seed on any of these scenarios, one of
// them is wrong, and these tests are where that shows first. The only
// addition is the clear() a C++ carrier needs before it is destroyed (a Taint
// destroyed with claims aborts by design); where the seed inspected private
// fields, the port reads the same facts through for_each_claim, claim_count
// and is_spilled.
#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/taint.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

#include "engine_snapshot.hpp"

namespace taintpool {
namespace {

using testing::Claims;
using testing::claims_of;

ByteRange r(std::uint64_t begin, std::uint64_t end) {
  return ByteRange::of(begin, end);
}

Error error(const char* reason) {
  return Error::generic(reason);
}

// Seed: a_failure_id_is_free_in_the_carrier. A 64-bit failure id costs a
// claim nothing: a 32-bit one would leave the same bytes as padding before
// the 64-bit offsets.
TEST(SeedTaint, AFailureIdIsFreeInTheCarrier) {
  struct Narrow {
    std::uint32_t failure;
    std::uint64_t begin;
    std::uint64_t end;
  };
  EXPECT_EQ(sizeof(detail::ClaimSegment), sizeof(Narrow))
      << "a 64-bit failure id must fit in the padding a 32-bit one leaves";
  EXPECT_EQ(sizeof(FailureId), sizeof(std::uint64_t));
}

// Seed: a_partial_write_releases_only_the_bytes_it_covers.
TEST(SeedTaint, APartialWriteReleasesOnlyTheBytesItCovers) {
  ErrorGraph graph;
  Taint taint;
  const FailureId failure = graph.insert(error("launch"));

  taint.taint(r(0, 100), failure, graph);
  taint.written(r(40, 60), graph);

  EXPECT_EQ(taint.failure(r(0, 40)), failure);
  EXPECT_EQ(taint.failure(r(40, 60)), std::nullopt) << "these bytes were written";
  EXPECT_EQ(taint.failure(r(60, 100)), failure);
  EXPECT_FALSE(graph.empty()) << "the split claim still pins the node";

  taint.written(r(0, 40), graph);
  taint.written(r(60, 100), graph);
  EXPECT_TRUE(taint.is_clean());
  EXPECT_TRUE(graph.empty()) << "the last byte released the node";
}

// Seed: disjoint_claims_keep_their_own_failures.
TEST(SeedTaint, DisjointClaimsKeepTheirOwnFailures) {
  ErrorGraph graph;
  Taint taint;
  const FailureId first = graph.insert(error("first"));
  const FailureId second = graph.insert(error("second"));

  taint.taint(r(0, 50), first, graph);
  taint.taint(r(50, 100), second, graph);

  EXPECT_EQ(taint.failure(r(10, 20)), first);
  EXPECT_EQ(taint.failure(r(60, 70)), second);
  EXPECT_EQ(graph.size(), 2u);

  taint.written(r(0, 50), graph);
  EXPECT_EQ(graph.error(first), nullptr) << "first has no carrier left";
  EXPECT_EQ(taint.failure(r(60, 70)), second);

  taint.clear(graph);
}

// Seed: a_new_failure_takes_the_bytes_it_claims.
TEST(SeedTaint, ANewFailureTakesTheBytesItClaims) {
  ErrorGraph graph;
  Taint taint;
  const FailureId old_failure = graph.insert(error("old"));
  const FailureId new_failure = graph.insert(error("new"));

  taint.taint(r(0, 100), old_failure, graph);
  taint.taint(r(25, 75), new_failure, graph);

  EXPECT_EQ(taint.failure(r(0, 25)), old_failure);
  EXPECT_EQ(taint.failure(r(30, 40)), new_failure);
  EXPECT_EQ(taint.failure(r(75, 100)), old_failure);

  taint.taint(r(0, 100), new_failure, graph);
  EXPECT_EQ(graph.error(old_failure), nullptr) << "old claims nothing any more";
  EXPECT_EQ(taint.failure(r(0, 100)), new_failure);

  taint.clear(graph);
}

// Seed: retainting_the_same_bytes_counts_once.
TEST(SeedTaint, RetaintingTheSameBytesCountsOnce) {
  ErrorGraph graph;
  Taint taint;
  const FailureId failure = graph.insert(error("launch"));

  for (int round = 0; round < 3; ++round) {
    taint.taint(r(0, 100), failure, graph);
  }
  EXPECT_EQ(graph.size(), 1u);

  taint.written(r(0, 100), graph);
  EXPECT_TRUE(graph.empty()) << "one entry, one tag, one untag";
}

// Seed: adjacent_claims_of_one_failure_fuse. The seed counted entries and
// ranges directly; here: one claim, one range, [0, 30), stored inline.
TEST(SeedTaint, AdjacentClaimsOfOneFailureFuse) {
  ErrorGraph graph;
  Taint taint;
  const FailureId failure = graph.insert(error("launch"));

  taint.taint(r(0, 10), failure, graph);
  taint.taint(r(20, 30), failure, graph);
  taint.taint(r(10, 20), failure, graph);

  EXPECT_EQ(taint.claim_count(), 1u);
  EXPECT_EQ(claims_of(taint), (Claims{{failure, r(0, 30)}}));
  EXPECT_FALSE(taint.is_spilled()) << "one failure over one range lives inline (T6)";

  taint.clear(graph);
}

// Seed: clearing_releases_every_claim.
TEST(SeedTaint, ClearingReleasesEveryClaim) {
  ErrorGraph graph;
  Taint taint;
  const FailureId first = graph.insert(error("first"));
  const FailureId second = graph.insert(error("second"));

  taint.taint(r(0, 50), first, graph);
  taint.taint(r(50, 100), second, graph);
  taint.clear(graph);

  EXPECT_TRUE(taint.is_clean());
  EXPECT_TRUE(graph.empty());
}

// Seed: an_empty_range_claims_nothing.
TEST(SeedTaint, AnEmptyRangeClaimsNothing) {
  ErrorGraph graph;
  Taint taint;
  const FailureId failure = graph.insert(error("launch"));

  taint.taint(r(10, 10), failure, graph);
  EXPECT_TRUE(taint.is_clean());

  taint.taint(r(0, 100), failure, graph);
  EXPECT_EQ(taint.failure(r(50, 50)), std::nullopt);

  taint.clear(graph);
}

} // namespace
} // namespace taintpool
