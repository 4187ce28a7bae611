// Pins: the engine's own shape checkers — Taint::check_invariants (T5, T6),
// ErrorGraph::check_invariants (G1, G7) and the id table under both — catch
// every corruption they name, and the small public pieces no other suite
// calls (kind names, printing) say what they promise.
//
// Why: the fuzzers, the stateful tests and the exhaustive tests trust these
// checkers to turn a broken shape into a failure. A checker that can never
// fire would let every one of them pass over corrupted state, so each
// branch gets a state that trips it. The public API cannot build such
// states (that is the point of it), so these tests are white-box: they
// write a Taint's object representation (three words: failure, then the
// inline claim or the spilled array, taint.hpp), or reach a graph node
// through the address of its error. Every test puts the state back before
// the objects are destroyed.
#include <taintpool/byte_range.hpp>
#include <taintpool/detail/failure_table.hpp>
#include <taintpool/detail/id_table.hpp>
#include <taintpool/error.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/exception.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/report.hpp>
#include <taintpool/taint.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace taintpool {
namespace {

using detail::ClaimSegment;

// ------------------------------------------------------------ Taint images

/// A Taint's three words as taint.hpp lays them out: the inline claim's
/// failure (0 when spilled or clean), then either {begin, end} or
/// {segments, size, capacity}.
struct InlineImage {
  std::uint64_t failure;
  std::uint64_t begin;
  std::uint64_t end;
};
struct SpilledImage {
  std::uint64_t failure;
  ClaimSegment* data;
  std::uint32_t size;
  std::uint32_t capacity;
};
static_assert(std::is_standard_layout_v<Taint>);
static_assert(sizeof(InlineImage) == sizeof(Taint) && sizeof(SpilledImage) == sizeof(Taint));

template <class Image>
void write_image(Taint& taint, const Image& image) {
  std::memcpy(static_cast<void*>(&taint), &image, sizeof(Taint));
}

/// A Taint holding a hand-made shape; clean again when the test ends, so
/// its destructor neither aborts nor frees the test's array.
struct CorruptTaint {
  Taint taint;
  CorruptTaint() = default;
  CorruptTaint(const CorruptTaint&) = delete;
  CorruptTaint& operator=(const CorruptTaint&) = delete;
  ~CorruptTaint() { write_image(taint, SpilledImage{0, nullptr, 0, 0}); }
};

void expect_shape_violation(const Taint& taint, const std::string& words) {
  try {
    taint.check_invariants();
    ADD_FAILURE() << "check_invariants() accepted a taint whose " << words;
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find(words), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("T5/T6"), std::string::npos) << error.what();
  }
}

TEST(TaintChecks, T5_AnEmptyOrInvertedInlineClaimIsCaught) {
  if (!Taint::inline_claims) {
    GTEST_SKIP() << "built without inline claims";
  }
  CorruptTaint corrupt;
  write_image(corrupt.taint, InlineImage{5, 7, 7});
  expect_shape_violation(corrupt.taint, "inline claim is empty or inverted");
  write_image(corrupt.taint, InlineImage{5, 9, 3});
  expect_shape_violation(corrupt.taint, "inline claim is empty or inverted");
}

TEST(TaintChecks, T6_ACleanTaintRecordingASizeOrCapacityIsCaught) {
  CorruptTaint corrupt;
  write_image(corrupt.taint, SpilledImage{0, nullptr, 1, 0});
  expect_shape_violation(corrupt.taint, "clean taint records a size or capacity");
  write_image(corrupt.taint, SpilledImage{0, nullptr, 0, 4});
  expect_shape_violation(corrupt.taint, "clean taint records a size or capacity");
}

TEST(TaintChecks, T6_ASpilledArrayTooSmallToNeedTheHeapIsCaught) {
  ClaimSegment segments[4] = {{3, 0, 8}};
  CorruptTaint corrupt;
  write_image(corrupt.taint, SpilledImage{0, segments, Taint::inline_claims ? 1u : 0u, 4});
  expect_shape_violation(corrupt.taint, "belong inline");
}

TEST(TaintChecks, T6_ASizeAboveTheCapacityIsCaught) {
  ClaimSegment segments[3] = {{3, 0, 8}, {4, 8, 16}, {3, 20, 24}};
  CorruptTaint corrupt;
  write_image(corrupt.taint, SpilledImage{0, segments, 3, 2});
  expect_shape_violation(corrupt.taint, "size exceeds capacity");
}

TEST(TaintChecks, T5_ASegmentOfFailureZeroIsCaught) {
  ClaimSegment segments[2] = {{3, 0, 8}, {0, 8, 16}};
  CorruptTaint corrupt;
  write_image(corrupt.taint, SpilledImage{0, segments, 2, 2});
  expect_shape_violation(corrupt.taint, "names failure 0");
}

TEST(TaintChecks, T5_AnEmptyOrInvertedSegmentIsCaught) {
  ClaimSegment segments[2] = {{3, 0, 8}, {4, 16, 16}};
  CorruptTaint corrupt;
  write_image(corrupt.taint, SpilledImage{0, segments, 2, 2});
  expect_shape_violation(corrupt.taint, "segment 1 is empty or inverted");
}

TEST(TaintChecks, T5_OverlappingOrUnsortedSegmentsAreCaught) {
  ClaimSegment overlapping[2] = {{3, 0, 10}, {4, 8, 16}};
  ClaimSegment unsorted[2] = {{3, 20, 30}, {4, 0, 8}};
  CorruptTaint corrupt;
  write_image(corrupt.taint, SpilledImage{0, overlapping, 2, 2});
  expect_shape_violation(corrupt.taint, "segments 0 and 1 overlap or are out of order");
  write_image(corrupt.taint, SpilledImage{0, unsorted, 2, 2});
  expect_shape_violation(corrupt.taint, "segments 0 and 1 overlap or are out of order");
}

TEST(TaintChecks, T5_TouchingRangesOfOneFailureThatWereNotFusedAreCaught) {
  ClaimSegment segments[2] = {{3, 0, 8}, {3, 8, 16}};
  CorruptTaint corrupt;
  write_image(corrupt.taint, SpilledImage{0, segments, 2, 2});
  expect_shape_violation(corrupt.taint, "touch at 8 and were not fused");
}

TEST(TaintChecks, T5_AWellFormedHandMadeShapePasses) {
  // The images above are read the way the real layout is: the same writer
  // with a good shape must pass, or the tests above would prove nothing.
  ClaimSegment segments[3] = {{3, 0, 8}, {4, 8, 16}, {3, 20, 24}};
  CorruptTaint corrupt;
  write_image(corrupt.taint, SpilledImage{0, segments, 3, 3});
  EXPECT_NO_THROW(corrupt.taint.check_invariants());
  EXPECT_TRUE(corrupt.taint.is_spilled());
  EXPECT_EQ(corrupt.taint.claim_count(), 2u);
}

// ------------------------------------------------------------ graph nodes

/// The node that holds `failure`, found through the address of its error
/// (ErrorGraph::error points into the node).
detail::FailureNode& node_of(ErrorGraph& graph, FailureId failure) {
  detail::FailureNode probe;
  const auto offset =
      reinterpret_cast<const char*>(&probe.error) - reinterpret_cast<const char*>(&probe);
  const Error* error = graph.error(failure);
  EXPECT_NE(error, nullptr);
  return *reinterpret_cast<detail::FailureNode*>(
      const_cast<char*>(reinterpret_cast<const char*>(error)) - offset);
}

void expect_graph_violation(const ErrorGraph& graph, const std::string& words) {
  try {
    graph.check_invariants();
    ADD_FAILURE() << "check_invariants() accepted a graph whose " << words;
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find(words), std::string::npos) << error.what();
  }
}

TEST(ErrorGraphChecks, G1_ACountThatDisagreesWithTheLiveNodesIsCaught) {
  ErrorGraph graph;
  const FailureId newest = graph.insert(Error::generic("newest"));
  detail::FailureNode& node = node_of(graph, newest);
  node.id = 0; // The newest-node slot looks vacant, the count says one.
  expect_graph_violation(graph, "size() is 1 but 0 nodes are live");
  node.id = newest.raw();
  EXPECT_NO_THROW(graph.check_invariants());
}

TEST(ErrorGraphChecks, G1_ANodeWithAnIdNeverMintedIsCaught) {
  ErrorGraph graph;
  const FailureId newest = graph.insert(Error::generic("newest"));
  detail::FailureNode& node = node_of(graph, newest);
  node.id = 40;
  expect_graph_violation(graph, "failure 40 was never minted");
  node.id = newest.raw();
  EXPECT_NO_THROW(graph.check_invariants());
}

TEST(ErrorGraphChecks, G1_TwoSlotsHoldingOneIdAreCaught) {
  ErrorGraph graph;
  const FailureId older = graph.insert(Error::generic("older"));
  graph.tag(older); // Alive: the next insert takes the other slot.
  const FailureId newest = graph.insert(Error::generic("newest"));
  detail::FailureNode& node = node_of(graph, newest);
  node.id = older.raw(); // Both slots now claim failure 1.
  expect_graph_violation(graph, "failure 1 is held by two nodes");
  node.id = newest.raw();
  EXPECT_NO_THROW(graph.check_invariants());
  graph.untag(older);
}

TEST(ErrorGraphChecks, G1_ASlotHoldingAnIdTheTableHoldsIsCaught) {
  ErrorGraph graph;
  const FailureId first = graph.insert(Error::generic("first"));
  graph.tag(first);
  const FailureId second = graph.insert(Error::generic("second"));
  graph.tag(second);
  // Both slots are taken: the first slot's node (failure 1) moves to the
  // table, and the new one takes its slot.
  const FailureId third = graph.insert(Error::generic("third"));
  detail::FailureNode& node = node_of(graph, third);
  node.id = first.raw();
  expect_graph_violation(graph, "failure 1 is held by two nodes");
  node.id = third.raw();
  EXPECT_NO_THROW(graph.check_invariants());
  graph.untag(first);
  graph.untag(second);
}

TEST(ErrorGraphChecks, G7_ASkipLogKeepingTheWrongNumberOfRecordsIsCaught) {
  ErrorGraph graph;
  const FailureId root = graph.insert(Error::generic("root"));
  graph.skipped(root, SkipRecord{"k", AllocationId::from_raw(1), {AllocationId::from_raw(2)}});
  detail::FailureNode& node = node_of(graph, root);
  ASSERT_NE(node.skips, nullptr);
  node.skips->recorded = 3; // Three counted, one kept, below the cap.
  expect_graph_violation(graph, "keeps 1 skip records, expected 3 (G7)");
  node.skips->recorded = 1;
  EXPECT_NO_THROW(graph.check_invariants());
}

// ------------------------------------------------------------ the id table

struct Entry {
  std::uint64_t id = 0;
  int value = 0;
  Entry() noexcept = default;
  Entry(std::uint64_t key, int payload) noexcept
      : id(key)
      , value(payload) {}
  void vacate() noexcept { id = 0; }
};

void expect_table_violation(const detail::IdTable<Entry>& table, const std::string& words) {
  try {
    table.check_invariants("test table");
    ADD_FAILURE() << "check_invariants() accepted a table whose " << words;
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("test table: " + words), std::string::npos)
        << error.what();
  }
}

TEST(IdTableChecks, ANodeCountThatDisagreesWithTheSlotsIsCaught) {
  detail::IdTable<Entry> table;
  table.insert(Entry(7, 1));
  table.insert(Entry(9, 2));
  Entry* entry = table.find(9);
  ASSERT_NE(entry, nullptr);
  entry->id = 0;
  expect_table_violation(table, "counts 2 nodes, holds 1");
  entry->id = 9;
  EXPECT_NO_THROW(table.check_invariants("test table"));
}

TEST(IdTableChecks, AnIdPresentTwiceOrOffItsProbeChainIsCaught) {
  // Fill a table until two ids share a probe chain, then rename the later
  // one: to its predecessor's id (present twice), or to an id whose home
  // lies after it (unreachable from its home slot).
  constexpr std::uint64_t kIds = 40;
  detail::IdTable<Entry> table;
  for (std::uint64_t id = 1; id <= kIds; ++id) {
    table.insert(Entry(id, 0));
  }
  bool twice = false;
  for (std::uint64_t id = 1; id <= kIds && !twice; ++id) {
    for (std::uint64_t other = 1; other <= kIds && !twice; ++other) {
      if (other == id) {
        continue;
      }
      Entry* entry = table.find(other);
      entry->id = id;
      try {
        table.check_invariants("test table");
      } catch (const std::logic_error& error) {
        twice = std::string(error.what()).find("present twice") != std::string::npos;
      }
      entry->id = other;
    }
  }
  EXPECT_TRUE(twice) << "no renaming made an id present twice";

  bool unreachable = false;
  for (std::uint64_t id = 1; id <= kIds && !unreachable; ++id) {
    for (std::uint64_t alias = 100; alias < 400 && !unreachable; ++alias) {
      Entry* entry = table.find(id);
      entry->id = alias;
      try {
        table.check_invariants("test table");
      } catch (const std::logic_error& error) {
        unreachable =
            std::string(error.what()).find("unreachable from its home slot") != std::string::npos;
      }
      entry->id = id;
    }
  }
  EXPECT_TRUE(unreachable) << "no renaming moved an id off its probe chain";
  EXPECT_NO_THROW(table.check_invariants("test table"));
}

TEST(IdTable, G1_AMovedFromTableIsEmptyAndUsableAndTheTargetKeepsEveryNode) {
  // The graph's cold table and the pool's slice index are members of
  // movable types; a moved-from table must not keep its count while its
  // slots went to the target (a later insert would then probe nothing).
  detail::IdTable<Entry> source;
  for (std::uint64_t id = 1; id <= 20; ++id) {
    source.insert(Entry(id, static_cast<int>(id)));
  }
  detail::IdTable<Entry> target(std::move(source));
  EXPECT_EQ(target.size(), 20u);
  ASSERT_NE(target.find(13), nullptr);
  EXPECT_EQ(target.find(13)->value, 13);
  EXPECT_NO_THROW(target.check_invariants("test table"));

  EXPECT_EQ(source.size(), 0u); // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(source.find(13), nullptr);
  EXPECT_NO_THROW(source.check_invariants("test table"));
  source.insert(Entry(21, 21));
  ASSERT_NE(source.find(21), nullptr);
  EXPECT_EQ(source.size(), 1u);

  detail::IdTable<Entry> assigned;
  assigned.insert(Entry(99, 0));
  assigned = std::move(target);
  EXPECT_EQ(assigned.size(), 20u);
  EXPECT_EQ(assigned.find(99), nullptr);
  EXPECT_EQ(target.size(), 0u); // NOLINT(bugprone-use-after-move)
  EXPECT_NO_THROW(target.check_invariants("test table"));
  EXPECT_NO_THROW(assigned.check_invariants("test table"));
}

// ------------------------------------------------------------ small promises

TEST(ErrorNames, EveryKindHasItsPrintedNameAndAnUnknownValueSaysSo) {
  EXPECT_EQ(name(ErrorKind::Generic), "error");
  EXPECT_EQ(name(ErrorKind::Launch), "launch failed");
  EXPECT_EQ(name(ErrorKind::OutOfMemory), "out of memory");
  EXPECT_EQ(name(ErrorKind::BufferTooBig), "buffer too big");
  EXPECT_EQ(name(ErrorKind::TornDown), "torn down");
  EXPECT_EQ(name(ErrorKind::Unwritten), "unwritten");
  EXPECT_EQ(name(ErrorKind::Skipped), "skipped");
  EXPECT_EQ(name(ErrorKind::NotFound), "not found");
  EXPECT_EQ(name(ErrorKind::InvalidBinding), "invalid binding");
  EXPECT_EQ(name(static_cast<ErrorKind>(200)), "unknown error kind");
}

TEST(ErrorNames, ErrorsAndIdsPrintAsTheirToStringSays) {
  std::ostringstream out;
  out << Error::launch("k: no kernel image") << "|" << Error::torn_down() << "|"
      << FailureId::from_raw(12) << "|" << AllocationId::from_raw(7);
  EXPECT_EQ(out.str(), "launch failed: k: no kernel image|torn down|failure 12|allocation 7");
}

TEST(ErrorNames, AnExceptionCarriesItsErrorAndKind) {
  const Exception exception(Error::invalid_binding("past the end"));
  EXPECT_EQ(exception.kind(), ErrorKind::InvalidBinding);
  EXPECT_EQ(exception.error(), Error::invalid_binding("past the end"));
  EXPECT_STREQ(exception.what(), "invalid binding: past the end");
}

} // namespace
} // namespace taintpool
