// Pins: what the engine does with input it must refuse — inverted and
// overflowing ranges, the zero id, offsets at the top of the 64-bit space,
// and every contract violation of §3.2/§3.3 (tag or untag of a missing node,
// untag below zero, a taint with a dead failure, a skip or report of a gone
// failure, move-assigning over a carrier, a carrier destroyed with claims).
//
// Why: the engine sits under the pool and the device; a caller bug that
// reaches it must come back as a clear exception naming the problem, and must
// not corrupt the refcounts on the way out, or a later read would trust a
// stale buffer. Every test snapshots the whole observable state before the bad
// call and compares after; the message is checked for the words that name
// the problem. The one exception, by design, is a carrier destroyed while
// holding claims: that aborts (death test), since no exception could give
// the tags back.
#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/report.hpp>
#include <taintpool/taint.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine_snapshot.hpp"

namespace taintpool {
namespace {

using testing::Claims;
using testing::claims_of;
using testing::snapshot;

ByteRange r(std::uint64_t begin, std::uint64_t end) {
  return ByteRange::of(begin, end);
}

/// Runs `bad`, which must throw E with every one of `words` in its message.
template <class E, class Fn>
void expect_throw_naming(Fn&& bad, std::initializer_list<std::string> words) {
  try {
    bad();
    ADD_FAILURE() << "no exception";
  } catch (const E& error) {
    const std::string what = error.what();
    for (const std::string& word : words) {
      EXPECT_NE(what.find(word), std::string::npos) << "\"" << word << "\" not in: " << what;
    }
  } catch (const std::exception& error) {
    ADD_FAILURE() << "wrong exception type: " << error.what();
  }
}

/// A graph with a live carried failure, a dead one, a provisional one with
/// no tag, and three carriers: clean, inline (one range), spilled.
struct Engine {
  ErrorGraph graph;
  Taint clean;
  Taint inline_one;
  Taint spilled;
  FailureId carried = graph.insert(Error::launch("carried"));
  FailureId dead = graph.insert(Error::launch("dead"));
  FailureId held = graph.insert(Error::torn_down());

  Engine() {
    inline_one.taint(r(0, 100), carried, graph);
    spilled.taint(r(0, 100), carried, graph);
    spilled.written(r(40, 60), graph);
    graph.prune(dead);
  }
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine() {
    clean.clear(graph);
    inline_one.clear(graph);
    spilled.clear(graph);
  }

  [[nodiscard]] testing::EngineSnapshot state() const {
    return snapshot(graph, {&clean, &inline_one, &spilled});
  }
};

// ---- ranges and ids ----------------------------------------------------------------

TEST(BadInput, AnInvertedRangeIsRejectedNamingBothBounds) {
  expect_throw_naming<std::invalid_argument>([] { static_cast<void>(ByteRange::of(7, 3)); },
                                             {"begin 7 > end 3"});
  expect_throw_naming<std::invalid_argument>(
      [] { static_cast<void>(ByteRange::of(UINT64_MAX, 0)); }, {"begins after it ends"});
}

TEST(BadInput, AnOverflowingRangeIsRejectedNamingOffsetAndSize) {
  expect_throw_naming<std::overflow_error>(
      [] { static_cast<void>(ByteRange::sized(UINT64_MAX, 1)); }, {"overflows 64 bits", "size 1"});
  expect_throw_naming<std::overflow_error>(
      [] { static_cast<void>(ByteRange::sized(1, UINT64_MAX)); }, {"offset 1"});
}

TEST(BadInput, TheZeroIdIsRejectedForBothKindsOfId) {
  expect_throw_naming<std::invalid_argument>([] { static_cast<void>(FailureId::from_raw(0)); },
                                             {"failure id 0"});
  expect_throw_naming<std::invalid_argument>([] { static_cast<void>(AllocationId::from_raw(0)); },
                                             {"allocation id 0"});
}

TEST(BadInput, P3_AnAllocationIdIsBuiltFromItsSpaceAndNumberOrRefusedWhenEitherDoesNotFit) {
  // The inverse of allocation_space / allocation_number, at both ends of
  // both fields.
  for (const std::uint32_t space : {0u, 1u, 7u, allocation_spaces - 1}) {
    for (const std::uint64_t number :
         {std::uint64_t{1}, std::uint64_t{12345}, allocation_number_mask}) {
      const AllocationId id = allocation_id(space, number);
      EXPECT_EQ(allocation_space(id), space);
      EXPECT_EQ(allocation_number(id), number);
    }
  }
  static_assert(allocation_id(0, 1).raw() == 1);
  expect_throw_naming<std::invalid_argument>([] { static_cast<void>(allocation_id(3, 0)); },
                                             {"number 0", "space 3"});
  expect_throw_naming<std::invalid_argument>(
      [] { static_cast<void>(allocation_id(0, allocation_number_mask + 1)); }, {"space 0"});
  expect_throw_naming<std::invalid_argument>(
      [] { static_cast<void>(allocation_id(allocation_spaces, 1)); }, {"number 1", "space 4096"});
}

// ---- empty ranges and the top of the offset space -------------------------------------

TEST(BadInput, T1_T2_EmptyRangesAnywhereChangeNothingAndNeedNoLiveFailure) {
  Engine engine;
  const auto before = engine.state();
  for (const ByteRange empty : {r(0, 0), r(50, 50), r(UINT64_MAX, UINT64_MAX)}) {
    engine.clean.taint(empty, engine.carried, engine.graph);
    engine.inline_one.taint(empty, engine.dead, engine.graph); // T1: empty r is nothing
    engine.spilled.written(empty, engine.graph);
    engine.inline_one.written(empty, engine.graph);
  }
  EXPECT_EQ(engine.state(), before);
}

TEST(BadInput, T1_T5_ClaimsAtTheTopOfTheOffsetSpaceSplitAndFuseWithoutWrapping) {
  ErrorGraph graph;
  Taint taint;
  const FailureId f = graph.insert(Error::launch("top"));
  const FailureId g = graph.insert(Error::launch("other"));
  taint.taint(r(UINT64_MAX - 10, UINT64_MAX - 5), f, graph);
  taint.taint(r(UINT64_MAX - 5, UINT64_MAX), f, graph);
  EXPECT_EQ(claims_of(taint), (Claims{{f, r(UINT64_MAX - 10, UINT64_MAX)}}));
  taint.written(r(UINT64_MAX - 7, UINT64_MAX - 6), graph);
  EXPECT_EQ(claims_of(taint),
            (Claims{{f, r(UINT64_MAX - 10, UINT64_MAX - 7)}, {f, r(UINT64_MAX - 6, UINT64_MAX)}}));
  taint.taint(r(UINT64_MAX - 1, UINT64_MAX), g, graph);
  taint.taint(r(0, 1), g, graph);
  EXPECT_EQ(taint.failure(r(UINT64_MAX - 1, UINT64_MAX)), g);
  EXPECT_EQ(taint.failures(r(0, UINT64_MAX)), (std::vector<FailureId>{f, g}));
  EXPECT_NO_THROW(taint.check_invariants());
  taint.written(r(0, UINT64_MAX), graph);
  EXPECT_TRUE(taint.is_clean());
  EXPECT_TRUE(graph.empty());
}

// ---- graph contract violations ---------------------------------------------------------

TEST(BadInput, G2_TaggingAMissingFailureThrowsNamingItAndChangesNothing) {
  Engine engine;
  const auto before = engine.state();
  expect_throw_naming<std::logic_error>([&] { engine.graph.tag(engine.dead); },
                                        {"tag", "failure 2", "has no node"});
  expect_throw_naming<std::logic_error>([&] { engine.graph.tag(FailureId::from_raw(99)); },
                                        {"failure 99", "has no node"});
  EXPECT_EQ(engine.state(), before);
}

TEST(BadInput, G3_UntaggingAMissingFailureThrowsNamingItAndChangesNothing) {
  Engine engine;
  const auto before = engine.state();
  expect_throw_naming<std::logic_error>([&] { engine.graph.untag(engine.dead); },
                                        {"untag", "failure 2", "has no node"});
  EXPECT_EQ(engine.state(), before);
}

TEST(BadInput, G3_UntaggingBelowZeroThrowsAndKeepsTheNode) {
  Engine engine;
  const auto before = engine.state();
  expect_throw_naming<std::logic_error>([&] { engine.graph.untag(engine.held); },
                                        {"untag", "failure 3", "no tags left"});
  EXPECT_TRUE(engine.graph.contains(engine.held))
      << "an untagged node is not removed by a bad untag";
  EXPECT_EQ(engine.state(), before);
  engine.graph.prune(engine.held);
}

TEST(BadInput, G7_ASkipRecordedOnAGoneFailureThrowsAndChangesNothing) {
  Engine engine;
  const auto before = engine.state();
  expect_throw_naming<std::logic_error>(
      [&] {
        engine.graph.skipped(engine.dead,
                             {"linear", AllocationId::from_raw(1), {AllocationId::from_raw(2)}});
      },
      {"skipped", "failure 2", "has no node"});
  EXPECT_EQ(engine.state(), before);
}

TEST(BadInput, G8_AReportOfAGoneFailureThrowsNamingIt) {
  Engine engine;
  const auto before = engine.state();
  expect_throw_naming<std::logic_error>(
      [&] { static_cast<void>(engine.graph.report(engine.dead, AllocationId::from_raw(1))); },
      {"report", "failure 2", "has no node"});
  const std::vector<std::pair<FailureId, AllocationId>> claims{
      {engine.carried, AllocationId::from_raw(1)}, {engine.dead, AllocationId::from_raw(2)}};
  expect_throw_naming<std::logic_error>([&] { static_cast<void>(engine.graph.reports(claims)); },
                                        {"failure 2"});
  EXPECT_EQ(engine.state(), before);
}

// ---- taint contract violations --------------------------------------------------------

TEST(BadInput, T1_TaintingWithADeadFailureThrowsAndChangesNothingWhateverTheShape) {
  Engine engine;
  const auto before = engine.state();
  for (Taint* taint : {&engine.clean, &engine.inline_one, &engine.spilled}) {
    // Overlapping, inside, and disjoint from the existing claims.
    for (const ByteRange range : {r(0, 100), r(45, 55), r(200, 300)}) {
      expect_throw_naming<std::logic_error>([&] { taint->taint(range, engine.dead, engine.graph); },
                                            {"failure 2", "has no node"});
      EXPECT_EQ(engine.state(), before) << "after tainting " << range;
    }
  }
}

TEST(BadInput, T1_TaintingWithAnIdNeverMintedThrowsAndChangesNothing) {
  Engine engine;
  const auto before = engine.state();
  expect_throw_naming<std::logic_error>(
      [&] { engine.spilled.taint(r(0, 10), FailureId::from_raw(1000), engine.graph); },
      {"failure 1000"});
  expect_throw_naming<std::logic_error>(
      [&] { engine.clean.taint(r(0, 10), FailureId::from_raw(1000), engine.graph); },
      {"failure 1000"});
  EXPECT_EQ(engine.state(), before);
}

TEST(BadInput, MoveAssigningOverACarrierThrowsAndKeepsBothTaints) {
  Engine engine;
  const auto before = engine.state();
  expect_throw_naming<std::logic_error>([&] { engine.inline_one = std::move(engine.spilled); },
                                        {"move-assigning", "clear()"});
  expect_throw_naming<std::logic_error>([&] { engine.spilled = std::move(engine.inline_one); },
                                        {"move-assigning"});
  EXPECT_EQ(engine.state(), before);
}

TEST(BadInput, SelfMoveAssignmentOfACarrierChangesNothing) {
  Engine engine;
  const auto before = engine.state();
  Taint& alias = engine.spilled;
  engine.spilled = std::move(alias);
  EXPECT_EQ(engine.state(), before);
}

// review1: a visitor of a failure's skip records that removed a node (the
// visited one's last untag, a prune, a clear) freed the records under the
// visit, which went on reading them (ASan: heap-use-after-free). The visit
// now stops with a logic_error after the visitor returns; the visitor's own
// record is its to stop using.
TEST(BadInput, G7_AVisitorThatRemovesANodeIsStoppedLoudlyBeforeAFreedRecordIsRead) {
  const auto record = [](const char* kernel) {
    return SkipRecord{kernel, AllocationId::from_raw(1), {AllocationId::from_raw(2)}};
  };
  struct Case {
    const char* how;
    int extra_nodes; // Live nodes inserted after the visited one: 2 puts it in the table.
    bool carried;    // Whether a carrier holds the visited one (else it has no tag, R3).
    void (*remove)(ErrorGraph&, Taint&, FailureId);
  };
  const Case cases[] = {
      {"its only carrier cleared", 0, true,
       [](ErrorGraph& graph, Taint& carrier, FailureId) { carrier.clear(graph); }},
      {"its only carrier cleared, in the table", 2, true,
       [](ErrorGraph& graph, Taint& carrier, FailureId) { carrier.clear(graph); }},
      {"a prune of it, untagged", 0, false,
       [](ErrorGraph& graph, Taint&, FailureId visited) { graph.prune(visited); }},
      {"a clear of the graph, nothing carried", 2, false,
       [](ErrorGraph& graph, Taint&, FailureId) { graph.clear(); }},
  };
  for (const Case& each : cases) {
    ErrorGraph graph;
    Taint carrier;
    const FailureId visited = graph.insert(Error::launch("root"));
    if (each.carried) {
      carrier.taint(r(0, 8), visited, graph);
    }
    std::vector<FailureId> others;
    for (int extra = 0; extra < each.extra_nodes; ++extra) {
      others.push_back(graph.insert(Error::launch("other")));
    }
    for (const char* kernel : {"a", "b", "c"}) {
      graph.skipped(visited, record(kernel));
    }
    int visits = 0;
    expect_throw_naming<std::logic_error>(
        [&] {
          graph.for_each_skip_record(visited, [&](const SkipRecord&) {
            ++visits;
            each.remove(graph, carrier, visited);
          });
        },
        {"for_each_skip_record", "removed a node", to_string(visited)});
    EXPECT_EQ(visits, 1) << each.how;
    EXPECT_FALSE(graph.contains(visited)) << each.how;
    for (const FailureId other : others) {
      graph.prune(other);
    }
  }
  // A visitor that changes nothing sees every record, oldest first.
  ErrorGraph graph;
  const FailureId root = graph.insert(Error::launch("root"));
  for (const char* kernel : {"a", "b", "c"}) {
    graph.skipped(root, record(kernel));
  }
  std::string order;
  graph.for_each_skip_record(root, [&](const SkipRecord& each) { order += each.kernel; });
  EXPECT_EQ(order, "abc");
  graph.prune(root);
}

TEST(BadInputDeathTest, ACarrierDestroyedWithClaimsAbortsNamingTheLeak) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        ErrorGraph graph;
        const FailureId f = graph.insert(Error::launch("leaked"));
        Taint taint;
        taint.taint(r(0, 10), f, graph);
      },
      "destroyed while it still held claims");
  EXPECT_DEATH(
      {
        ErrorGraph graph;
        const FailureId f = graph.insert(Error::launch("leaked"));
        Taint taint;
        taint.taint(r(0, 10), f, graph);
        taint.written(r(3, 4), graph); // spilled
        static_cast<void>(taint.is_spilled());
      },
      "Call clear\\(\\) before the carrier goes away");
}

TEST(BadInput, ACleanCarrierIsDestroyedQuietly) {
  ErrorGraph graph;
  const FailureId f = graph.insert(Error::launch("f"));
  {
    Taint taint;
    taint.taint(r(0, 10), f, graph);
    taint.clear(graph);
  } // no abort
  EXPECT_TRUE(graph.empty());
}

} // namespace
} // namespace taintpool
