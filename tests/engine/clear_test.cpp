// clear() of the failure table (detail::IdTable) and of ErrorGraph: an
// emptied object must answer every call exactly as a freshly constructed
// one does (G1: ids from 1 again; no node found), keeping only its
// capacity. The fuzzers reuse one graph across inputs on the strength of
// this (issue 13), so a clear() that left a node, a count, a skip log or an
// id behind would make one input's state leak into the next.
//
// How: fill an object through every place a node can live (the graph's
// two inline slots, the NeverWritten slot, the table; errors replaced, skip
// logs wrapped), clear it, then drive it and a fresh object with the same
// script and compare everything observable after every step.
#include <taintpool/detail/id_table.hpp>
#include <taintpool/error.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/report.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace taintpool {
namespace {

// ---- detail::IdTable ------------------------------------------------------

/// An IdTable node with a payload whose release can be seen (use_count).
struct Node {
  std::uint64_t id = 0;
  std::shared_ptr<int> payload;

  Node() noexcept = default;
  Node(std::uint64_t key, std::shared_ptr<int> held) noexcept
      : id(key)
      , payload(std::move(held)) {}
  Node(Node&& other) noexcept
      : id(std::exchange(other.id, 0))
      , payload(std::move(other.payload)) {}
  Node& operator=(Node&& other) noexcept {
    id = std::exchange(other.id, 0);
    payload = std::move(other.payload);
    return *this;
  }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node() = default;
  void vacate() noexcept {
    id = 0;
    payload.reset();
  }
};

using Table = detail::IdTable<Node>;

/// Inserts ids 1..n and erases every third: nodes in clusters, shifted back.
void fill(Table& table, std::uint64_t n, const std::shared_ptr<int>& payload) {
  for (std::uint64_t id = 1; id <= n; ++id) {
    table.insert(Node(id, payload));
  }
  for (std::uint64_t id = 3; id <= n; id += 3) {
    table.erase(table.find(id));
  }
}

TEST(IdTable, G10_ClearLeavesATableThatAnswersAsAFreshOneAndKeepsItsSlots) {
  const auto payload = std::make_shared<int>(7);
  Table table;
  fill(table, 100, payload);
  const std::size_t capacity = table.capacity();
  ASSERT_GT(table.size(), 0u);
  ASSERT_GT(payload.use_count(), 1);

  table.clear();

  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(payload.use_count(), 1) << "clear() must release every node's payload";
  EXPECT_EQ(table.capacity(), capacity) << "clear() keeps the slots, so a refill allocates nothing";
  EXPECT_NO_THROW(table.check_invariants("cleared"));
  std::size_t visited = 0;
  table.for_each([&](const Node&) { ++visited; });
  EXPECT_EQ(visited, 0u);

  // The same script on the cleared table and a fresh one: the same answers.
  Table fresh;
  fill(table, 100, payload);
  fill(fresh, 100, payload);
  EXPECT_EQ(table.capacity(), capacity) << "refilled to the old size without growing";
  EXPECT_EQ(table.size(), fresh.size());
  for (std::uint64_t id = 1; id <= 120; ++id) {
    EXPECT_EQ(table.find(id) != nullptr, fresh.find(id) != nullptr) << "id " << id;
  }
  EXPECT_NO_THROW(table.check_invariants("refilled"));
}

TEST(IdTable, G10_ClearOfAnEmptyOrNeverUsedTableIsHarmless) {
  Table never_used;
  never_used.clear();
  EXPECT_EQ(never_used.size(), 0u);
  EXPECT_EQ(never_used.capacity(), 0u);
  EXPECT_EQ(never_used.find(1), nullptr);
  never_used.insert(Node(1, nullptr));
  EXPECT_NE(never_used.find(1), nullptr);
  never_used.clear();
  never_used.clear();
  EXPECT_EQ(never_used.find(1), nullptr);
  EXPECT_NO_THROW(never_used.check_invariants("cleared twice"));
}

// ---- ErrorGraph -----------------------------------------------------------

AllocationId alloc(std::uint64_t raw) {
  return AllocationId::from_raw(raw);
}

SkipRecord record(std::uint64_t needed, std::uint64_t produced) {
  return SkipRecord{"kernel_with_a_name_long_enough_for_the_heap_" + std::to_string(produced),
                    alloc(needed),
                    {alloc(produced)}};
}

/// Everything a graph tells about ids 1..`up_to`, in a comparable form.
struct Observed {
  std::size_t size = 0;
  bool empty = true;
  FailureId next{FailureId::from_raw(1)};
  std::uint64_t never_written_slot = 0;
  /// Per id: present, tags, error, skips recorded, kept records.
  std::vector<
      std::tuple<bool, std::uint64_t, std::optional<Error>, std::uint64_t, std::vector<SkipRecord>>>
      per_id;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> for_each; ///< (id, tags), sorted.

  friend bool operator==(const Observed&, const Observed&) = default;
};

Observed observe(const ErrorGraph& graph, std::uint64_t up_to) {
  Observed out;
  out.size = graph.size();
  out.empty = graph.empty();
  out.next = graph.next_id();
  out.never_written_slot = graph.never_written_slot();
  for (std::uint64_t raw = 1; raw <= up_to; ++raw) {
    const FailureId id = FailureId::from_raw(raw);
    const Error* error = graph.error(id);
    out.per_id.emplace_back(graph.contains(id), graph.tags(id),
                            error != nullptr ? std::optional<Error>(*error) : std::nullopt,
                            graph.skips_recorded(id), graph.skip_records(id));
  }
  graph.for_each([&](FailureId id, const Error&, std::uint64_t tags) {
    out.for_each.emplace_back(id.raw(), tags);
  });
  std::sort(out.for_each.begin(), out.for_each.end());
  return out;
}

/// Puts nodes everywhere a node can live: both inline slots, the
/// NeverWritten slot, the table (more than its first 8 slots hold), with
/// replaced errors and wrapped skip logs. Returns the ids it left tagged;
/// a dozen more nodes, with messages and skip logs, are left untagged, so
/// the graph still holds nodes in the table once release() has let every
/// carried one go.
std::vector<FailureId> populate(ErrorGraph& graph) {
  std::vector<FailureId> tagged;
  for (int round = 0; round < 40; ++round) {
    const FailureId real = graph.insert(Error::launch("a message long enough to live on the heap"));
    graph.tag(real);
    tagged.push_back(real);
    const FailureId provisional = graph.insert_provisional();
    graph.prune(provisional); // G5: a successful scope's.
    if (round % 5 == 0) {
      const FailureId replaced = graph.insert_provisional();
      graph.tag(replaced);
      graph.replace(replaced, Error::out_of_memory("oom"));
      tagged.push_back(replaced);
    }
  }
  for (std::uint64_t skip = 0; skip < ErrorGraph::kept_skip_records + 5; ++skip) {
    graph.skipped(tagged.front(), record(1, 100 + skip)); // Wraps the ring.
    graph.skipped(tagged.back(), record(2, 200 + skip));
  }
  for (int uncarried = 0; uncarried < 12; ++uncarried) {
    const FailureId node = graph.insert(Error::launch("an uncarried node's heap-sized message"));
    graph.skipped(node, record(4, 400 + static_cast<std::uint64_t>(uncarried)));
  }
  tagged.push_back(graph.tag_never_written());
  graph.replace(tagged.back(), Error::generic("replaced NeverWritten")); // G4 on the N1 slot.
  return tagged;
}

/// What every carrier's drop does (R4): each tag of `tagged` untagged, so
/// the nodes they carried go; the uncarried ones stay.
void release(ErrorGraph& graph, const std::vector<FailureId>& tagged) {
  for (const FailureId id : tagged) {
    while (graph.tags(id) != 0) {
      graph.untag(id);
    }
  }
}

TEST(ErrorGraph, R4_ClearRefusesAGraphThatSomethingStillCarriesAndChangesNothing) {
  ErrorGraph graph;
  const std::vector<FailureId> tagged = populate(graph);
  const std::uint64_t used = graph.next_id().raw();
  const auto before = observe(graph, used);

  EXPECT_THROW(graph.clear(), std::logic_error) << "R4: carriers would untag ids that are gone";

  EXPECT_EQ(observe(graph, used), before) << "a refused clear changes nothing";
  EXPECT_NO_THROW(graph.check_invariants());
  release(graph, {tagged.begin(), tagged.end() - 1});
  EXPECT_THROW(graph.clear(), std::logic_error) << "the NeverWritten node is carried too";
  release(graph, {tagged.back()});
  EXPECT_NO_THROW(graph.clear());
  EXPECT_TRUE(graph.empty());
}

TEST(ErrorGraph, G1_ClearLeavesAGraphThatAnswersAsAFreshOne) {
  ErrorGraph graph;
  const std::vector<FailureId> tagged = populate(graph);
  const std::uint64_t used = graph.next_id().raw();
  ASSERT_NE(graph.never_written_slot(), 0u);
  release(graph, tagged);
  ASSERT_EQ(graph.size(), 12u) << "the uncarried nodes stay until the clear";

  graph.clear();

  const ErrorGraph fresh;
  EXPECT_EQ(observe(graph, used), observe(fresh, used));
  EXPECT_TRUE(graph.empty());
  EXPECT_EQ(graph.next_id(), FailureId::from_raw(1)) << "G1: ids start at 1 again";
  EXPECT_NO_THROW(graph.check_invariants());
  for (const FailureId id : tagged) {
    EXPECT_THROW(graph.tag(id), std::logic_error) << "R2: a cleared node is gone";
  }
  ASSERT_EQ(observe(graph, used), observe(fresh, used)) << "the failed tags changed nothing";
}

TEST(ErrorGraph, G1_AClearedGraphBehavesAsAFreshOneUnderTheSameScript) {
  ErrorGraph graph;
  release(graph, populate(graph));
  graph.clear();
  ErrorGraph fresh;
  // The same script on both, compared after every step. It mints into every
  // slot (the NeverWritten slot's error was replaced before the clear: it
  // must come back as NeverWritten), records skips and reports.
  const auto steps = [](ErrorGraph& g, int step) -> std::vector<Report> {
    switch (step % 6) {
    case 0: {
      const FailureId f = g.insert(Error::launch("step " + std::to_string(step)));
      g.tag(f);
      g.skipped(f, record(3, 300 + static_cast<std::uint64_t>(step)));
      return {g.report(f, alloc(300 + static_cast<std::uint64_t>(step)))};
    }
    case 1:
      g.prune(g.insert_provisional());
      return {};
    case 2:
      static_cast<void>(g.tag_never_written());
      return {};
    case 3:
      g.untag(FailureId::from_raw(g.never_written_slot()));
      return {};
    case 4: {
      const FailureId f = g.insert_provisional();
      g.tag(f);
      g.replace(f, Error::generic("late"));
      return {};
    }
    default:
      g.untag(FailureId::from_raw(g.next_id().raw() - 1));
      return {};
    }
  };
  for (int step = 0; step < 60; ++step) {
    const std::vector<Report> mine = steps(graph, step);
    const std::vector<Report> theirs = steps(fresh, step);
    ASSERT_EQ(mine, theirs) << "step " << step;
    ASSERT_EQ(observe(graph, graph.next_id().raw()), observe(fresh, fresh.next_id().raw()))
        << "step " << step;
  }
  EXPECT_NO_THROW(graph.check_invariants());
}

} // namespace
} // namespace taintpool
