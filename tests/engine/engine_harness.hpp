// The engine harness: one vocabulary of operations, applied to core (several
// Taints and one ErrorGraph) and to the reference model (EngineModel), and
// one function that finds the first observable difference between them.
//
// The stateful RapidCheck test and the small-scope exhaustive test both drive
// core and model through this, so "observable" means the same thing in both:
// every claim of every allocation, failure()/failures() over probe ranges,
// carries/claim_count/is_clean, T6's inline-vs-spilled shape, and for every id
// ever minted whether it is live, its error, tags, skip count, kept records
// and reports (G8) and the deduped reports over all claims (G9) — plus core's
// own check_invariants() and check_refcounts() (T5, R1–R3) after every step.
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/model/engine_model.hpp>
#include <taintpool/report.hpp>
#include <taintpool/taint.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine_snapshot.hpp"

namespace taintpool::testing {

enum class OpKind { Insert, Taint, Written, Clear, Replace, Prune, Skipped };

/// One step. Fields an operation does not use are ignored.
struct Op {
  OpKind kind = OpKind::Insert;
  std::size_t allocation = 0;       ///< Taint, Written, Clear.
  ByteRange range;                  ///< Taint, Written.
  std::uint64_t failure = 1;        ///< Raw id for Taint, Replace, Prune, Skipped; may be dead
                                    ///< or never minted (both sides must then agree it throws).
  Error error = Error::torn_down(); ///< Insert, Replace.
  std::vector<SkipRecord> skips;    ///< Skipped: recorded in order.
};

[[nodiscard]] std::string describe(const Op& op);
[[nodiscard]] std::string describe(std::span<const Op> ops);

/// Core under test: one graph and `allocations` taints. Clears every taint on
/// destruction, since a Taint destroyed with claims aborts by design.
struct CoreEngine {
  explicit CoreEngine(std::size_t allocations);
  CoreEngine(const CoreEngine&) = delete;
  CoreEngine& operator=(const CoreEngine&) = delete;
  ~CoreEngine();

  ErrorGraph graph;
  std::vector<Taint> taints;
};

/// A model with `allocations` clean allocations.
[[nodiscard]] model::EngineModel make_model(std::size_t allocations);

/// What one side did with an op: the id it minted (Insert), or that it threw
/// a contract error (std::logic_error), with the message.
struct Outcome {
  std::optional<FailureId> minted;
  bool threw = false;
  std::string what;
};

Outcome apply(CoreEngine& core, const Op& op);
Outcome apply(model::EngineModel& model, const Op& op);

/// Both outcomes agree: same id minted, and a throw on one side iff on the
/// other. Returns a description of the disagreement, or "" when they agree.
[[nodiscard]] std::string compare_outcomes(const Outcome& core, const Outcome& model);

/// Probe ranges for failure()/failures(): every [a, b) with a <= b over the
/// points 0..bytes (bytes small), which includes every empty range.
[[nodiscard]] std::vector<ByteRange> all_ranges(std::uint64_t bytes);

/// Probe ranges built from the claim boundaries of both sides (and one byte
/// either side of each), for byte spaces too large to probe exhaustively.
[[nodiscard]] std::vector<ByteRange> boundary_probes(const CoreEngine& core,
                                                     const model::EngineModel& model);

/// The first observable difference between core and model, or "" when none.
/// `report_allocations` are the AllocationIds reports are asked for.
[[nodiscard]] std::string first_difference(const CoreEngine& core, const model::EngineModel& model,
                                           std::span<const ByteRange> probes,
                                           std::uint64_t report_allocations);

} // namespace taintpool::testing
