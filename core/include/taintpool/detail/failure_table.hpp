// FailureNode and FailureTable: the storage behind ErrorGraph. Internal.
//
// The graph keeps up to three nodes in inline slots (two general ones and
// the NeverWritten slot) and every other live node here. Nodes only land in this
// table when a second failure outlives the next insert — real failures still
// carried by stale buffers — so the table holds "failures a program has not
// yet cleaned up", typically a handful.
//
// Shape: an IdTable (detail/id_table.hpp) of nodes keyed by the raw id.
//
// Why not std::unordered_map: one heap node per insert, which is exactly the
// per-failure allocation G10 rules out. Why not a sorted vector: ids arrive in
// increasing order but leave in any order, so erasing would shift.
#pragma once

#include <taintpool/detail/id_table.hpp>
#include <taintpool/error.hpp>
#include <taintpool/report.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace taintpool::detail {

/// The skip records of one root failure (G7): the newest `capacity` records
/// in a ring, and the count of all of them. Allocated on the first skip only,
/// so a failure that never stops a launch costs one null pointer.
struct SkipLog {
  std::vector<SkipRecord> ring; ///< At most the graph's kept_skip_records entries.
  std::uint64_t recorded = 0;   ///< Every record ever added, kept or dropped.
};

/// One failure's node (§3.3).
struct FailureNode {
  std::uint64_t id = 0;             ///< Raw FailureId; 0 = vacant slot.
  std::uint64_t tags = 0;           ///< Carriers holding a claim of this failure (R1).
  Error error = Error::torn_down(); ///< TornDown while vacant (see insert_provisional).
  SkipLog* skips = nullptr;         ///< Owned; null until the first skip.

  /// Vacant.
  FailureNode() noexcept = default;
  /// Moves leave the source vacant (id 0, TornDown error, no skip log), as
  /// IdTable and the graph's newest-node slot require.
  FailureNode(FailureNode&& other) noexcept;
  FailureNode& operator=(FailureNode&& other) noexcept;
  FailureNode(const FailureNode&) = delete;
  FailureNode& operator=(const FailureNode&) = delete;
  /// Frees the skip log, if any.
  ~FailureNode() { delete skips; }

  /// Back to vacant; frees the message and skip log, if any.
  void vacate() noexcept;
};

/// The graph's table of older live failures.
using FailureTable = IdTable<FailureNode>;

} // namespace taintpool::detail
