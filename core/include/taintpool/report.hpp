// SkipRecord and Report: how a failure explains itself at the read.
//
// When a launch is skipped because an input was stale, the root failure gets
// a SkipRecord (G7): which kernel did not run, which allocation it needed,
// which allocations it would have written (they now carry the root). A read
// of a stale allocation later walks those records backwards from the
// allocation it read to the allocation the root failure left unwritten, and
// hands the caller a Report (G8): the root error plus that path.
//
// Records live on the failure's node and die with it (R1), so the path costs
// memory exactly as long as some allocation still carries the failure. Only
// the newest records are kept (ErrorGraph::kept_skip_records); a path that
// runs into the cap ends early and says so, but the root is always there.
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/failure_id.hpp>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace taintpool {

/// One launch that carried a failure from an input to its outputs: it was
/// skipped because the input was stale (S1), or — on an asynchronous device
/// whose checked kernel reported failure only later — it had already run on
/// the input's stale bytes (`ran`), or it was a collective that had to run
/// with them (`took_part`, C1).
struct SkipRecord {
  std::string kernel;                 ///< The launch's name, as the caller gave it.
  AllocationId needed;                ///< The input whose stale bytes stopped it.
  std::vector<AllocationId> produced; ///< The outputs that took the failure instead.
  bool ran = false; ///< It ran before the failure was known, so its outputs are garbage.
  /// A collective that took part with this stale input, as every rank must
  /// (C1): it ran knowing, and its outputs computed from the stale bytes
  /// carry the failure (C4). Set with `ran`.
  bool took_part = false;

  /// Field by field: for tests and the model comparison.
  friend bool operator==(const SkipRecord&, const SkipRecord&) = default;
};

/// Why the bytes of one allocation cannot be trusted: the root error, and the
/// chain of skipped launches that carried it from the allocation the failure
/// left unwritten (the origin) to the allocation that was read (G8).
struct Report {
  FailureId failure; ///< The root failure.
  Error root;        ///< What the root failure was (a copy, so the report outlives the node).
  AllocationId read; ///< The allocation whose bytes were asked for.
  /// The lowest range of bytes this failure claims within the bytes that
  /// were read — one range, not all of them — when the caller knows it (the
  /// device fills this in; ErrorGraph::report leaves it empty).
  std::optional<ByteRange> stale;
  /// Skipped launches, newest first: path[0] produced `read` and needed
  /// path[1]'s output, and so on back to the origin.
  std::vector<SkipRecord> path;
  /// The allocation the root failure claimed directly: the last record's
  /// `needed`, or `read` itself when the path is empty.
  AllocationId origin;
  /// Every skip ever recorded on the failure, kept or not.
  std::uint64_t skips_recorded = 0;
  /// Records were dropped by the cap (skips_recorded > kept_skip_records), so
  /// the walk may have stopped at a gap: the origin may lie further back. Set
  /// whenever any record was dropped, whether or not this walk met the gap.
  bool path_may_be_incomplete = false;

  /// Field by field: for tests and the model comparison.
  friend bool operator==(const Report&, const Report&) = default;
};

/// A multi-line account a person can act on, root cause first:
///   allocation 15 cannot be read: failure 3 (launch: load_weights ...)
///     softmax was skipped: it needed allocation 12
///     linear was skipped: it needed allocation 7
///     allocation 7 was left unwritten by failure 3
[[nodiscard]] std::string to_string(const Report& report);
/// Writes to_string(report).
std::ostream& operator<<(std::ostream& out, const Report& report);

} // namespace taintpool
