// Pins: the ErrorGraph rules of DESIGN.md §3.3 — G1 ids, G2/G3 tags, G4
// replace, G5 prune, G6 error, G7 the skip cap, G8 the report walk (and its
// printed form), G9 one report per failure — and the refcount rules R1–R4
// that tie the graph to its carriers.
//
// Why: the graph decides how long an error lives and what a failed read says.
// A node that outlives its last carrier leaks; one that dies early loses the
// explanation of a stale buffer; a report that stops short or walks the
// wrong way sends a person to the wrong kernel. The G8 tests build the
// design's own example (load_weights runs out of memory, linear and softmax
// are skipped) and read the report the way a person would.
#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/report.hpp>
#include <taintpool/taint.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine_snapshot.hpp"

namespace taintpool {
namespace {

ByteRange r(std::uint64_t begin, std::uint64_t end) {
  return ByteRange::of(begin, end);
}

AllocationId alloc(std::uint64_t raw) {
  return AllocationId::from_raw(raw);
}

FailureId id(std::uint64_t raw) {
  return FailureId::from_raw(raw);
}

SkipRecord skip(std::string kernel, std::uint64_t needed, std::vector<std::uint64_t> produced) {
  SkipRecord record{std::move(kernel), alloc(needed), {}};
  for (std::uint64_t raw : produced) {
    record.produced.push_back(alloc(raw));
  }
  return record;
}

// ---- G1 insert ---------------------------------------------------------------

TEST(ErrorGraph, G1_IdsCountUpFromOneAndANewNodeHasNoTags) {
  ErrorGraph graph;
  EXPECT_EQ(graph.next_id(), id(1));
  const FailureId first = graph.insert(Error::launch("a"));
  const FailureId second = graph.insert(Error::launch("b"));
  const FailureId third = graph.insert(Error::torn_down());
  EXPECT_EQ(first, id(1));
  EXPECT_EQ(second, id(2));
  EXPECT_EQ(third, id(3));
  EXPECT_EQ(graph.next_id(), id(4));
  EXPECT_EQ(graph.size(), 3u);
  for (const FailureId failure : {first, second, third}) {
    EXPECT_TRUE(graph.contains(failure));
    EXPECT_EQ(graph.tags(failure), 0u);
  }
}

TEST(ErrorGraph, G1_IdsAreNeverReusedAfterANodeIsRemoved) {
  ErrorGraph graph;
  const FailureId first = graph.insert(Error::launch("a"));
  graph.prune(first);
  ASSERT_TRUE(graph.empty());
  const FailureId second = graph.insert(Error::launch("b"));
  EXPECT_EQ(second, id(2));
  EXPECT_FALSE(graph.contains(first));
  EXPECT_EQ(graph.error(first), nullptr) << "the old id names nothing, not the new node";
  graph.prune(second);
}

TEST(ErrorGraph, G1_IdsAre64BitsWide) {
  static_assert(sizeof(FailureId) == 8);
  EXPECT_EQ(FailureId::from_raw(UINT64_MAX).raw(), UINT64_MAX);
}

// ---- G2 tag / G3 untag ---------------------------------------------------------

TEST(ErrorGraph, G2_TagAddsOneCarrier) {
  ErrorGraph graph;
  const FailureId f = graph.insert(Error::launch("a"));
  graph.tag(f);
  graph.tag(f);
  EXPECT_EQ(graph.tags(f), 2u);
  graph.untag(f);
  graph.untag(f);
}

TEST(ErrorGraph, G3_UntagOfNothingDoesNothing) {
  ErrorGraph graph;
  const FailureId f = graph.insert(Error::launch("a"));
  graph.tag(f);
  graph.untag(std::nullopt);
  EXPECT_EQ(graph.tags(f), 1u);
  graph.untag(f);
}

TEST(ErrorGraph, G3_TheNodeIsRemovedWhenItsLastTagGoes) {
  ErrorGraph graph;
  const FailureId f = graph.insert(Error::launch("a"));
  graph.tag(f);
  graph.tag(f);
  graph.untag(f);
  EXPECT_TRUE(graph.contains(f));
  graph.untag(f);
  EXPECT_FALSE(graph.contains(f));
  EXPECT_TRUE(graph.empty());
  EXPECT_EQ(graph.tags(f), 0u);
}

TEST(ErrorGraph, G3_RemovalWorksForOlderNodesAsWellAsTheNewest) {
  // The newest node lives in its own slot and older ones in a table; removal
  // must be right in both, in any order, without disturbing the others.
  ErrorGraph graph;
  std::vector<FailureId> failures;
  for (int at = 0; at < 40; ++at) {
    failures.push_back(graph.insert(Error::launch("f" + std::to_string(at))));
    graph.tag(failures.back());
  }
  for (std::size_t at = 0; at < failures.size(); at += 3) {
    graph.untag(failures[at]);
  }
  EXPECT_NO_THROW(graph.check_invariants());
  for (std::size_t at = 0; at < failures.size(); ++at) {
    const bool removed = at % 3 == 0; // includes 39, the newest
    EXPECT_EQ(graph.contains(failures[at]), !removed) << "failure index " << at;
    if (!removed) {
      EXPECT_EQ(graph.error(failures[at])->message(), "f" + std::to_string(at));
      graph.untag(failures[at]);
    }
  }
  EXPECT_TRUE(graph.empty());
}

TEST(ErrorGraph, G3_LiveFailuresStayFindableThroughLongChurnOfInsertsAndRemovals) {
  // A program keeps a few stale buffers at a time while failures keep coming
  // and going: thousands of inserts, a handful live at once, removed in a
  // scrambled order. The ids live at any moment are far apart, so they
  // collide in the graph's table; after every step each live failure must
  // still be found with its own error and tag count, and each removed one
  // must be gone.
  ErrorGraph graph;
  std::vector<std::pair<FailureId, std::string>> live;
  std::vector<FailureId> gone;
  std::uint64_t state = 0x2545F4914F6CDD1Dull;
  const auto next_random = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (int step = 0; step < 20000; ++step) {
    std::string message = "step " + std::to_string(step);
    const FailureId failure = graph.insert(Error::launch(message));
    graph.tag(failure);
    live.emplace_back(failure, std::move(message));
    while (live.size() > 1 + next_random() % 6) {
      const std::size_t victim = next_random() % live.size();
      graph.untag(live[victim].first);
      gone.push_back(live[victim].first);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(victim));
    }
    for (const auto& [id, text] : live) {
      const Error* error = graph.error(id);
      ASSERT_NE(error, nullptr) << to_string(id) << " lost at step " << step;
      ASSERT_EQ(error->message(), text);
      ASSERT_EQ(graph.tags(id), 1u);
    }
    ASSERT_EQ(graph.size(), live.size());
    if (!gone.empty()) {
      ASSERT_FALSE(graph.contains(gone.back()));
    }
  }
  ASSERT_NO_THROW(graph.check_invariants());
  for (const auto& entry : live) {
    graph.untag(entry.first);
  }
  EXPECT_TRUE(graph.empty());
}

// ---- G4 replace --------------------------------------------------------------

TEST(ErrorGraph, G4_ReplaceSwapsTheErrorAndKeepsTheTags) {
  ErrorGraph graph;
  const FailureId f = graph.insert(Error::torn_down());
  graph.tag(f);
  graph.replace(f, Error::out_of_memory("64 MiB requested"));
  ASSERT_NE(graph.error(f), nullptr);
  EXPECT_EQ(*graph.error(f), Error::out_of_memory("64 MiB requested"));
  EXPECT_EQ(graph.tags(f), 1u);
  graph.untag(f);
}

TEST(ErrorGraph, G4_ReplacingAMissingFailureIsIgnored) {
  ErrorGraph graph;
  const FailureId live = graph.insert(Error::launch("live"));
  const auto before = testing::snapshot(graph);
  graph.replace(id(2), Error::launch("never minted"));
  const FailureId gone = graph.insert(Error::launch("gone"));
  graph.prune(gone);
  const auto after_insert = testing::snapshot(graph);
  graph.replace(gone, Error::launch("too late"));
  EXPECT_EQ(testing::snapshot(graph), after_insert);
  EXPECT_EQ(before.nodes, after_insert.nodes);
  graph.prune(live);
}

// ---- G5 prune ----------------------------------------------------------------

TEST(ErrorGraph, G5_PruneRemovesAFailureWithNoCarrier) {
  ErrorGraph graph;
  const FailureId f = graph.insert(Error::torn_down());
  graph.prune(f);
  EXPECT_FALSE(graph.contains(f));
  EXPECT_TRUE(graph.empty());
}

TEST(ErrorGraph, G5_PruneKeepsAFailureSomeCarrierHolds) {
  ErrorGraph graph;
  const FailureId f = graph.insert(Error::torn_down());
  graph.tag(f);
  graph.prune(f);
  EXPECT_TRUE(graph.contains(f));
  EXPECT_EQ(graph.tags(f), 1u);
  graph.untag(f);
}

TEST(ErrorGraph, G5_PruningAMissingFailureIsIgnored) {
  ErrorGraph graph;
  const FailureId f = graph.insert(Error::launch("a"));
  graph.tag(f);
  const auto before = testing::snapshot(graph);
  graph.prune(id(99));
  graph.prune(id(UINT64_MAX));
  EXPECT_EQ(testing::snapshot(graph), before);
  graph.untag(f);
}

TEST(ErrorGraph, G5_PruneWorksOnAnOlderNodeToo) {
  ErrorGraph graph;
  const FailureId older = graph.insert(Error::torn_down());
  const FailureId newer = graph.insert(Error::torn_down());
  graph.prune(older);
  EXPECT_FALSE(graph.contains(older));
  EXPECT_TRUE(graph.contains(newer));
  graph.prune(newer);
  EXPECT_TRUE(graph.empty());
}

// ---- G6 error ----------------------------------------------------------------

TEST(ErrorGraph, G6_ErrorIsTheFailuresErrorUntilItIsGone) {
  ErrorGraph graph;
  ErrorGraph other;
  Taint taint;
  const FailureId f = graph.insert(Error::out_of_memory("load_weights"));
  taint.taint(r(0, 8), f, graph);
  ASSERT_NE(graph.error(f), nullptr);
  EXPECT_EQ(graph.error(f)->kind(), ErrorKind::OutOfMemory);
  EXPECT_EQ(graph.error(f)->message(), "load_weights");
  taint.written(r(0, 8), graph);
  EXPECT_EQ(graph.error(f), nullptr);
  EXPECT_EQ(other.error(f), nullptr) << "a graph that never minted it knows nothing of it";
}

// ---- G7 skip records -----------------------------------------------------------

TEST(ErrorGraph, G7_SkipRecordsAreKeptInOrderUpToTheCap) {
  ErrorGraph graph;
  const FailureId f = graph.insert(Error::launch("root"));
  for (std::uint64_t at = 1; at <= 3; ++at) {
    graph.skipped(f, skip("k" + std::to_string(at), at, {at + 1}));
  }
  EXPECT_EQ(graph.skips_recorded(f), 3u);
  const std::vector<SkipRecord> kept = graph.skip_records(f);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].kernel, "k1") << "oldest first";
  EXPECT_EQ(kept[2].kernel, "k3");
  graph.prune(f);
}

TEST(ErrorGraph, G7_OnlyTheNewest16AreKeptButEveryRecordIsCounted) {
  static_assert(ErrorGraph::kept_skip_records == 16);
  ErrorGraph graph;
  const FailureId f = graph.insert(Error::launch("root"));
  for (std::uint64_t at = 1; at <= 40; ++at) {
    graph.skipped(f, skip("k" + std::to_string(at), 1, {2}));
    EXPECT_EQ(graph.skips_recorded(f), at);
    const std::vector<SkipRecord> kept = graph.skip_records(f);
    ASSERT_EQ(kept.size(), std::min<std::uint64_t>(at, 16));
    // Oldest first, contiguous, ending at the newest.
    for (std::size_t k = 0; k < kept.size(); ++k) {
      EXPECT_EQ(kept[k].kernel, "k" + std::to_string(at - kept.size() + 1 + k));
    }
  }
  EXPECT_NO_THROW(graph.check_invariants());
  graph.prune(f);
}

TEST(ErrorGraph, G7_ForEachSkipRecordVisitsInPlaceWhatSkipRecordsCopies) {
  // The in-place visit (what the fuzzers and report() read) must be the
  // copy's sequence exactly, oldest first, before and after the ring wraps.
  ErrorGraph graph;
  const FailureId f = graph.insert(Error::launch("root"));
  const auto visited = [&](FailureId failure) {
    std::vector<SkipRecord> out;
    graph.for_each_skip_record(failure, [&](const SkipRecord& record) { out.push_back(record); });
    return out;
  };
  EXPECT_TRUE(visited(f).empty()) << "no skip yet: nothing to visit";
  for (std::uint64_t at = 1; at <= 37; ++at) {
    graph.skipped(f, skip("k" + std::to_string(at), at, {at + 1}));
    const std::vector<SkipRecord> seen = visited(f);
    EXPECT_EQ(seen, graph.skip_records(f)) << "after " << at << " skips";
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.back().kernel, "k" + std::to_string(at)) << "newest last";
  }
  graph.prune(f);
  EXPECT_TRUE(visited(f).empty()) << "a gone failure has no records to visit";
}

TEST(ErrorGraph, G8_AReportAfterTheRingWrappedWalksTheKeptRecordsNewestFirst) {
  // report() walks the ring in place: after wrap-around its oldest kept
  // record sits mid-ring, and the chain A1 <- A2 <- ... must still be
  // followed newest first and stop at the oldest kept record (G7, G8).
  ErrorGraph graph;
  const FailureId f = graph.insert(Error::launch("root"));
  for (std::uint64_t at = 1; at <= 21; ++at) {
    graph.skipped(f, skip("k" + std::to_string(at), at, {at + 1}));
  }
  const Report report = graph.report(f, AllocationId::from_raw(22));
  ASSERT_EQ(report.path.size(), 16u) << "every kept record is a step of the chain";
  EXPECT_EQ(report.path.front().kernel, "k21");
  EXPECT_EQ(report.path.back().kernel, "k6") << "the oldest kept record";
  EXPECT_EQ(report.origin, AllocationId::from_raw(6));
  EXPECT_TRUE(report.path_may_be_incomplete);
  EXPECT_EQ(report.skips_recorded, 21u);
  graph.prune(f);
}

TEST(ErrorGraph, G7_SkipRecordsAreKeptPerFailureAndDieWithIt) {
  ErrorGraph graph;
  const FailureId a = graph.insert(Error::launch("a"));
  const FailureId b = graph.insert(Error::launch("b"));
  graph.tag(b);
  graph.skipped(a, skip("ka", 1, {2}));
  graph.skipped(b, skip("kb", 3, {4}));
  graph.skipped(b, skip("kb2", 4, {5}));
  EXPECT_EQ(graph.skips_recorded(a), 1u);
  EXPECT_EQ(graph.skips_recorded(b), 2u);
  graph.prune(a);
  EXPECT_EQ(graph.skips_recorded(a), 0u);
  EXPECT_TRUE(graph.skip_records(a).empty());
  EXPECT_EQ(graph.skips_recorded(b), 2u);
  graph.untag(b);
  EXPECT_EQ(graph.skips_recorded(b), 0u);
}

// ---- G8 report ----------------------------------------------------------------

/// DESIGN.md §1's example: load_weights runs out of memory leaving
/// allocation 7 unwritten; linear (7 -> 12) and softmax (12 -> 15) are
/// skipped, carrying the same root.
struct LoadWeightsChain {
  ErrorGraph graph;
  Taint weights; // allocation 7
  Taint hidden;  // allocation 12
  Taint probs;   // allocation 15
  FailureId root = graph.insert(Error::out_of_memory("load_weights: 64 MiB requested, 12 free"));

  LoadWeightsChain() {
    weights.taint(r(0, 4096), root, graph);
    graph.skipped(root, skip("linear", 7, {12}));
    hidden.taint(r(0, 1024), root, graph);
    graph.skipped(root, skip("softmax", 12, {15}));
    probs.taint(r(0, 1024), root, graph);
  }
  LoadWeightsChain(const LoadWeightsChain&) = delete;
  LoadWeightsChain& operator=(const LoadWeightsChain&) = delete;
  ~LoadWeightsChain() {
    weights.clear(graph);
    hidden.clear(graph);
    probs.clear(graph);
  }
};

TEST(ErrorGraph, G8_AReportWalksBackThroughEverySkipToTheOriginNewestFirst) {
  LoadWeightsChain chain;
  const Report report = chain.graph.report(chain.root, alloc(15));
  EXPECT_EQ(report.failure, chain.root);
  EXPECT_EQ(report.root, Error::out_of_memory("load_weights: 64 MiB requested, 12 free"));
  EXPECT_EQ(report.read, alloc(15));
  ASSERT_EQ(report.path.size(), 2u);
  EXPECT_EQ(report.path[0].kernel, "softmax") << "newest first";
  EXPECT_EQ(report.path[0].needed, alloc(12));
  EXPECT_EQ(report.path[1].kernel, "linear");
  EXPECT_EQ(report.path[1].needed, alloc(7));
  EXPECT_EQ(report.origin, alloc(7));
  EXPECT_EQ(report.skips_recorded, 2u);
  EXPECT_FALSE(report.path_may_be_incomplete);
  EXPECT_EQ(report.stale, std::nullopt) << "the graph does not know the bytes; the device does";
}

TEST(ErrorGraph, G8_AReportStartsWhereverTheReadIsInTheChain) {
  LoadWeightsChain chain;
  const Report middle = chain.graph.report(chain.root, alloc(12));
  ASSERT_EQ(middle.path.size(), 1u);
  EXPECT_EQ(middle.path[0].kernel, "linear");
  EXPECT_EQ(middle.origin, alloc(7));

  const Report origin = chain.graph.report(chain.root, alloc(7));
  EXPECT_TRUE(origin.path.empty());
  EXPECT_EQ(origin.origin, alloc(7)) << "the read itself is the origin when nothing produced it";
}

TEST(ErrorGraph, G8_ThePrintedReportNamesTheReadTheRootEachSkipAndTheOrigin) {
  LoadWeightsChain chain;
  const std::string text = to_string(chain.graph.report(chain.root, alloc(15)));
  const auto at = [&](const std::string& needle) {
    const auto found = text.find(needle);
    EXPECT_NE(found, std::string::npos) << "missing \"" << needle << "\" in:\n" << text;
    return found;
  };
  const auto head = at("allocation 15 cannot be read: failure 1 (out of memory: load_weights");
  const auto softmax = at("softmax was skipped: it needed allocation 12");
  const auto linear = at("linear was skipped: it needed allocation 7");
  const auto origin = at("allocation 7 was left unwritten by failure 1");
  EXPECT_LT(head, softmax);
  EXPECT_LT(softmax, linear) << "newest skip first";
  EXPECT_LT(linear, origin) << "the origin last";
  EXPECT_EQ(text.find("may begin earlier"), std::string::npos);

  std::ostringstream streamed;
  streamed << chain.graph.report(chain.root, alloc(15));
  EXPECT_EQ(streamed.str(), text);
}

TEST(ErrorGraph, G8_APrintedReportWithStaleBytesNamesThem) {
  LoadWeightsChain chain;
  Report report = chain.graph.report(chain.root, alloc(15));
  report.stale = r(64, 128);
  EXPECT_NE(to_string(report).find("allocation 15 bytes [64, 128) cannot be read"),
            std::string::npos)
      << to_string(report);
}

TEST(ErrorGraph, G8_AGapLeftByTheCapEndsTheWalkAndSaysThePathMayBeIncomplete) {
  // linear, then fifteen unrelated skips, then softmax: seventeen records,
  // so the oldest — linear, the link from 12 back to 7 — is the one dropped.
  ErrorGraph graph;
  const FailureId root = graph.insert(Error::out_of_memory("load_weights"));
  graph.skipped(root, skip("linear", 7, {12}));
  for (int at = 0; at < 15; ++at) {
    graph.skipped(root, skip("unrelated", 100, {101}));
  }
  graph.skipped(root, skip("softmax", 12, {15}));

  const Report report = graph.report(root, alloc(15));
  ASSERT_EQ(report.path.size(), 1u);
  EXPECT_EQ(report.path[0].kernel, "softmax");
  EXPECT_EQ(report.origin, alloc(12)) << "the walk ends at the gap";
  EXPECT_TRUE(report.path_may_be_incomplete);
  EXPECT_EQ(report.skips_recorded, 17u);
  EXPECT_EQ(report.root, Error::out_of_memory("load_weights")) << "the root is always there";
  const std::string text = to_string(report);
  EXPECT_NE(text.find("softmax was skipped: it needed allocation 12"), std::string::npos) << text;
  EXPECT_NE(text.find("allocation 12 was left unwritten by failure 1"), std::string::npos) << text;
  EXPECT_NE(text.find("17 skips were recorded"), std::string::npos) << text;
  EXPECT_NE(text.find("the path may begin earlier"), std::string::npos) << text;
  graph.prune(root);
}

TEST(ErrorGraph, G8_AtExactlyTheCapNothingIsDroppedAndThePathIsComplete) {
  ErrorGraph graph;
  const FailureId root = graph.insert(Error::launch("root"));
  graph.skipped(root, skip("first", 1, {2}));
  for (int at = 0; at < 14; ++at) {
    graph.skipped(root, skip("unrelated", 100, {101}));
  }
  graph.skipped(root, skip("last", 2, {3}));
  ASSERT_EQ(graph.skips_recorded(root), ErrorGraph::kept_skip_records);
  const Report report = graph.report(root, alloc(3));
  ASSERT_EQ(report.path.size(), 2u);
  EXPECT_EQ(report.origin, alloc(1));
  EXPECT_FALSE(report.path_may_be_incomplete);
  graph.prune(root);
}

TEST(ErrorGraph, G8_TheWalkOnlyStepsToStrictlyOlderRecordsSoItEndsOnACycle) {
  // An in-place kernel reads and writes allocation 5; two kernels ping-pong
  // between 5 and 6. Walking "who produced this" would loop forever without
  // the strictly-older rule.
  ErrorGraph graph;
  const FailureId f = graph.insert(Error::launch("root"));
  graph.skipped(f, skip("ping", 5, {6}));
  graph.skipped(f, skip("pong", 6, {5}));
  graph.skipped(f, skip("inplace", 5, {5}));
  graph.skipped(f, skip("ping", 5, {6}));
  const Report report = graph.report(f, alloc(6));
  ASSERT_EQ(report.path.size(), 4u);
  EXPECT_EQ(report.path[0].kernel, "ping");
  EXPECT_EQ(report.path[1].kernel, "inplace");
  EXPECT_EQ(report.path[2].kernel, "pong");
  EXPECT_EQ(report.path[3].kernel, "ping");
  EXPECT_EQ(report.origin, alloc(5));
  graph.prune(f);
}

TEST(ErrorGraph, G8_AReportFollowsTheBranchThatProducedTheRead) {
  // One root fans out: a (1 -> 2, 3), b (2 -> 4), c (3 -> 5). The report for
  // 5 goes through c and a, never b.
  ErrorGraph graph;
  const FailureId f = graph.insert(Error::launch("root"));
  graph.skipped(f, skip("a", 1, {2, 3}));
  graph.skipped(f, skip("b", 2, {4}));
  graph.skipped(f, skip("c", 3, {5}));
  const Report report = graph.report(f, alloc(5));
  ASSERT_EQ(report.path.size(), 2u);
  EXPECT_EQ(report.path[0].kernel, "c");
  EXPECT_EQ(report.path[1].kernel, "a");
  EXPECT_EQ(report.origin, alloc(1));
  graph.prune(f);
}

TEST(ErrorGraph, G8_AReportRefilledInPlaceEqualsAFreshOneWhateverItHeldBefore) {
  // report_into reuses a kept Report (an exchange's, per stale input): every
  // field must be set again. Kept reports with a longer path, a shorter one,
  // a stale range, another failure's root and flags are refilled for each
  // read of a chain with a wrapped ring (incomplete) and of a short one.
  ErrorGraph graph;
  const FailureId wrapped = graph.insert(Error::launch("wrapped root with a long message"));
  for (std::uint64_t at = 1; at <= 21; ++at) {
    graph.skipped(wrapped, skip("kernel number " + std::to_string(at), at, {at + 1, 100 + at}));
  }
  const FailureId short_chain = graph.insert(Error::out_of_memory("oom"));
  graph.skipped(short_chain, skip("linear", 7, {12}));
  graph.skipped(short_chain, skip("softmax", 12, {15}));
  const FailureId bare = graph.insert(Error::remote("no skip at all"));

  const std::vector<std::pair<FailureId, AllocationId>> reads{
      {wrapped, alloc(22)}, {short_chain, alloc(15)}, {wrapped, alloc(10)},
      {bare, alloc(3)},     {short_chain, alloc(12)}, {wrapped, alloc(22)}};
  for (const auto& [kept_failure, kept_read] : reads) {
    for (const auto& [failure, read] : reads) {
      Report kept = graph.report(kept_failure, kept_read);
      kept.stale = r(4, 8);
      kept.skips_recorded = 999;
      kept.path_may_be_incomplete = !kept.path_may_be_incomplete;
      graph.report_into(failure, read, kept);
      EXPECT_EQ(kept, graph.report(failure, read))
          << "kept " << kept_failure.raw() << "@" << kept_read.raw() << ", refilled "
          << failure.raw() << "@" << read.raw();
    }
  }

  // A report of a failure that is gone throws and leaves the kept one as it was.
  Report kept = graph.report(short_chain, alloc(15));
  const Report before = kept;
  graph.prune(bare);
  EXPECT_THROW(graph.report_into(bare, alloc(3), kept), std::logic_error);
  EXPECT_EQ(kept, before);
  graph.prune(wrapped);
  graph.prune(short_chain);
}

// ---- G9 reports ----------------------------------------------------------------

TEST(ErrorGraph, G9_ReportsGivesOneReportPerDistinctFailureInFirstSeenOrder) {
  ErrorGraph graph;
  const FailureId first = graph.insert(Error::launch("first"));
  const FailureId second = graph.insert(Error::out_of_memory("second"));
  const std::vector<std::pair<FailureId, AllocationId>> claims{
      {second, alloc(3)}, {first, alloc(1)}, {second, alloc(4)}, {first, alloc(2)}};
  const std::vector<Report> reports = graph.reports(claims);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].failure, second);
  EXPECT_EQ(reports[0].read, alloc(3)) << "a repeated failure keeps its first allocation";
  EXPECT_EQ(reports[1].failure, first);
  EXPECT_EQ(reports[1].read, alloc(1));
  EXPECT_EQ(reports[0], graph.report(second, alloc(3)));
  EXPECT_TRUE(graph.reports({}).empty());
  graph.prune(first);
  graph.prune(second);
}

// ---- R1–R4 refcounts -------------------------------------------------------------

TEST(ErrorGraph, R1_ATagCountEqualsTheCarriersClaimingTheFailure) {
  ErrorGraph graph;
  std::vector<Taint> taints(5);
  const FailureId f = graph.insert(Error::launch("a"));
  for (std::size_t at = 0; at < taints.size(); ++at) {
    // Several ranges on some carriers: still one tag each.
    taints[at].taint(r(0, 10), f, graph);
    if (at % 2 == 0) {
      taints[at].taint(r(20, 30), f, graph);
    }
    EXPECT_EQ(graph.tags(f), at + 1);
  }
  std::vector<const Taint*> carriers;
  for (const Taint& taint : taints) {
    carriers.push_back(&taint);
  }
  EXPECT_NO_THROW(check_refcounts(graph, carriers));
  for (Taint& taint : taints) {
    taint.clear(graph);
  }
  EXPECT_TRUE(graph.empty());
}

TEST(ErrorGraph, R1_CheckRefcountsCatchesATagNoCarrierHolds) {
  ErrorGraph graph;
  Taint taint;
  const FailureId f = graph.insert(Error::launch("a"));
  taint.taint(r(0, 10), f, graph);
  graph.tag(f); // a tag behind the carriers' backs
  const std::vector<const Taint*> carriers{&taint};
  try {
    check_refcounts(graph, carriers);
    ADD_FAILURE() << "an extra tag went unnoticed";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("R1"), std::string::npos) << error.what();
  }
  graph.untag(f);
  taint.clear(graph);
}

TEST(ErrorGraph, R2_CheckRefcountsCatchesAClaimWhoseNodeIsGone) {
  ErrorGraph graph;
  ErrorGraph elsewhere;
  Taint taint;
  const FailureId f = graph.insert(Error::launch("a"));
  taint.taint(r(0, 10), f, graph);
  const std::vector<const Taint*> carriers{&taint};
  try {
    check_refcounts(elsewhere, carriers); // a graph with no such node
    ADD_FAILURE() << "a claim without a node went unnoticed";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("R2"), std::string::npos) << error.what();
  }
  taint.clear(graph);
}

TEST(ErrorGraph, R1_R2_R3_AKeptRefcountScratchGivesEveryVerdictAFreshOneGives) {
  // One scratch through passing checks, each kind of violation (a check
  // that threw leaves its list part-filled) and carriers of every shape,
  // in an order where a leftover entry would change a count: each verdict
  // and message equals the one a fresh check gives.
  ErrorGraph graph;
  ErrorGraph elsewhere;
  std::vector<Taint> taints(4);
  const FailureId a = graph.insert(Error::launch("a"));
  const FailureId b = graph.insert(Error::launch("b"));
  const FailureId held = graph.insert(Error::torn_down());
  taints[0].taint(r(0, 10), a, graph);
  taints[0].taint(r(20, 30), b, graph);
  taints[0].taint(r(40, 50), a, graph); // a twice on one carrier: one tag
  taints[1].taint(r(0, 5), b, graph);   // inline
  taints[2].taint(r(0, 64), a, graph);
  std::vector<const Taint*> carriers;
  for (const Taint& taint : taints) {
    carriers.push_back(&taint);
  }
  const std::vector<const Taint*> first_two{&taints[0], &taints[1]};
  const std::vector<FailureId> holding{held};
  const auto verdict = [](const auto& check) -> std::string {
    try {
      check();
      return "passed";
    } catch (const std::logic_error& error) {
      return error.what();
    }
  };
  RefcountScratch scratch;
  const auto both = [&](const ErrorGraph& on, std::span<const Taint* const> these,
                        std::span<const FailureId> hold) {
    const std::string kept = verdict([&] { check_refcounts(on, these, hold, scratch); });
    const std::string fresh = verdict([&] { check_refcounts(on, these, hold); });
    EXPECT_EQ(kept, fresh);
    return kept;
  };
  EXPECT_EQ(both(graph, carriers, holding), "passed");
  EXPECT_NE(both(elsewhere, carriers, holding).find("R2"), std::string::npos);
  EXPECT_NE(both(graph, first_two, holding).find("R1"), std::string::npos)
      << "a's third carrier left out";
  EXPECT_NE(both(graph, carriers, {}).find("R3"), std::string::npos);
  EXPECT_EQ(both(graph, carriers, holding), "passed") << "after three checks that threw";
  graph.tag(b); // a tag behind the carriers' backs
  EXPECT_NE(both(graph, carriers, holding).find("R1"), std::string::npos);
  graph.untag(b);
  EXPECT_EQ(both(graph, carriers, holding), "passed");
  for (Taint& taint : taints) {
    taint.clear(graph);
  }
  graph.prune(held);
  EXPECT_EQ(both(graph, carriers, {}), "passed") << "nothing claimed, nothing live";
}

TEST(ErrorGraph, R3_ANodeWithNoTagExistsOnlyWhileAnOperationHoldsIt) {
  ErrorGraph graph;
  const FailureId provisional = graph.insert(Error::torn_down());
  const std::vector<const Taint*> none;
  const std::vector<FailureId> held{provisional};
  EXPECT_NO_THROW(check_refcounts(graph, none, held)) << "an open scope holds it";
  try {
    check_refcounts(graph, none);
    ADD_FAILURE() << "an untagged node nobody holds went unnoticed";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("R3"), std::string::npos) << error.what();
  }
  graph.prune(provisional); // the scope ends
  EXPECT_TRUE(graph.empty());
}

TEST(ErrorGraph, R3_ANodeIsGoneTheMomentItsLastTagIsWithoutAPrune) {
  ErrorGraph graph;
  Taint taint;
  const FailureId f = graph.insert(Error::launch("a"));
  taint.taint(r(0, 10), f, graph);
  taint.written(r(0, 10), graph);
  EXPECT_FALSE(graph.contains(f)) << "tagged once and released: nothing holds it";
}

TEST(ErrorGraph, R4_WithEveryCarrierClearedAndEveryScopeClosedTheGraphIsEmpty) {
  ErrorGraph graph;
  std::vector<Taint> taints(8);
  std::vector<FailureId> failures;
  for (std::uint64_t round = 0; round < 12; ++round) {
    failures.push_back(graph.insert(Error::launch("f" + std::to_string(round))));
    for (std::size_t at = 0; at < taints.size(); ++at) {
      if ((at + round) % 3 == 0) {
        taints[at].taint(r(round * 7 % 50, round * 7 % 50 + 20), failures.back(), graph);
      }
    }
    graph.skipped(failures.back(), skip("k", 1, {2}));
  }
  ASSERT_FALSE(graph.empty());
  for (Taint& taint : taints) {
    taint.clear(graph);
  }
  for (const FailureId f : failures) {
    graph.prune(f); // the ones no carrier ever took
  }
  EXPECT_TRUE(graph.empty());
  EXPECT_EQ(graph.size(), 0u);
  EXPECT_NO_THROW(graph.check_invariants());
}

// ---- the provisional failure (S1) -----------------------------------------------

/// A provisional failure, just minted: TornDown with no message, no tags,
/// no skips — whatever the slot it landed in held before.
void expect_fresh_provisional(const ErrorGraph& graph, FailureId provisional) {
  ASSERT_TRUE(graph.contains(provisional));
  const Error* error = graph.error(provisional);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(*error, Error::torn_down()) << to_string(*error);
  EXPECT_EQ(graph.tags(provisional), 0u);
  EXPECT_EQ(graph.skips_recorded(provisional), 0u);
  EXPECT_TRUE(graph.skip_records(provisional).empty());
  const Report report = graph.report(provisional, alloc(3));
  EXPECT_EQ(report.root, Error::torn_down());
  EXPECT_TRUE(report.path.empty());
  EXPECT_EQ(report.skips_recorded, 0u);
}

TEST(ErrorGraph, S1_AProvisionalFailureStartsTornDownInASlotAPrunedFailureUsed) {
  // insert_provisional assigns no error on its fast path: the newest-node
  // slot must already hold TornDown, and no skip log, once a node leaves it.
  ErrorGraph graph;
  const FailureId real = graph.insert(Error::launch("load_weights ran out of memory, at length"));
  graph.skipped(real, skip("linear", 1, {2}));
  graph.prune(real); // Untagged: removed from the newest-node slot.
  expect_fresh_provisional(graph, graph.insert_provisional());
}

TEST(ErrorGraph, S1_AProvisionalFailureStartsTornDownAfterAnotherWasReplacedAndReleased) {
  // The scope cycle of a failed launch: the provisional node takes the real
  // error (G4) and a skip, its carrier lets go (G3), and the next scope's
  // provisional node lands in the same slot.
  ErrorGraph graph;
  Taint taint;
  const FailureId first = graph.insert_provisional();
  taint.taint(r(0, 8), first, graph);
  graph.replace(first, Error::launch("the kernel reported a fault, described at length"));
  graph.skipped(first, skip("softmax", 4, {5}));
  taint.written(r(0, 8), graph); // Its last byte: the node goes (G3).
  ASSERT_FALSE(graph.contains(first));
  expect_fresh_provisional(graph, graph.insert_provisional());
}

TEST(ErrorGraph, S1_AProvisionalFailureStartsTornDownAfterTheNewestSlotWasMovedOut) {
  // A live newest node moves to the table when the next one is minted, and
  // out of the graph altogether when the graph moves: either way the slot
  // left behind holds TornDown and no skip log.
  ErrorGraph graph;
  Taint taint;
  const FailureId kept =
      graph.insert(Error::launch("kept alive by a carrier, with a long message"));
  graph.skipped(kept, skip("linear", 1, {2}));
  taint.taint(r(0, 8), kept, graph);
  const FailureId provisional = graph.insert_provisional(); // `kept` retires to the table.
  expect_fresh_provisional(graph, provisional);
  graph.prune(provisional);

  const FailureId newest = graph.insert(Error::launch("newest, also carried, also long enough"));
  graph.skipped(newest, skip("gelu", 2, {3}));
  taint.taint(r(8, 16), newest, graph);
  ErrorGraph moved(std::move(graph));                          // Both nodes leave `graph`.
  expect_fresh_provisional(graph, graph.insert_provisional()); // NOLINT(bugprone-use-after-move)
  const FailureId there = moved.insert_provisional();          // `newest` retires.
  expect_fresh_provisional(moved, there);
  moved.prune(there);
  EXPECT_EQ(moved.skips_recorded(kept), 1u);
  EXPECT_EQ(moved.skips_recorded(newest), 1u);

  // Move-assigned as well: the slots it leaves behind are as good as new.
  const FailureId last = moved.insert(Error::launch("the newest again, carried, long enough"));
  graph.skipped(graph.insert(Error::launch("dropped with `graph`")), skip("k", 1, {2}));
  taint.taint(r(16, 24), last, moved);
  graph = std::move(moved);
  expect_fresh_provisional(moved, moved.insert_provisional()); // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(graph.skips_recorded(kept), 1u);
  EXPECT_EQ(graph.tags(last), 1u);
  taint.clear(graph);
}

TEST(ErrorGraph, S1_AProvisionalFailureStartsTornDownInATableSlotAnOlderFailureUsed) {
  // A provisional failure that must go to the table itself (the newest slot
  // is taken) lands, after churn, in table slots real failures used.
  ErrorGraph graph;
  std::vector<Taint> taints(24);
  for (std::size_t round = 0; round < taints.size(); ++round) {
    const FailureId real = graph.insert(Error::launch("failure " + std::to_string(round) +
                                                      " with a message past the small buffer"));
    graph.skipped(real, skip("k", round + 1, {round + 2}));
    taints[round].taint(r(0, 8), real, graph);
  }
  for (std::size_t round = 0; round < taints.size(); round += 2) {
    taints[round].clear(graph); // Half the table's slots are vacated.
  }
  std::vector<FailureId> provisional;
  for (std::size_t round = 0; round < taints.size(); round += 2) {
    provisional.push_back(graph.insert_provisional());
    taints[round].taint(r(0, 8), provisional.back(), graph); // Keeps it: the next one retires it.
  }
  for (const FailureId failure : provisional) {
    const Error* error = graph.error(failure);
    ASSERT_NE(error, nullptr);
    EXPECT_EQ(*error, Error::torn_down()) << to_string(failure) << ": " << to_string(*error);
    EXPECT_EQ(graph.skips_recorded(failure), 0u) << to_string(failure);
  }
  EXPECT_NO_THROW(graph.check_invariants());
  for (Taint& taint : taints) {
    taint.clear(graph);
  }
  EXPECT_TRUE(graph.empty());
}

// ---- the graph as a value ---------------------------------------------------------

TEST(ErrorGraph, G1_AReservedProvisionalIdIsTheNextIdAndMakesNoNodeUntilMaterialized) {
  // The plain launch's provisional failure (device.cpp): minted, but no
  // node unless the scope claims. The id is the one insert_provisional()
  // would have given; the node, once made, is exactly a fresh provisional.
  ErrorGraph graph;
  const FailureId before = graph.insert(Error::launch("an older failure"));
  const std::optional<FailureId> reserved = graph.reserve_provisional();
  ASSERT_TRUE(reserved.has_value());
  EXPECT_EQ(reserved->raw(), before.raw() + 1);
  EXPECT_EQ(graph.next_id().raw(), reserved->raw() + 1);
  EXPECT_EQ(graph.size(), 1u);
  EXPECT_FALSE(graph.contains(*reserved));
  EXPECT_NO_THROW(graph.check_invariants());
  graph.materialize_provisional(*reserved);
  EXPECT_EQ(graph.size(), 2u);
  expect_fresh_provisional(graph, *reserved);
  EXPECT_NO_THROW(graph.check_invariants());
  // A reservation never claimed leaves nothing behind, and its id is used
  // up: the next node gets the one after it (G1: never reused).
  const std::optional<FailureId> unused = graph.reserve_provisional();
  ASSERT_FALSE(unused.has_value()); // Both inline slots hold a node now.
  graph.prune(*reserved);
  const std::optional<FailureId> dropped = graph.reserve_provisional();
  ASSERT_TRUE(dropped.has_value());
  EXPECT_EQ(graph.insert_provisional().raw(), dropped->raw() + 1);
}

TEST(ErrorGraph, G1_AReservationIsRefusedWithoutAVacantInlineSlotAndChangesNothing) {
  ErrorGraph graph;
  const FailureId first = graph.insert(Error::launch("first"));
  const FailureId second = graph.insert(Error::launch("second"));
  const FailureId next = graph.next_id();
  EXPECT_FALSE(graph.reserve_provisional().has_value());
  EXPECT_EQ(graph.reserve_provisional_raw(), 0u); // The launch path's form: 0 for none.
  EXPECT_EQ(graph.next_id(), next);
  EXPECT_EQ(graph.size(), 2u);
  EXPECT_TRUE(graph.contains(first));
  EXPECT_TRUE(graph.contains(second));
}

TEST(ErrorGraph, G1_TheRawReservationIsTheNextIdMakesNoNodeAndCanBeMaterialized) {
  // reserve_provisional_raw() is what the plain launch calls (device.cpp).
  // Checked against what the graph says on its own, not against
  // reserve_provisional() (which is built on it): each reservation is the
  // id next_id() named, never 0, advances next_id() by one and makes no
  // node; the newest can still be made a fresh provisional (G1 order).
  ErrorGraph graph;
  std::uint64_t raw = 0;
  for (int round = 0; round < 3; ++round) {
    const FailureId expected = graph.next_id();
    raw = graph.reserve_provisional_raw();
    EXPECT_NE(raw, 0u);
    EXPECT_EQ(raw, expected.raw());
    EXPECT_EQ(graph.next_id().raw(), raw + 1);
    EXPECT_EQ(graph.size(), 0u);
    EXPECT_FALSE(graph.contains(FailureId::from_raw(raw)));
  }
  graph.materialize_provisional(FailureId::from_raw(raw));
  expect_fresh_provisional(graph, FailureId::from_raw(raw));
  EXPECT_EQ(graph.insert_provisional().raw(), raw + 1);
  EXPECT_NO_THROW(graph.check_invariants());
}

TEST(ErrorGraph, G1_MaterializingAnythingButTheNewestUnmadeReservationThrowsAndChangesNothing) {
  ErrorGraph graph;
  const std::optional<FailureId> older = graph.reserve_provisional();
  ASSERT_TRUE(older.has_value());
  const std::optional<FailureId> newest = graph.reserve_provisional();
  ASSERT_TRUE(newest.has_value());
  // Not the newest id: another may have been inserted after it (G1 order).
  EXPECT_THROW(graph.materialize_provisional(*older), std::logic_error);
  EXPECT_EQ(graph.size(), 0u);
  graph.materialize_provisional(*newest);
  // Made already: a second node with the same id would break G1.
  EXPECT_THROW(graph.materialize_provisional(*newest), std::logic_error);
  EXPECT_EQ(graph.size(), 1u);
  // Never minted.
  EXPECT_THROW(graph.materialize_provisional(graph.next_id()), std::logic_error);
  EXPECT_EQ(graph.size(), 1u);
  EXPECT_NO_THROW(graph.check_invariants());
}

TEST(ErrorGraph, G1_AMovedGraphKeepsItsNodesAndIdsAndTheSourceIsEmptyAndUsable) {
  ErrorGraph graph;
  Taint taint;
  const FailureId older = graph.insert(Error::launch("older"));
  const FailureId newer = graph.insert(Error::launch("newer"));
  taint.taint(r(0, 10), older, graph);
  taint.taint(r(10, 20), newer, graph);

  ErrorGraph moved(std::move(graph));
  EXPECT_EQ(moved.size(), 2u);
  EXPECT_EQ(moved.tags(older), 1u);
  EXPECT_EQ(moved.tags(newer), 1u);
  EXPECT_EQ(moved.next_id(), id(3));
  EXPECT_NO_THROW(moved.check_invariants());

  // The source is a valid graph with nothing in it.
  EXPECT_TRUE(graph.empty()); // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(graph.size(), 0u);
  EXPECT_FALSE(graph.contains(older));
  EXPECT_NO_THROW(graph.check_invariants());
  const FailureId fresh = graph.insert(Error::launch("fresh"));
  EXPECT_TRUE(graph.contains(fresh));
  graph.prune(fresh);

  taint.clear(moved);
  EXPECT_TRUE(moved.empty());
}

TEST(ErrorGraph, G1_AMoveAssignedGraphTakesTheSourcesNodesAndLeavesItEmpty) {
  ErrorGraph source;
  ErrorGraph target;
  Taint taint;
  const FailureId older = source.insert(Error::launch("older"));
  const FailureId newer = source.insert(Error::launch("newer"));
  taint.taint(r(0, 10), older, source);
  taint.taint(r(10, 20), newer, source);
  const auto before = testing::snapshot(source, {&taint});

  target = std::move(source);
  EXPECT_EQ(testing::snapshot(target, {&taint}), before);
  EXPECT_TRUE(source.empty()); // NOLINT(bugprone-use-after-move)
  EXPECT_FALSE(source.contains(older));
  EXPECT_NO_THROW(source.check_invariants());
  EXPECT_NO_THROW(target.check_invariants());

  taint.clear(target);
  EXPECT_TRUE(target.empty());
}

// ---- N1: the NeverWritten slot --------------------------------------------------
// The graph keeps the NeverWritten node in a slot of its own so that a fresh
// buffer's claim and first write mint and end it cheaply. These pin that the
// slot is a storage detail: ids, tags, removal, prune, replace, skips and
// moves behave exactly as for any node.

TEST(ErrorGraph, N1_TheNeverWrittenNodeTakesTheNextIdAndEndsAtItsLastUntag) {
  ErrorGraph graph;
  const FailureId provisional = graph.insert_provisional();
  const FailureId node = graph.insert_never_written();
  EXPECT_EQ(node, id(2)); // G1: the next id, whatever slot it lands in.
  EXPECT_EQ(graph.never_written_slot(), 2u);
  EXPECT_EQ(graph.size(), 2u);
  EXPECT_EQ(*graph.error(node), Error::never_written());
  Taint a;
  Taint b;
  a.taint(r(0, 8), node, graph);
  b.taint(r(0, 4), node, graph);
  EXPECT_EQ(graph.tags(node), 2u);
  graph.prune(node); // G5: a carried node is never pruned.
  EXPECT_TRUE(graph.contains(node));
  a.written(r(0, 8), graph);
  EXPECT_TRUE(graph.contains(node)); // b still carries it (R1).
  b.written(r(0, 4), graph);
  EXPECT_FALSE(graph.contains(node)); // G3: gone with its last carrier.
  EXPECT_EQ(graph.never_written_slot(), 0u);
  EXPECT_EQ(graph.size(), 1u);
  EXPECT_NO_THROW(graph.check_invariants());

  const FailureId next = graph.insert_never_written();
  EXPECT_EQ(next, id(3)); // G1: never reused.
  EXPECT_EQ(*graph.error(next), Error::never_written());
  graph.prune(next); // Untagged: prune removes it like any node.
  EXPECT_FALSE(graph.contains(next));
  graph.prune(provisional);
  EXPECT_TRUE(graph.empty());
  EXPECT_NO_THROW(graph.check_invariants());
}

TEST(ErrorGraph, N1_TagNeverWrittenMintsTheNodeWithItsFirstTagAndThenOnlyTagsIt) {
  // The fresh buffer's claim (NeverWrittenClaim) mints and tags in one step,
  // and the carrier stores its claim with no graph call (claim_tagged):
  // the counts must come out as insert_never_written() + tag() give them.
  ErrorGraph graph;
  const FailureId provisional = graph.insert_provisional();
  Taint a;
  Taint b;
  const FailureId node = graph.tag_never_written();
  a.claim_tagged(r(0, 8), node);
  EXPECT_EQ(node, id(2)); // G1: the next id.
  EXPECT_EQ(graph.never_written_slot(), 2u);
  EXPECT_EQ(graph.size(), 2u);
  EXPECT_EQ(graph.tags(node), 1u);
  EXPECT_EQ(*graph.error(node), Error::never_written());
  EXPECT_EQ(graph.tag_never_written(), node); // Lives: tagged, not minted.
  b.claim_tagged(r(0, 4), node);
  EXPECT_EQ(graph.tags(node), 2u);
  const std::array<const Taint*, 2> carriers{&a, &b};
  EXPECT_NO_THROW(check_refcounts(graph, carriers, std::array{provisional}));
  a.clear(graph);
  b.clear(graph);
  EXPECT_FALSE(graph.contains(node)); // G3: gone with its last carrier.
  EXPECT_EQ(graph.never_written_slot(), 0u);

  // After a G4 replace on the node, the next mint is NeverWritten again.
  const FailureId second = graph.tag_never_written();
  a.claim_tagged(r(0, 2), second);
  EXPECT_EQ(second, id(3)); // G1: never reused.
  graph.replace(second, Error::launch("replaced"));
  a.clear(graph);
  const FailureId third = graph.tag_never_written();
  b.claim_tagged(r(0, 2), third);
  EXPECT_EQ(*graph.error(third), Error::never_written());
  EXPECT_EQ(graph.tags(third), 1u);
  b.clear(graph);
  graph.prune(provisional);
  EXPECT_TRUE(graph.empty());
  EXPECT_NO_THROW(graph.check_invariants());
}

TEST(ErrorGraph, N1_ASecondNeverWrittenNodeWhileTheSlotIsTakenIsAnOrdinaryNode) {
  ErrorGraph graph;
  const FailureId first = graph.insert_never_written();
  const FailureId second = graph.insert_never_written(); // A second manager on this graph.
  EXPECT_NE(first, second);
  EXPECT_EQ(graph.never_written_slot(), first.raw());
  EXPECT_EQ(*graph.error(second), Error::never_written());
  Taint carrier;
  carrier.taint(r(0, 4), second, graph);
  carrier.taint(r(4, 8), first, graph);
  EXPECT_EQ(graph.size(), 2u);
  EXPECT_NO_THROW(graph.check_invariants());
  carrier.clear(graph);
  EXPECT_TRUE(graph.empty());
  // The general slot the second one used goes back to TornDown for the
  // provisional failures that reuse it.
  const FailureId provisional = graph.insert_provisional();
  EXPECT_EQ(*graph.error(provisional), Error::torn_down());
  graph.prune(provisional);
  EXPECT_TRUE(graph.empty());
}

TEST(ErrorGraph, N1_AReplacedOrSkippedNeverWrittenNodeLeavesNothingBehindInTheSlot) {
  ErrorGraph graph;
  const FailureId node = graph.insert_never_written();
  Taint carrier;
  carrier.taint(r(0, 4), node, graph);
  graph.skipped(node, skip("reader", 1, {2}));
  graph.replace(node, Error::launch("replaced")); // G4 on it, however unusual.
  EXPECT_EQ(*graph.error(node), Error::launch("replaced"));
  EXPECT_EQ(graph.skips_recorded(node), 1u);
  carrier.clear(graph);
  EXPECT_TRUE(graph.empty());
  const FailureId next = graph.insert_never_written();
  EXPECT_EQ(*graph.error(next), Error::never_written()); // Not the replaced error.
  EXPECT_EQ(graph.skips_recorded(next), 0u);             // Not the old skip log.
  graph.prune(next);
  EXPECT_TRUE(graph.empty());
}

TEST(ErrorGraph, N1_AMovedGraphTakesTheNeverWrittenNodeAndTheSourceMintsItAfresh) {
  ErrorGraph source;
  Taint carrier;
  const FailureId node = source.insert_never_written();
  carrier.taint(r(0, 4), node, source);
  ErrorGraph target(std::move(source));
  EXPECT_EQ(target.never_written_slot(), node.raw());
  EXPECT_EQ(target.tags(node), 1u);
  EXPECT_EQ(*target.error(node), Error::never_written());
  EXPECT_EQ(source.never_written_slot(), 0u); // NOLINT(bugprone-use-after-move)
  const FailureId fresh = source.insert_never_written();
  EXPECT_EQ(*source.error(fresh), Error::never_written());
  EXPECT_GT(fresh.raw(), node.raw()); // G1: it goes on after the ids it used.
  source.prune(fresh);
  EXPECT_TRUE(source.empty());
  EXPECT_NO_THROW(target.check_invariants());
  carrier.clear(target);
  EXPECT_TRUE(target.empty());
}

} // namespace
} // namespace taintpool
