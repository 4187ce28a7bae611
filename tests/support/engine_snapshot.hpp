// EngineSnapshot: everything a caller can observe of one ErrorGraph and the
// Taints that carry its failures, captured as a plain value.
//
// Tests of contract violations need to say "the call threw, and nothing
// changed". Comparing two snapshots — one taken before the bad call, one after
// — says that for every observable at once: each taint's claims, and each live
// node's error, tag count and skip records, plus the graph's size and next id.
// Later layers (pool, device) reuse it over their slices' taints.
//
// Also: gtest printers for the engine's value types, so a failed comparison
// prints claims and reports a person can read instead of raw bytes.
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/report.hpp>
#include <taintpool/taint.hpp>

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <utility>
#include <vector>

namespace taintpool {

// GoogleTest finds these by ADL, so they live in the types' namespace.
inline void PrintTo(const SkipRecord& record, std::ostream* out) {
  *out << "{" << record.kernel << " needed " << record.needed << ", produced [";
  for (std::size_t at = 0; at < record.produced.size(); ++at) {
    *out << (at == 0 ? "" : ", ") << record.produced[at];
  }
  *out << "]}";
}

inline void PrintTo(const Report& report, std::ostream* out) {
  *out << "Report{" << to_string(report) << "; skips_recorded=" << report.skips_recorded
       << ", incomplete=" << report.path_may_be_incomplete << "}";
}

} // namespace taintpool

namespace taintpool::testing {

using Claims = std::vector<std::pair<FailureId, ByteRange>>;

/// One taint's claims, in the order for_each_claim visits them (ascending).
inline Claims claims_of(const Taint& taint) {
  Claims claims;
  taint.for_each_claim(
      [&](FailureId failure, ByteRange range) { claims.emplace_back(failure, range); });
  return claims;
}

struct NodeState {
  FailureId id;
  Error error;
  std::uint64_t tags = 0;
  std::uint64_t skips_recorded = 0;
  std::vector<SkipRecord> skip_records;

  friend bool operator==(const NodeState&, const NodeState&) = default;
};

struct EngineSnapshot {
  std::vector<Claims> claims;   ///< One entry per taint, in the order given.
  std::vector<NodeState> nodes; ///< Every live node, ascending by id.
  std::size_t size = 0;
  std::uint64_t next_id = 0;

  friend bool operator==(const EngineSnapshot&, const EngineSnapshot&) = default;
};

inline EngineSnapshot snapshot(const ErrorGraph& graph, std::span<const Taint* const> taints) {
  EngineSnapshot shot;
  for (const Taint* taint : taints) {
    shot.claims.push_back(claims_of(*taint));
  }
  // Ids are dense from 1 to next_id - 1, so walking them visits every node
  // in ascending order without relying on for_each's unspecified order.
  for (std::uint64_t raw = 1; raw < graph.next_id().raw(); ++raw) {
    const FailureId id = FailureId::from_raw(raw);
    if (const Error* error = graph.error(id)) {
      shot.nodes.push_back(
          {id, *error, graph.tags(id), graph.skips_recorded(id), graph.skip_records(id)});
    }
  }
  shot.size = graph.size();
  shot.next_id = graph.next_id().raw();
  return shot;
}

inline EngineSnapshot snapshot(const ErrorGraph& graph,
                               std::initializer_list<const Taint*> taints = {}) {
  return snapshot(graph, std::span<const Taint* const>(taints.begin(), taints.size()));
}

inline void PrintTo(const EngineSnapshot& shot, std::ostream* out) {
  *out << "{size " << shot.size << ", next id " << shot.next_id << ", nodes [";
  for (const NodeState& node : shot.nodes) {
    *out << " " << node.id << " (" << node.error << ") tags " << node.tags << " skips "
         << node.skips_recorded << ";";
  }
  *out << " ], taints [";
  for (const Claims& claims : shot.claims) {
    *out << " {";
    for (const auto& [failure, range] : claims) {
      *out << " " << failure.raw() << ":" << range;
    }
    *out << " }";
  }
  *out << " ]}";
}

} // namespace taintpool::testing
