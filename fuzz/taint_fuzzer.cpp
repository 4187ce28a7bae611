// taint_fuzzer: the taint engine (Taint + ErrorGraph) against the reference
// EngineModel, side by side, compared after every operation (DESIGN.md §4).
//
// # What is checked
//
// Four allocations (four core Taints, four model allocations) share one
// ErrorGraph. The ops: insert, taint, written, clear, query (failure and
// failures of a range), replace, prune, skipped, report, reports, move (a
// Taint move-assigned or move-constructed into another slot), graph_contract
// (tag/untag/id-0 calls the contract refuses) and graph_move (the graph moved
// through two other graph objects and back). The observable state is
// compared in two sweeps:
//
// After EVERY op, everything the op could have changed (check_touched):
//   * the claims of each allocation it named — core for_each_claim against
//     the model's runs, both canonical and ascending (T1, T2, T4, T5) — and
//     that taint's shape: failure() over everything is one of the model's
//     owners and none iff there are none (T3); is_clean, is_spilled (T6:
//     one failure over one range is inline), claim_count, and
//     check_invariants() (T5, T6);
//   * every failure it could have changed — the one it names, the ones it
//     minted or pruned, every live one after a graph move, and every
//     failure that owned a byte of an allocation it changed (the only ones
//     that can lose their last carrier): alive or not (G3, G5), tags (R1),
//     carries() on those allocations (R1), error (G4, G6), skips_recorded
//     (G7);
//   * after a skip, the failure's kept skip_records (G7) and the report of
//     a read the newest record produced — the walk through every record the
//     op added (G8) — and, the first time its log passes the cap of 16, the
//     reports of the read the oldest kept record produced (cut short by the
//     gap) and of a read no record produced (the empty path); after a
//     replace, that empty-path report (its root is the new error);
//   * graph size and next_id (G1).
// An op that ends by throwing (a contract violation, or out of memory) is
// checked the same way against the model, which changed nothing: so the
// core must have changed nothing either. The report and reports ops
// compare any failure's reports for any read directly.
//
// Every kFullCheckEvery ops and at the end of the input, ALL of it
// (check_everything):
//   * every allocation's claims and shape as above, failures() over
//     everything against the model's owners (T3), and carries() of every
//     failure ever minted on every allocation;
//   * for every failure id ever minted: alive or not, tags, error,
//     skips_recorded and, for one with skips, the kept skip_records;
//   * the decoder's list of live failures against the model's;
//   * graph.for_each agrees with the model; graph.check_invariants(), and
//     check_refcounts(graph, carriers, held) (R1–R3), where `held` is the
//     live failures the fuzzer inserted and has not yet given a carrier —
//     the only untagged nodes R3 allows.
// A divergence outside what an op names (a core bug that touches another
// allocation or failure) is so caught within kFullCheckEvery ops; one inside
// it, at once.
// Operations that break the contract are generated on purpose (taint with a
// dead or never-minted failure, skipped/report of one, untag of an untagged
// node, tag of a dead one, move-assigning over a taint that holds claims,
// checked constructors fed inverted or overflowing bounds, id 0): core and
// model must end the same way (the same exception class), and the state must
// be exactly what it was before.
//
// Cost: the checks run on every op, so they are shaped to cost what the op
// touched, not what the input has built up: no message is built on a
// passing run (Checker takes callables), claims are compared in place, the
// decoder keeps the model's live failures (`live_`, checked against the
// model in every full sweep) instead of asking for a fresh list each op,
// skip records are compared with the model's in place
// (EngineModel::kept_records), and one harness serves every input (its
// release_input() resets the model and its buffers exactly at the end of
// each input — check_fresh() proves it at the start of the next — and
// keeps their capacity). The same checks are made more cheaply than they
// were (issue 13, twelfth round): the failures an op touched are checked
// once each, not once per run that names them; which allocations carry a
// failure in the model is read from one pass over every run per check
// (index_carriers), not a scan of all runs per failure; and the held list
// drops the touched failures that died instead of asking the model about
// every held one after each op (each sweep checks it against the model).
// And (fifteenth round): the model answers liveness, error and skip count
// from one lookup (EngineModel::view); the carriers table is cleared run by
// run, not refilled per id ever minted; the held and live lists lose the
// failures an op killed in one pass, not an erase each; and the graph's
// table goes back to its fresh capacity after an input that grew it, so no
// sweep walks slots an earlier input grew and no injected allocation fault
// fires, or not, by what an earlier input left (fuzz.<target>.order).
// And (fortieth round): a failure's, a taint shape's and a graph node's
// comparisons make one verdict, and only a mismatch runs the checks that
// name what differed (explain_failure and its kin, out of line, so the
// passing path pays no stack poisoning for their message callables); the
// model's refusals are answers, not exceptions (EngineModel::try_taint,
// try_skipped, try_report_path) — core's still throw, as they must.
// Only core is
// coverage-instrumented: the checkers (common/no_coverage.hpp), the rest
// of this file's harness (taint_fuzzer.coverage_ignorelist) and the engine
// model (pool_fuzzer.ignorelist) add no features for libFuzzer to pay for;
// nor does core's id-table probe (IdTable::find, in the same list), whose
// trace-cmp callbacks cost more than its three branches guide.
// The input length is bounded in taint_fuzzer.options.
//
// Out of memory is a contract case too: an op may run core under an injected
// allocation fault (<taintpool/testing/alloc_faults.hpp>: the k-th allocation
// of the core call throws std::bad_alloc). If it fires, core must throw bad_alloc
// and change nothing (taint.hpp "Contract"); the model then skips the op. If
// the call needed fewer allocations, it completes and is compared as usual.
//
// At the end of every input each taint is cleared and every held failure
// pruned: the graph must then be empty (R4).
//
// With TAINTPOOL_TRACE_OUT set (a directory, or a taint_<name>.tla file),
// each input also writes its run as a TLA+ trace in the format of
// proofs/TRACES.md, for TaintTrace.tla to validate (see trace_op); on a
// failed check, the trace of the ops before it.
//
// # How the input is decoded (fuzz/common/byte_reader.hpp: past the end,
// # every byte reads as 0, so every input is a valid op sequence)
//
// Ops are decoded until the input runs out. Each op starts with one byte:
// the low 5 bits pick the op from a weighted table (kOpTable), bits 5–6 the
// allocation it works on; with bit 7 set, an op with one fallible core call
// (faultable()) reads one more byte, and if it is below 32, core's allocation
// number (byte % 8) in that call fails. Then, per op:
//   failure  — 1 mode byte: 3 in 4 pick a live failure (1 index byte); else
//              any id ever minted or the next, never-minted one (so dead and
//              unknown ids occur) — 1 or 2 index bytes.
//   range    — 1 mode byte: bit 4 chooses ByteRange::sized over ::of; the low
//              4 bits the space: mostly [0, 64] so claims collide, sometimes
//              the top window [2^64-64, 2^64), a range spanning both, one
//              ending at 2^64-1, or bad bounds (inverted for ::of, overflowing
//              for ::sized) that must throw and change nothing. Then 2 bytes.
//   error    — kind byte, message byte (from a small table: empty, short,
//              longer than the small-string buffer); an insert then reads a
//              burst byte: 1 in 8 inserts 2..33 failures at once.
//   prune    — failure, then a sweep byte: 1 in 8 prunes every held failure
//              of one id residue mod 3 instead (many table removals).
//   record   — kernel byte (bit 7: SkipRecord::ran), needed-allocation byte,
//              count byte, produced ids,
//              burst byte: 1 in 8 records a chain of 2..33 records at once,
//              so a failure's log passes its cap of 16 (G7).
// Allocation ids in skip records and reports range over 1..6: 1..4 are the
// fuzzed allocations, 5 and 6 inputs nobody tracks.
//
// Built twice: taint_fuzzer (core as shipped) and taint_fuzzer_spill (core
// compiled with TAINTPOOL_TAINT_INLINE_CLAIMS=0, so every claim takes the
// spill path and check_invariants demands it).
#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/model/engine_model.hpp>
#include <taintpool/report.hpp>
#include <taintpool/taint.hpp>
#include <taintpool/testing/alloc_faults.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/byte_reader.hpp"
#include "common/check.hpp"
#include "common/no_coverage.hpp"
#include "common/show.hpp"
#include "common/tla_trace.hpp"

namespace {

using taintpool::AllocationId;
using taintpool::ByteRange;
using taintpool::Error;
using taintpool::ErrorGraph;
using taintpool::ErrorKind;
using taintpool::FailureId;
using taintpool::Report;
using taintpool::SkipRecord;
using taintpool::Taint;
using taintpool::fuzz::ByteReader;
using taintpool::fuzz::Checker;
using taintpool::fuzz::Ending;
using taintpool::fuzz::Outcome;
using taintpool::fuzz::run_op;
using taintpool::fuzz::show;
using taintpool::fuzz::show_offset;
using taintpool::model::EngineModel;
using taintpool::model::OwnedRun;
namespace tla = taintpool::fuzz::tla;

/// The target's name in messages: one source, two builds (targets.txt).
constexpr const char* kTarget = Taint::inline_claims ? "taint_fuzzer" : "taint_fuzzer_spill";

constexpr std::size_t kAllocations = 4;
/// Allocation ids skip records and reports name: 1..4 are the fuzzed
/// allocations, the rest are buffers nobody tracks here.
constexpr std::uint64_t kAllocationIds = 6;
/// The small space: offsets 0..64, so claims land on each other.
constexpr std::uint64_t kSmallSpace = 64;
/// The top window [2^64-64, 2^64): its first offset.
constexpr std::uint64_t kHighBase = UINT64_MAX - 63;

constexpr std::array<const char*, 5> kMessages = {
    "", "oom", "load_weights ran out of memory",
    "a message long enough to live on the heap, past any small-string buffer", "x"};
/// The index of kMessages' longest text (check_report's kept Report starts
/// with its capacity).
constexpr std::size_t kLongestMessage = 3;
constexpr std::array<const char*, 5> kKernels = {"softmax", "linear", "",
                                                 "a_kernel_name_long_enough_for_the_heap", "k"};
/// The index of kKernels' longest name (prime_model's records take it).
constexpr std::size_t kLongestKernel = 3;
constexpr std::size_t kErrorKinds = 9; // ErrorKind::Generic .. InvalidBinding
/// Ops between two sweeps over everything (check_everything); every op in
/// between is checked on what it touched (check_touched).
constexpr std::size_t kFullCheckEvery = 16;
/// At most this many produced allocations per skip record, and (failure,
/// read) pairs per reports op, as decoded.
constexpr std::size_t kMaxProduced = 3;
constexpr std::size_t kMaxPairs = 4;
/// What the model's refused report states (EngineModel::report_path's words).
constexpr const char* kModelReportRefusal = "model: report of a failure that is not live (G8)";

enum class Kind : std::uint8_t {
  insert,
  taint,
  written,
  clear,
  query,
  replace,
  prune,
  skipped,
  report,
  reports,
  move,
  graph_contract,
  graph_move,
  // Not decodable: the end-of-input cleanup, logged like an op for messages.
  final_clear,
  final_prune,
};

/// The op of an input's op byte (low 5 bits). Weighted towards the ops that
/// move claims, which is where the engine's cases are.
constexpr std::array<Kind, 32> kOpTable = {
    Kind::insert,         Kind::insert,     Kind::insert,  Kind::insert,  Kind::taint,
    Kind::taint,          Kind::taint,      Kind::taint,   Kind::taint,   Kind::taint,
    Kind::taint,          Kind::taint,      Kind::written, Kind::written, Kind::written,
    Kind::written,        Kind::written,    Kind::clear,   Kind::query,   Kind::query,
    Kind::replace,        Kind::prune,      Kind::prune,   Kind::skipped, Kind::skipped,
    Kind::skipped,        Kind::report,     Kind::reports, Kind::move,    Kind::move,
    Kind::graph_contract, Kind::graph_move,
};

/// A range as decoded: the bounds passed to a checked constructor, which may
/// be bad on purpose (§3.1).
struct RangeSpec {
  bool sized = false; ///< ByteRange::sized(a, b) rather than ByteRange::of(a, b).
  std::uint64_t a = 0;
  std::uint64_t b = 0;

  [[nodiscard]] bool valid() const noexcept { return sized ? b <= UINT64_MAX - a : a <= b; }
};

struct Op {
  Kind kind = Kind::insert;
  std::size_t offset = 0; ///< Where in the input the op began.
  std::size_t alloc = 0;
  std::size_t other = 0; ///< move: the destination.
  RangeSpec range;
  std::uint64_t failure = 1; ///< Raw id; may be dead or never minted.
  ErrorKind error_kind = ErrorKind::Generic;
  std::size_t text = 0; ///< Index into kMessages or kKernels.
  std::uint64_t needed = 1;
  // Fixed capacity, so that an op — logged for every op of every input —
  // owns no heap memory.
  std::array<std::uint64_t, kMaxProduced> produced{};
  std::size_t produced_count = 0;
  std::array<std::pair<std::uint64_t, std::uint64_t>, kMaxPairs>
      pairs{}; ///< reports: (failure, read).
  std::size_t pair_count = 0;
  std::uint8_t variant = 0;
  std::uint64_t repeat = 1; ///< skipped: how many records, as a chain (see skip_record).
  /// The core call's allocation that fails with std::bad_alloc (0 = its
  /// first), or -1 for none.
  std::int64_t fault_at = -1;
  bool ran = false; ///< skipped: SkipRecord::ran.

  [[nodiscard]] std::span<const std::uint64_t> produced_ids() const {
    return {produced.data(), produced_count};
  }
  [[nodiscard]] std::span<const std::pair<std::uint64_t, std::uint64_t>> read_pairs() const {
    return {pairs.data(), pair_count};
  }
};

/// The buffer Harness::ops_ names (see there).
std::vector<Op>& op_log() {
  static std::vector<Op> log;
  return log;
}

/// Ops whose core side is one fallible call, so an injected std::bad_alloc
/// must leave everything exactly as it was before the op.
bool faultable(Kind kind) {
  switch (kind) {
  case Kind::insert:
  case Kind::taint:
  case Kind::written:
  case Kind::replace:
  case Kind::skipped:
  case Kind::report:
  case Kind::reports:
    return true;
  default:
    return false;
  }
}

std::uint64_t wrap_allocation(std::uint64_t id) {
  return (id - 1) % kAllocationIds + 1;
}

/// The `step`-th record of a skipped op. A burst (repeat > 1) shifts every
/// allocation by one per step and adds the next one to `produced`, so the
/// records form a chain A -> A+1 -> A+2 ... that report walks follow (G8),
/// and one op can push a failure's log past its cap of 16 (G7).
///
/// Fills `record` (every field set afresh): a scratch the harness keeps and
/// hands to both core and the model, each of which copies it into a slot
/// of its own — the model into one kept from earlier inputs, core into the
/// record its full ring drops — so once warm neither allocates for a
/// record it has room for (a copy of core's record for the model was a
/// fifth of this target's allocations, twenty-ninth round; core's record
/// built per skip most of the rest, thirtieth round; issue 13).
void skip_record(const Op& op, std::uint64_t step, SkipRecord& record) {
  record.kernel = kKernels[op.text % kKernels.size()];
  record.needed = AllocationId::from_raw(wrap_allocation(op.needed + step));
  record.ran = op.ran;
  record.took_part = false;
  record.produced.clear();
  // Sized once: push_back's growth (1, 2, 4) cost up to three allocations
  // per record, and a burst builds 33 (issue 13). Same ids, same order.
  record.produced.reserve((op.repeat > 1 ? 1 : 0) + op.produced_ids().size());
  if (op.repeat > 1) {
    record.produced.push_back(AllocationId::from_raw(wrap_allocation(op.needed + step + 1)));
  }
  for (const std::uint64_t id : op.produced_ids()) {
    record.produced.push_back(AllocationId::from_raw(wrap_allocation(id + step)));
  }
}

std::string show_spec(const RangeSpec& spec) {
  return std::string(spec.sized ? "sized(" : "of(") + show_offset(spec.a) + ", " +
         (spec.sized ? std::to_string(spec.b) : show_offset(spec.b)) + ")";
}

std::string describe_op(const Op& op);

std::string describe(const Op& op) {
  return describe_op(op) +
         (op.fault_at >= 0 ? " [allocation #" + std::to_string(op.fault_at) + " fails]" : "");
}

std::string describe_op(const Op& op) {
  const std::string alloc = "alloc " + std::to_string(op.alloc);
  const std::string failure = "F" + std::to_string(op.failure);
  const std::string error = "{" + show(op.error_kind) + " " +
                            show(std::string(kMessages[op.text % kMessages.size()])) + "}";
  switch (op.kind) {
  case Kind::insert:
    return "insert(" + error + ")" +
           (op.repeat > 1 ? " x" + std::to_string(op.repeat) : std::string());
  case Kind::taint:
    return "taint(" + alloc + ", " + show_spec(op.range) + ", " + failure + ")";
  case Kind::written:
    return "written(" + alloc + ", " + show_spec(op.range) + ")";
  case Kind::clear:
    return "clear(" + alloc + ")";
  case Kind::query:
    return "failure/failures(" + alloc + ", " + show_spec(op.range) + ")";
  case Kind::replace:
    return "replace(" + failure + ", " + error + ")";
  case Kind::prune:
    return op.variant == 1 ? "prune every held failure with id % 3 == " + std::to_string(op.needed)
                           : "prune(" + failure + ")";
  case Kind::skipped: {
    std::string produced;
    for (const std::uint64_t id : op.produced_ids()) {
      produced += (produced.empty() ? "A" : " A") + std::to_string(id);
    }
    return "skipped(" + failure + ", {" + show(std::string(kKernels[op.text % kKernels.size()])) +
           " needed A" + std::to_string(op.needed) + " produced [" + produced + "]" +
           (op.ran ? " ran" : "") + "})" +
           (op.repeat > 1 ? " x" + std::to_string(op.repeat) + " as a chain" : "");
  }
  case Kind::report:
    return "report(" + failure + ", A" + std::to_string(op.needed) + ")";
  case Kind::reports: {
    std::string pairs;
    for (const auto& [f, read] : op.read_pairs()) {
      pairs +=
          (pairs.empty() ? "(F" : ", (F") + std::to_string(f) + " A" + std::to_string(read) + ")";
    }
    return "reports([" + pairs + "])";
  }
  case Kind::move:
    return std::string(op.variant == 0 ? "move-assign" : "move-construct then move-assign") +
           "(alloc " + std::to_string(op.other) + " = alloc " + std::to_string(op.alloc) + ")";
  case Kind::graph_contract:
    switch (op.variant) {
    case 0:
      return "graph.untag(none)";
    case 1:
      return "graph.untag(" + failure + ") [untagged: must throw]";
    case 2:
      return "graph.tag(" + failure + ") [no node: must throw]";
    default:
      return "FailureId/AllocationId::from_raw(0) [must throw]";
    }
  case Kind::graph_move:
    return "graph round trip: move-assign over a graph with a node, move-construct, move-assign "
           "back";
  case Kind::final_clear:
    return "end of input: clear every taint";
  case Kind::final_prune:
    return "end of input: prune every held failure (R4)";
  }
  return "?";
}

Error make_error(ErrorKind kind, std::size_t text) {
  return Error(kind, kMessages[text % kMessages.size()]);
}

// ---------------------------------------------------------------------------
// Observable state, read the same way from core and from the model.

using Claims = std::vector<std::pair<FailureId, ByteRange>>;

struct FailureState {
  std::uint64_t id = 0;
  bool live = false;
  std::uint64_t tags = 0;
  std::optional<Error> error;
  std::uint64_t skips = 0;
  std::vector<SkipRecord> records;
  std::vector<Report> reports; ///< Live only: per read id (one when there are no records).
  std::string report_threw;    ///< Why a live failure's report threw, if it did (G8).
};

/// A whole engine's observable state: what a failed check prints.
struct EngineState {
  std::array<Claims, kAllocations> claims;
  std::vector<FailureState> failures; ///< Every id ever minted, ascending.
  std::size_t size = 0;
  std::uint64_t next_id = 1;
};

std::string show(const FailureState& failure) {
  std::string text = "F" + std::to_string(failure.id) + (failure.live ? " live" : " dead");
  if (!failure.live && failure.tags == 0 && !failure.error && failure.skips == 0 &&
      failure.records.empty()) {
    return text;
  }
  text += " tags " + std::to_string(failure.tags) + " error " + show(failure.error) + " skips " +
          std::to_string(failure.skips) + " records " + show(failure.records);
  if (!failure.report_threw.empty()) {
    text += " report threw: " + failure.report_threw;
  }
  return text;
}

std::string show(const EngineState& state) {
  std::string text;
  for (std::size_t at = 0; at < kAllocations; ++at) {
    text += "    alloc " + std::to_string(at) + ": " + show(state.claims[at]) + "\n";
  }
  for (const FailureState& failure : state.failures) {
    text += "    " + show(failure) + "\n";
  }
  text += "    size " + std::to_string(state.size) + ", next id " + std::to_string(state.next_id) +
          "\n";
  return text;
}

/// The reads a live failure's reports are compared for: every allocation a
/// kept record produced (where a walk can start), plus one that none did (the
/// empty path). Any other read gives the same report as that one.
std::vector<std::uint64_t> report_reads(std::span<const SkipRecord> records) {
  std::vector<std::uint64_t> reads;
  for (const SkipRecord& record : records) {
    for (const AllocationId produced : record.produced) {
      reads.push_back(produced.raw());
    }
  }
  std::sort(reads.begin(), reads.end());
  reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
  std::uint64_t plain = 1;
  while (std::binary_search(reads.begin(), reads.end(), plain)) {
    ++plain;
  }
  reads.push_back(plain);
  return reads;
}

/// The read report_reads() ends with — the lowest allocation id no record
/// produced, whose report has the empty path — found without building the
/// list (check_failure asks for it after a skip pushed the log past its cap).
std::uint64_t unproduced_read(std::span<const SkipRecord> records) {
  std::uint64_t plain = 1;
  const auto produced = [&](std::uint64_t raw) {
    return std::any_of(records.begin(), records.end(), [&](const SkipRecord& record) {
      return std::find(record.produced.begin(), record.produced.end(),
                       AllocationId::from_raw(raw)) != record.produced.end();
    });
  };
  while (produced(plain)) {
    ++plain;
  }
  return plain;
}

/// Core, read through the same questions the model answers.
struct CoreView {
  const ErrorGraph& graph;
  const std::array<Taint, kAllocations>& taints;

  [[nodiscard]] Claims claims(std::size_t at) const {
    Claims claims;
    taints[at].for_each_claim(
        [&](FailureId failure, ByteRange range) { claims.emplace_back(failure, range); });
    return claims;
  }
  [[nodiscard]] std::size_t size() const { return graph.size(); }
  [[nodiscard]] FailureId next_id() const { return graph.next_id(); }
  [[nodiscard]] bool live(FailureId id) const { return graph.contains(id); }
  [[nodiscard]] std::uint64_t tags(FailureId id) const { return graph.tags(id); }
  [[nodiscard]] const Error* error(FailureId id) const { return graph.error(id); }
  [[nodiscard]] std::uint64_t skips_recorded(FailureId id) const {
    return graph.skips_recorded(id);
  }
  [[nodiscard]] std::vector<SkipRecord> skip_records(FailureId id) const {
    return graph.skip_records(id);
  }
  [[nodiscard]] Report report(FailureId id, AllocationId read) const {
    return graph.report(id, read);
  }
};

/// The whole observable state of core (CoreView) or the model (EngineModel),
/// with the reports of every live failure: what a failed check prints.
template <class Engine>
EngineState observe(const Engine& engine) {
  EngineState state;
  for (std::size_t at = 0; at < kAllocations; ++at) {
    state.claims[at] = engine.claims(at);
  }
  state.size = engine.size();
  state.next_id = engine.next_id().raw();
  state.failures.reserve(static_cast<std::size_t>(state.next_id - 1));
  for (std::uint64_t raw = 1; raw < state.next_id; ++raw) {
    const FailureId id = FailureId::from_raw(raw);
    FailureState failure;
    failure.id = raw;
    failure.live = engine.live(id);
    failure.tags = engine.tags(id);
    if (const Error* error = engine.error(id)) {
      failure.error = *error;
    }
    failure.skips = engine.skips_recorded(id);
    failure.records = engine.skip_records(id);
    if (failure.live) {
      for (const std::uint64_t read : report_reads(failure.records)) {
        const Outcome outcome = run_op(
            [&] { failure.reports.push_back(engine.report(id, AllocationId::from_raw(read))); });
        if (outcome.threw()) {
          failure.report_threw = show(outcome);
        }
      }
    }
    state.failures.push_back(std::move(failure));
  }
  return state;
}

/// Which rules an op's effect on claims is checked against, for messages.
const char* claims_rule(Kind kind) {
  switch (kind) {
  case Kind::taint:
    return "T1/T5";
  case Kind::written:
    return "T2/T5";
  case Kind::clear:
  case Kind::final_clear:
    return "T4";
  case Kind::move:
    return "T1/T4 (a move carries claims and tags over)";
  default:
    return "T1-T5 (an op that must not touch claims)";
  }
}

// ---------------------------------------------------------------------------
// The harness: core and model, one op at a time.

/// The walks Harness::check_report compares, each kind refilled into a kept
/// Report of its own (Harness::kept_reports_): through records (from an
/// output of the newest kept record, or of the oldest), and from a read no
/// record produced (the empty path).
enum class Walk : std::uint8_t { records, empty };
constexpr std::size_t kWalks = 2;

class Harness {
 public:
  /// One harness serves every input of the process (LLVMFuzzerTestOneInput
  /// keeps it): release_input() puts it back exactly where a new one would
  /// be (start() checks that), but
  /// the model's and the harness's buffers keep their capacity, so a warm
  /// run allocates only what core and the ops themselves allocate (issue
  /// 13: under AddressSanitizer every allocation costs).
  Harness()
      : check_(kTarget) {
    for (std::size_t at = 0; at < kAllocations; ++at) {
      model_.add_allocation();
    }
    grow_failure_table();
    fresh_table_capacity_ = graph_.table_capacity();
    prime_model();
    // Grown here, outside every input: a first growth inside one is a
    // malloc with no free, which libFuzzer takes for a leak (see
    // grow_failure_table). 256 ids cover most inputs; a longer one grows it
    // again, freeing the old buffer in the same run.
    carriers_.reserve(256);
    died_.reserve(256);
    prune_list_.reserve(256);
    refcounts_.reserve(256);
    query_owners_.reserve(256);
    for (Report& kept : kept_reports_) {
      kept.path.reserve(ErrorGraph::kept_skip_records);
    }
    errors_.reserve(kErrorKinds * kMessages.size());
    for (std::size_t kind = 0; kind < kErrorKinds; ++kind) {
      for (std::size_t text = 0; text < kMessages.size(); ++text) {
        errors_.push_back(make_error(static_cast<ErrorKind>(kind), text));
      }
    }
    check_.set_context([this] { return context(); });
  }

  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  /// The graph as new, its failure table grown to its first size. The graph
  /// is cleared, not replaced, between inputs (release_input), so the table
  /// keeps its slots; but its first growth, from no slots, allocates with
  /// no matching free, and in an input libFuzzer takes such a run for a
  /// leak and scans the whole heap (about half a second under ASan). Grown
  /// here, outside every input, each later growth frees the slots it
  /// replaces in the same run. Three nodes: two fill the inline slots, the
  /// third moves one into the table.
  void grow_failure_table() {
    for (int node = 0; node < 3; ++node) {
      static_cast<void>(graph_.insert(Error::torn_down()));
    }
    graph_.clear();
  }

  /// The model keeps its failure slots and their skip records across
  /// reset() and copies each input's failures and records into them
  /// (EngineModel::insert and skipped); an input that uses a slot or a
  /// record no earlier one used mallocs without a free, which libFuzzer
  /// takes for a leak (a re-run and a whole-heap scan: see
  /// grow_failure_table). So the slots are made here, outside every input:
  /// 256 failures (as many ids as the lists above are reserved for) with
  /// 40 records each (a burst is 33), every buffer at its widest — the
  /// longest message and kernel name, the most produced ids — so that no
  /// copy into them grows one. A longer input still grows them, once.
  void prime_model() {
    const Error widest_error(ErrorKind::Generic, kMessages[kLongestMessage]);
    SkipRecord widest_record{kKernels[kLongestKernel], AllocationId::from_raw(1), {}};
    for (std::uint64_t id = 1; id <= kMaxProduced + 1; ++id) {
      widest_record.produced.push_back(AllocationId::from_raw(id));
    }
    for (int failure = 0; failure < 256; ++failure) {
      const FailureId id = model_.insert(widest_error);
      for (int record = 0; record < 200; ++record) {
        model_.skipped(id, widest_record);
      }
    }
    model_.reset();
  }

  /// A Taint destroyed with claims aborts (R4); an input that ends early on
  /// a failed check never gets here, and every other path cleans up first.
  ~Harness() {
    for (Taint& taint : taints_) {
      taint.clear(graph_);
    }
  }

  /// Starts an input. `trace`: where to write its TLA+ trace
  /// (proofs/TRACES.md), or none. The previous input ended with
  /// release_input(), so everything is as new: check_fresh() proves it
  /// before the first op.
  void start(std::optional<std::filesystem::path> trace, std::size_t input_size) {
    trace_path_ = std::move(trace);
    input_size_ = input_size;
    if (trace_path_) {
      trace_ = tla::Trace();
    }
    max_failure_named_ = 1;
    check_fresh();
  }

  void run(ByteReader& in) {
    while (!in.empty()) {
      // Decoded in place into the log, which execute() reads: an Op (some
      // 200 bytes, zeroed) built, passed by value and copied into the log
      // cost three fills and two copies per op (issue 13, fortieth round).
      decode(in, ops_.emplace_back());
      execute();
    }
    finish();
    write_trace({});
    release_input();
  }

  /// Frees what this input made — the graph, the model's failures with
  /// their errors and records, the trace — and empties the harness's
  /// lists, keeping their capacity. At the end of the input rather than at
  /// the start of the next: libFuzzer counts the mallocs and frees of each
  /// run, and a run that leaves memory behind costs a leak check (an LSan
  /// scan of the whole heap) — and, a thousand of them later, the end of
  /// leak detection for the session.
  void release_input() {
    for (Taint& taint : taints_) {
      taint.clear(graph_); // Clean already (finish); kept so the graph may go.
    }
    // As a fresh graph (core's clear(), pinned by tests/engine/clear_test.cpp;
    // check_fresh() checks its ids and size at the next start), but its
    // failure table keeps its slots: a fresh graph per input regrew the
    // table from empty every time (IdTable::grow, issue 13), up to
    // hundreds of slots after a burst of inserts. The graph is empty here
    // (finish() checked R4), so clear() touches no table slot.
    graph_.clear();
    // But only while the table kept its first size. Its capacity decides
    // whether an insert allocates, so under an injected allocation fault
    // (fault_at) an op failed alone and succeeded after an input that had
    // grown the table: the same input ran two ways, and libFuzzer kept
    // inputs for coverage they do not show alone (fuzz/ROUNDS.md, the
    // fourteenth round; pinned by the traced fuzz.taint_fuzzer.order). And
    // every sweep walks the whole table (IdTable::check_invariants, for_each
    // in check_graph and check_refcounts), so a grown table slowed every
    // later input (the fifteenth round). After an input that grew it, the
    // graph is replaced by a fresh one and its table grown to the first
    // size again, in this run, which frees the old table: the run stays
    // balanced for libFuzzer's leak check. check_fresh() checks the size.
    if (graph_.table_capacity() != fresh_table_capacity_) {
      graph_ = ErrorGraph();
      grow_failure_table();
    }
    model_.reset();
    held_.clear();
    live_.clear();
    touch_.allocations = {};
    touch_.failures.clear();
    touch_.first_new = 1;
    touch_.reports = Reports::none;
    touch_.records_added = 0;
    pending_fault_ = -1;
    ops_since_sweep_ = 0;
    ops_.clear();
    for (Report& kept : kept_reports_) {
      kept.path.clear(); // Frees this input's records; keeps the room.
    }
    prune_list_.clear();
    trace_.reset();
    trace_path_.reset();
  }

 private:
  // -- decoding -------------------------------------------------------------

  /// Fills `op`, a fresh (value-initialized) one, from the input.
  void decode(ByteReader& in, Op& op) const {
    op.offset = in.position();
    const std::uint8_t head = in.byte();
    op.kind = kOpTable[head & 31u];
    op.alloc = (head >> 5) & 3u;
    // Bit 7: one in eight of these ops runs core under an allocation fault.
    if ((head & 0x80u) != 0 && faultable(op.kind)) {
      const std::uint8_t fault = in.byte();
      if (fault < 32) {
        op.fault_at = fault % 8;
      }
    }
    switch (op.kind) {
    case Kind::insert:
    case Kind::replace:
      if (op.kind == Kind::replace) {
        op.failure = pick_failure(in);
      }
      op.error_kind = static_cast<ErrorKind>(in.below(kErrorKinds));
      op.text = static_cast<std::size_t>(in.below(kMessages.size()));
      if (op.kind == Kind::insert) {
        // One in eight inserts is a burst of 2..33 failures, so the graph's
        // table holds enough nodes to grow, collide and wrap around.
        const std::uint8_t burst = in.byte();
        op.repeat = (burst & 0xe0u) == 0xe0u && op.fault_at < 0 ? 2 + (burst & 0x1fu) : 1;
      }
      break;
    case Kind::taint:
      op.range = pick_range(in);
      op.failure = pick_failure(in);
      break;
    case Kind::written:
    case Kind::query:
      op.range = pick_range(in);
      break;
    case Kind::clear:
      break;
    case Kind::prune: {
      op.failure = pick_failure(in);
      // One in eight prunes sweeps the held failures whose id is one residue
      // mod 3 instead: many removals from the table, in id order (G5).
      const std::uint8_t sweep = in.byte();
      op.variant = (sweep & 0xe0u) == 0xe0u ? 1 : 0;
      op.needed = sweep % 3;
      break;
    }
    case Kind::skipped: {
      op.failure = pick_failure(in);
      const std::uint8_t kernel = in.byte(); // Bit 7: the launch ran before the failure was known.
      op.text = kernel % kKernels.size();
      op.ran = (kernel & 0x80u) != 0;
      op.needed = 1 + in.below(kAllocationIds);
      op.produced_count = static_cast<std::size_t>(in.below(kMaxProduced + 1));
      for (std::size_t at = 0; at < op.produced_count; ++at) {
        op.produced[at] = 1 + in.below(kAllocationIds);
      }
      // One in eight skips is a burst of 2..33 chained records.
      const std::uint8_t burst = in.byte();
      op.repeat = (burst & 0xe0u) == 0xe0u && op.fault_at < 0 ? 2 + (burst & 0x1fu) : 1;
      break;
    }
    case Kind::report:
      op.failure = pick_failure(in);
      op.needed = 1 + in.below(kAllocationIds);
      break;
    case Kind::reports: {
      // 0..4 claims: an empty list is valid.
      op.pair_count = static_cast<std::size_t>(in.below(kMaxPairs + 1));
      for (std::size_t at = 0; at < op.pair_count; ++at) {
        const std::uint64_t failure = pick_failure(in);
        op.pairs[at] = {failure, 1 + in.below(kAllocationIds)};
      }
      break;
    }
    case Kind::move:
      op.other = static_cast<std::size_t>(in.below(kAllocations));
      op.variant = static_cast<std::uint8_t>(in.below(2));
      break;
    case Kind::graph_contract:
      op.variant = static_cast<std::uint8_t>(in.below(4));
      if (op.variant == 1) {
        op.failure = pick_untagged(in, /*include_live=*/true);
      } else if (op.variant == 2) {
        op.failure = pick_untagged(in, /*include_live=*/false);
      }
      break;
    case Kind::graph_move:
    case Kind::final_clear:
    case Kind::final_prune:
      break;
    }
  }

  /// Mostly a live failure; else any id ever minted or the next, never-minted
  /// one, so dead and unknown ids reach every op that takes one.
  std::uint64_t pick_failure(ByteReader& in) const {
    const std::uint8_t mode = in.byte();
    if (mode % 4 != 0 && !live_.empty()) {
      return live_[static_cast<std::size_t>(in.below(live_.size()))];
    }
    const std::uint64_t minted = model_.next_id().raw() - 1;
    return 1 + in.below(minted + 1);
  }

  /// A failure no carrier holds a tag on: a held one (live, never tagged)
  /// when `include_live`, a dead one, or the never-minted next id.
  /// Counted, then walked to the chosen one, rather than listed: the same
  /// candidates in the same order give the same pick, without a vector per
  /// decoded op.
  std::uint64_t pick_untagged(ByteReader& in, bool include_live) const {
    const std::uint64_t next = model_.next_id().raw();
    const auto candidate = [&](std::uint64_t raw) {
      const FailureId id = FailureId::from_raw(raw);
      return model_.live(id) ? include_live && model_.tags(id) == 0 : true;
    };
    std::uint64_t count = 1; // The never-minted next id, last.
    for (std::uint64_t raw = 1; raw < next; ++raw) {
      count += candidate(raw) ? 1u : 0u;
    }
    std::uint64_t pick = in.below(count);
    for (std::uint64_t raw = 1; raw < next; ++raw) {
      if (candidate(raw) && pick-- == 0) {
        return raw;
      }
    }
    return next;
  }

  static RangeSpec pick_range(ByteReader& in) {
    const std::uint8_t mode = in.byte();
    const bool sized = (mode & 0x10u) != 0;
    auto make = [&](std::uint64_t begin, std::uint64_t end) {
      return sized ? RangeSpec{true, begin, end - begin} : RangeSpec{false, begin, end};
    };
    switch (mode & 0x0fu) {
    case 11:
    case 12: { // Inside the top window.
      const std::uint64_t begin = kHighBase + in.below(64);
      return make(begin, begin + in.below(UINT64_MAX - begin + 1));
    }
    case 13: { // Ending at the last representable offset.
      return make(kHighBase + in.below(64), UINT64_MAX);
    }
    case 14: { // From the small space into the top window.
      const std::uint64_t begin = in.below(kSmallSpace + 1);
      return make(begin, UINT64_MAX - in.below(64));
    }
    case 15: { // Bad bounds: the checked constructor must throw (§3.1).
      const bool high = (mode & 0x20u) != 0;
      if (!sized) {
        const std::uint64_t begin = high ? kHighBase + in.below(64) : 1 + in.below(kSmallSpace);
        const std::uint64_t end = begin - 1 - in.below(std::min<std::uint64_t>(begin, 64));
        return {false, begin, end};
      }
      const std::uint64_t offset = high ? kHighBase + in.below(64) : 1 + in.below(kSmallSpace);
      return {true, offset, (UINT64_MAX - offset + 1) + in.below(offset)};
    }
    default: { // The small space, where claims collide.
      const std::uint64_t begin = in.below(kSmallSpace + 1);
      return make(begin, begin + in.below(kSmallSpace + 1 - begin));
    }
    }
  }

  // -- execution ------------------------------------------------------------

  /// Runs one call into core, under the op's allocation fault if it has one
  /// that has not fired yet.
  template <class Fn>
  Outcome run_core(Fn&& fn) {
    if (pending_fault_ < 0) {
      return run_op(std::forward<Fn>(fn));
    }
    // Disarmed on the way out of the call, exception or not, before run_op
    // allocates anything of its own to describe the outcome.
    struct Disarm {
      std::int64_t& pending;
      ~Disarm() { pending = taintpool::testing::disarm_allocation_fault(); }
    };
    return run_op([&] {
      const Disarm disarm{pending_fault_};
      taintpool::testing::arm_allocation_fault(static_cast<std::uint64_t>(pending_fault_));
      std::forward<Fn>(fn)();
    });
  }

  /// Runs the model's side of an op — unless core ran out of memory, which
  /// the model cannot: then the op did not happen, and both report it so.
  template <class Fn>
  static Outcome run_model(const Outcome& core, Fn&& fn) {
    return core.ending == Ending::bad_alloc ? core : run_op(std::forward<Fn>(fn));
  }

  /// run_model for the model's answering calls (EngineModel::try_taint,
  /// try_skipped, try_report_path; `fn` returns whether the model did it):
  /// a refusal ends as the std::logic_error the throwing call throws —
  /// only the ending is compared — without a throw. Under the sanitizers a
  /// throw cost more than a whole op, and a third of this target's throws
  /// were the model's (issue 13, fortieth round). Core still throws, and
  /// must.
  template <class Fn>
  static Outcome run_model_or_refuse(const Outcome& core, const char* refusal, Fn&& fn) {
    if (core.ending == Ending::bad_alloc) {
      return core;
    }
    bool done = false;
    const Outcome outcome = run_op([&] { done = std::forward<Fn>(fn)(); });
    return outcome.threw() || done ? outcome : Outcome::stated(Ending::logic_error, refusal);
  }

  /// Builds the op's range through the checked constructor; a bad spec must
  /// throw the documented exception (§3.1) and yields none.
  std::optional<ByteRange> build_range(const RangeSpec& spec) const {
    ByteRange range;
    const Outcome outcome = run_op([&] {
      range = spec.sized ? ByteRange::sized(spec.a, spec.b) : ByteRange::of(spec.a, spec.b);
    });
    const Ending expected = spec.valid()
                                ? Ending::returned
                                : (spec.sized ? Ending::overflow_error : Ending::invalid_argument);
    if (outcome.ending != expected) {
      check_.fail("§3.1", "checked ByteRange constructor " + show_spec(spec) + " " + show(outcome) +
                              ", expected: " + show(expected));
    }
    if (!spec.valid()) {
      return std::nullopt;
    }
    const std::uint64_t end = spec.sized ? spec.a + spec.b : spec.b;
    check_.expect(range.begin() == spec.a && range.end() == end && range.size() == end - spec.a &&
                      range.empty() == (spec.a == end),
                  "§3.1", [&] {
                    return "ByteRange bounds differ from " + show_spec(spec) + ": " + show(range);
                  });
    return range;
  }

  /// A Report for kept_reports_: its root at the longest message's capacity.
  static Report kept_report() {
    return Report{FailureId::from_raw(1),
                  make_error(ErrorKind::Generic, kLongestMessage),
                  AllocationId::from_raw(1),
                  std::nullopt,
                  {},
                  AllocationId::from_raw(1),
                  0,
                  false};
  }

  /// The error an insert or replace op names (errors_).
  [[nodiscard]] const Error& error_of(const Op& op) const {
    return errors_[static_cast<std::size_t>(op.error_kind) * kMessages.size() +
                   op.text % kMessages.size()];
  }

  /// Runs the op decode() (or finish()) just appended to the log.
  void execute() {
    const Op& current = ops_.back();
    pending_fault_ = current.fault_at;
    Outcome core;
    Outcome model;
    note_touched(current);
    const std::vector<FailureId> held_before = trace_ ? held_ : std::vector<FailureId>();
    const std::vector<FailureId> pruned_before =
        trace_ && current.kind == Kind::prune ? prune_list_ : std::vector<FailureId>();
    switch (current.kind) {
    case Kind::insert: {
      const Error& error = error_of(current);
      for (std::uint64_t step = 0; step < current.repeat; ++step) {
        const FailureId expected = graph_.next_id();
        Error argument = error; // Copied before the call: only insert's own allocations count.
        std::optional<FailureId> inserted;
        core = run_core([&] { inserted = graph_.insert(std::move(argument)); });
        if (core.threw()) {
          break; // Out of memory (checked below): the model does not insert either.
        }
        const FailureId core_id = *inserted;
        const FailureId model_id = model_.insert(error);
        check_.expect_equal("G1", "insert's id", core_id, model_id);
        check_.expect_equal("G1", "insert's id against next_id() before it", core_id, expected);
        held_.push_back(core_id);
      }
      break;
    }
    case Kind::taint: {
      const std::optional<ByteRange> range = build_range(current.range);
      if (!range) {
        break;
      }
      const FailureId failure = FailureId::from_raw(current.failure);
      Taint& taint = taints_[current.alloc];
      core = run_core([&] { taint.taint(*range, failure, graph_); });
      model = run_model_or_refuse(core, "model: taint with a failure that is not live (R2)",
                                  [&] { return model_.try_taint(current.alloc, *range, failure); });
      check_.expect_equal("T1/R2", "how taint ended (a dead failure must be refused)", core, model);
      if (!core.threw() && !range->empty()) {
        forget_held(failure); // It has a carrier now: its tag count speaks for it (R3).
      }
      break;
    }
    case Kind::written: {
      const std::optional<ByteRange> range = build_range(current.range);
      if (!range) {
        break;
      }
      core = run_core([&] { taints_[current.alloc].written(*range, graph_); });
      model = run_model(core, [&] { model_.written(current.alloc, *range); });
      check_.expect_equal("T2", "how written ended", core, model);
      break;
    }
    case Kind::clear:
      taints_[current.alloc].clear(graph_);
      model_.clear(current.alloc);
      break;
    case Kind::query: {
      const std::optional<ByteRange> range = build_range(current.range);
      if (range) {
        check_query(current.alloc, *range);
      }
      break;
    }
    case Kind::replace: {
      const Error& error = error_of(current);
      const FailureId failure = FailureId::from_raw(current.failure);
      Error argument = error;
      core = run_core([&] { graph_.replace(failure, std::move(argument)); });
      model = run_model(core, [&] { model_.replace(failure, error); });
      check_.expect_equal("G4", "how replace ended (a missing failure is ignored)", core, model);
      break;
    }
    case Kind::prune:
      // note_touched() listed them, and nothing has changed since.
      for (const FailureId failure : prune_list_) {
        graph_.prune(failure);
        model_.prune(failure);
      }
      break;
    case Kind::skipped: {
      const FailureId failure = FailureId::from_raw(current.failure);
      for (std::uint64_t step = 0; step < current.repeat && !core.threw(); ++step) {
        // One record, kept by the harness, for both: core copies it in
        // (skipped(root, const SkipRecord&): into the dropped record's
        // buffers once the ring is full), so the copy is core's own
        // allocation and an injected fault may land on it — then nothing
        // may change. A record built per skip and moved in was most of
        // this target's allocations (issue 13, thirtieth round).
        skip_record(current, step, record_);
        if (current.repeat > 1 && step + 1 == current.repeat) {
          // A burst's last record is moved in instead, so the other
          // overload, skipped(root, SkipRecord&&), meets a full ring too:
          // it picks its slot itself, and a one-line slip there (the slot
          // after the oldest) outlived every committed seed while only the
          // copying overload was driven. One copy per burst, made here,
          // outside the core call.
          SkipRecord moved = record_;
          core = run_core([&] { graph_.skipped(failure, std::move(moved)); });
        } else {
          core = run_core([&] { graph_.skipped(failure, record_); });
        }
        model = run_model_or_refuse(core, "model: skip recorded on a failure that is not live (G7)",
                                    [&] { return model_.try_skipped(failure, record_); });
        check_.expect_equal("G7", "how skipped ended (only a live root may record a skip)", core,
                            model);
      }
      break;
    }
    case Kind::report: {
      const FailureId failure = FailureId::from_raw(current.failure);
      const AllocationId read = AllocationId::from_raw(current.needed);
      std::optional<Report> core_report;
      AllocationId origin = read;
      core = run_core([&] { core_report = graph_.report(failure, read); });
      model = run_model_or_refuse(core, kModelReportRefusal,
                                  [&] { return try_report_path(failure, read, origin); });
      check_.expect_equal("G8", "how report ended (only a live failure explains a read)", core,
                          model);
      if (core_report && !same_report(*core_report, failure, read, origin)) [[unlikely]] {
        check_.expect_equal("G8", "report", core_report,
                            std::optional<Report>(model_.report(failure, read)));
      }
      if (core_report) {
        // The printer must hold up on whatever the walk produced.
        const std::string text = to_string(*core_report);
        check_.expect(text.find("cannot be read") != std::string::npos, "G8",
                      [&] { return "to_string(report) lacks the headline: " + text; });
      }
      break;
    }
    case Kind::reports: {
      std::vector<std::pair<FailureId, AllocationId>> claims;
      for (const auto& [failure, read] : current.read_pairs()) {
        claims.emplace_back(FailureId::from_raw(failure), AllocationId::from_raw(read));
      }
      std::vector<Report> core_reports;
      std::vector<Report> model_reports;
      core = run_core([&] { core_reports = graph_.reports(claims); });
      // G9 as stated: one report per distinct failure, first-seen order, a
      // repeated failure keeps its first allocation.
      model = run_model(core, [&] {
        for (const auto& claim : claims) {
          const bool seen =
              std::any_of(model_reports.begin(), model_reports.end(),
                          [&](const Report& done) { return done.failure == claim.first; });
          if (!seen) {
            model_reports.push_back(model_.report(claim.first, claim.second));
          }
        }
      });
      check_.expect_equal("G9", "how reports ended", core, model);
      if (!core.threw()) {
        check_.expect_equal("G9", "reports", core_reports, model_reports);
      }
      break;
    }
    case Kind::move:
      execute_move(current, core, model);
      break;
    case Kind::graph_contract:
      execute_graph_contract(current, core, model);
      break;
    case Kind::graph_move:
      execute_graph_move();
      break;
    case Kind::final_clear:
      for (std::size_t at = 0; at < kAllocations; ++at) {
        taints_[at].clear(graph_);
        model_.clear(at);
      }
      break;
    case Kind::final_prune:
      // A copy, as held_ changes after the op; into the kept list, not a
      // fresh vector per input.
      prune_list_.assign(held_.begin(), held_.end());
      for (const FailureId failure : prune_list_) {
        graph_.prune(failure);
        model_.prune(failure);
      }
      break;
    }
    if (core.ending == Ending::bad_alloc) {
      // Only an injected fault may run core out of memory, and an op that
      // throws must leave everything as it was (taint.hpp "Contract").
      check_.expect(current.fault_at >= 0 && pending_fault_ < 0, "contract",
                    "std::bad_alloc without an injected allocation fault");
    }
    pending_fault_ = -1;
    if (trace_ && core.ending != Ending::bad_alloc) {
      // An op that ran out of memory did not happen.
      trace_op(current, core, held_before, pruned_before);
    }
    // A failure that died (pruned, or its last carrier let go) is no longer
    // held by anyone. Only a touched failure can have died (settle_live
    // relies on the same; every sweep checks both lists against the model),
    // so only a touched failure the model has lost is looked up in the held
    // list (ascending: ids are minted ascending and pushed as minted), not
    // every held failure in the model: after a burst of inserts that scan
    // ran over dozens of held failures on every op (issue 13, twelfth
    // round: 1.8% under perf). The model's liveness is an O(1) lookup, and
    // a touched failure seldom dies, so the lists seldom change. When some
    // did die, both lists lose them in one pass each (erase_sorted): an
    // erase per failure shifted the rest of the list each time, so the
    // end-of-input prune of n held failures moved O(n^2) ids (with their
    // ASan-checked memmoves, about 4% of a run under perf; issue 13,
    // fifteenth round).
    died_.clear();
    for (const std::uint64_t raw : touch_.failures) {
      // Id 0 (graph_contract) is never minted, so never held.
      if (raw != 0 && !model_.live(FailureId::from_raw(raw))) {
        died_.push_back(raw); // Ascending, as touch_.failures is.
      }
    }
    erase_sorted(held_, died_);
    settle_live();
    // An op that threw (refused, or out of memory) changed nothing in the
    // model, so this also checks that it changed nothing in core.
    check_touched(current);
    if (++ops_since_sweep_ >= kFullCheckEvery) {
      check_everything();
    }
  }

  // -- what an op touched ---------------------------------------------------

  /// Records, before `op` runs, what it may change: the allocations it names,
  /// the failures it names, and every failure that owns a byte of an
  /// allocation it may change (only those can lose their last carrier).
  void note_touched(const Op& op) {
    touch_.allocations = {};
    touch_.failures.clear();
    touch_.reports = Reports::none;
    touch_.records_added = 0;
    touch_.first_new = graph_.next_id().raw();
    const auto allocation = [&](std::size_t at) {
      touch_.allocations[at] = true;
      for (const OwnedRun& run : model_.runs(at)) {
        touch_.failures.push_back(run.owner);
      }
    };
    switch (op.kind) {
    case Kind::insert:
      break; // The new ids: from first_new to next_id after the op.
    case Kind::taint:
      allocation(op.alloc);
      touch_.failures.push_back(op.failure);
      break;
    case Kind::written:
    case Kind::clear:
    case Kind::query:
      allocation(op.alloc);
      break;
    case Kind::replace:
      touch_.failures.push_back(op.failure);
      touch_.reports = Reports::root;
      break;
    case Kind::prune:
      list_pruned(op);
      for (const FailureId failure : prune_list_) {
        touch_.failures.push_back(failure.raw());
      }
      break;
    case Kind::skipped:
      touch_.failures.push_back(op.failure);
      touch_.reports = Reports::new_records;
      touch_.records_added = op.repeat;
      break;
    case Kind::report:
      touch_.failures.push_back(op.failure);
      break;
    case Kind::reports:
      for (const auto& pair : op.read_pairs()) {
        touch_.failures.push_back(pair.first);
      }
      break;
    case Kind::move:
      allocation(op.alloc);
      allocation(op.other);
      break;
    case Kind::graph_contract:
      if (op.variant == 1 || op.variant == 2) {
        touch_.failures.push_back(op.failure);
      }
      break;
    case Kind::graph_move:
      // Every node changed hands: each live one is compared after the
      // round trip (check_moved_from checks the graphs it passed through).
      touch_.failures.insert(touch_.failures.end(), live_.begin(), live_.end());
      break;
    case Kind::final_clear:
      for (std::size_t at = 0; at < kAllocations; ++at) {
        allocation(at);
      }
      break;
    case Kind::final_prune:
      for (const FailureId failure : held_) {
        touch_.failures.push_back(failure.raw());
      }
      break;
    }
    // Each failure once: an allocation lists its owner once per run, so a
    // split claim named the same failure again and again, and check_touched
    // compared it that many times — the same comparisons of the same state
    // (issue 13: check_failure was a quarter of a run under perf).
    std::sort(touch_.failures.begin(), touch_.failures.end());
    touch_.failures.erase(std::unique(touch_.failures.begin(), touch_.failures.end()),
                          touch_.failures.end());
  }

  /// Removes from `list` (ascending) every id of `gone` (ascending; ids
  /// the list lacks are skipped) in one pass from the first of them, and
  /// nothing at all when `gone` is empty: what the lists' lower_bound and
  /// erase per id did, without shifting the tail once per id.
  template <class Id>
  static void erase_sorted(std::vector<Id>& list, const std::vector<std::uint64_t>& gone) {
    if (gone.empty()) {
      return;
    }
    const auto raw = [](const Id& id) -> std::uint64_t {
      if constexpr (std::is_same_v<Id, std::uint64_t>) {
        return id;
      } else {
        return id.raw();
      }
    };
    auto out = std::partition_point(list.begin(), list.end(),
                                    [&](const Id& id) { return raw(id) < gone.front(); });
    auto next = gone.begin();
    for (auto in = out; in != list.end(); ++in) {
      while (next != gone.end() && *next < raw(*in)) {
        ++next;
      }
      if (next == gone.end() || *next != raw(*in)) {
        *out++ = *in;
      }
    }
    list.erase(out, list.end());
  }

  /// Brings live_ up to date with the op that just ran: only a touched
  /// failure can have died, and only a new one can have been born.
  /// check_everything() compares the result with the model's own list.
  void settle_live() {
    erase_sorted(live_, died_); // The touched failures the model has lost.
    for (std::uint64_t raw = touch_.first_new; raw < model_.next_id().raw(); ++raw) {
      live_.push_back(raw); // A new failure is live: nothing could carry it yet.
    }
  }

  /// Taint is move-only: moving carries claims and their tags (R1 unchanged);
  /// move-assigning over a taint that still holds claims must throw and leave
  /// both as they were. The model has no move: it re-taints the destination
  /// with the source's claims and clears the source.
  void execute_move(const Op& op, Outcome& core, Outcome& model) {
    const std::size_t from = op.alloc;
    const std::size_t to = op.other;
    const bool must_throw = from != to && !model_.runs(to).empty(); // In place: no copy.
    core = run_op([&] {
      if (op.variant == 0) {
        taints_[to] = std::move(taints_[from]);
        return;
      }
      Taint moved(std::move(taints_[from]));
      check_.expect(taints_[from].is_clean(), "T4", "a moved-from taint still holds claims");
      try {
        taints_[to] = std::move(moved);
      } catch (...) {
        taints_[from] = std::move(moved); // `from` is clean now: this cannot throw.
        throw;
      }
    });
    if (must_throw) {
      model = Outcome::stated(Ending::logic_error, "model: destination holds claims");
      return;
    }
    model = run_op([&] {
      if (from == to) {
        return;
      }
      for (const auto& [failure, range] : model_.claims(from)) {
        model_.taint(to, range, failure);
      }
      model_.clear(from);
    });
    check_.expect_equal("T4", "how the move ended", core, model);
  }

  /// Contract violations the ErrorGraph API offers directly, none of which
  /// may change anything: untag of a node no carrier tags, tag of a node that
  /// does not exist (G2, G3, R2), and id 0 (never minted).
  void execute_graph_contract(const Op& op, Outcome& core, Outcome& model) {
    const FailureId failure = FailureId::from_raw(op.failure);
    switch (op.variant) {
    case 0:
      core = run_op([&] { graph_.untag(std::nullopt); });
      check_.expect_equal("G3", "untag(none) must do nothing", core, Outcome{});
      model = core;
      return;
    case 1:
      check_.expect(model_.tags(failure) == 0, "fuzzer", "picked a tagged failure to untag");
      core = run_op([&] { graph_.untag(failure); });
      model = Outcome::stated(Ending::logic_error, "untag without a matching tag");
      check_.expect_equal("G3", "untag of a failure nobody tagged", core, model);
      return;
    case 2:
      check_.expect(!model_.live(failure), "fuzzer", "picked a live failure to tag");
      core = run_op([&] { graph_.tag(failure); });
      model = Outcome::stated(Ending::logic_error, "tag of a failure with no node");
      check_.expect_equal("G2/R2", "tag of a failure with no node", core, model);
      return;
    default: {
      const Outcome zero_failure = run_op([] { (void)FailureId::from_raw(0); });
      const Outcome zero_allocation = run_op([] { (void)AllocationId::from_raw(0); });
      const Outcome expected = Outcome::stated(Ending::invalid_argument);
      check_.expect_equal("G1", "FailureId::from_raw(0)", zero_failure, expected);
      check_.expect_equal("G1", "AllocationId::from_raw(0)", zero_allocation, expected);
      core = zero_failure;
      model = expected;
      return;
    }
    }
  }

  /// ErrorGraph is movable (carriers name nodes by id, so the nodes may move
  /// between graph objects): a round trip through two other graphs — one
  /// move-assigned over while it holds a node of its own — must hand back
  /// exactly the same graph, and leave each moved-from graph empty and sound.
  void execute_graph_move() {
    const FailureId next = graph_.next_id();
    ErrorGraph other;
    (void)other.insert(Error::generic("dropped by the move-assignment"));
    other = std::move(graph_);
    check_moved_from(graph_, next, "move-assigned");
    ErrorGraph back(std::move(other));
    check_moved_from(other, next, "move-constructed");
    graph_ = std::move(back);
    check_moved_from(back, next, "move-assigned back");
  }

  /// A moved-from graph is empty, sound, and usable: it goes on minting
  /// after the ids it had already used (error_graph.hpp), so an id is never
  /// minted twice by one graph object (G1).
  void check_moved_from(ErrorGraph& moved, FailureId next, const char* how) const {
    std::size_t visited = 0;
    moved.for_each([&](FailureId, const Error&, std::uint64_t) { ++visited; });
    const Outcome shape = run_op([&] { moved.check_invariants(); });
    check_.expect(
        moved.empty() && moved.size() == 0 && visited == 0 && !shape.threw(), "G1/G3", [&] {
          return std::string("a graph ") + how + " from holds " + std::to_string(moved.size()) +
                 " nodes, visits " + std::to_string(visited) + ", check_invariants " + show(shape);
        });
    check_.expect_equal(
        "G1", [&] { return std::string("next_id of a graph ") + how + " from"; }, moved.next_id(),
        next);
    const FailureId minted = moved.insert(Error::torn_down());
    check_.expect(minted == next && moved.size() == 1 && moved.contains(minted), "G1", [&] {
      return std::string("insert into a graph ") + how + " from gave " + show(minted) +
             ", expected " + show(next);
    });
    moved.prune(minted);
    check_.expect(moved.empty(), "G5", [&] {
      return std::string("prune of an untagged node in a graph ") + how + " from left " +
             std::to_string(moved.size()) + " nodes";
    });
  }

  /// T3 for one range, and ByteRange's algebra against the claims it meets.
  void check_query(std::size_t alloc, ByteRange range) {
    const Taint& taint = taints_[alloc];
    // Into a kept list (the model's owners, as failures() returns them).
    model_.failures(alloc, range, query_owners_);
    const std::vector<FailureId>& expected = query_owners_;
    check_.expect_equal(
        "T3", [&] { return "failures(" + show(range) + ") of alloc " + std::to_string(alloc); },
        taint.failures(range), expected);
    const std::optional<FailureId> one = taint.failure(range);
    check_.expect(one.has_value() == !expected.empty() &&
                      (!one || std::find(expected.begin(), expected.end(), *one) != expected.end()),
                  "T3", [&] {
                    return "failure(" + show(range) + ") of alloc " + std::to_string(alloc) +
                           " is " + show(one) + ", owners are " + show(expected);
                  });
    // The model's runs in place (claims() would copy them into a fresh
    // vector per query, issue 13): the same ranges, in the same order.
    for (const OwnedRun& run : model_.runs(alloc)) {
      const ByteRange claimed = ByteRange::of(run.begin, run.end);
      const std::uint64_t lo = std::max(range.begin(), claimed.begin());
      const std::uint64_t hi = std::min(range.end(), claimed.end());
      const ByteRange common = range.intersect(claimed);
      check_.expect(range.overlaps(claimed) == (lo < hi) &&
                        common == (lo < hi ? ByteRange::of(lo, hi) : ByteRange()) &&
                        range.touches(claimed) ==
                            (range.begin() <= claimed.end() && claimed.begin() <= range.end()) &&
                        range.contains(claimed) ==
                            (claimed.empty() ||
                             (range.begin() <= claimed.begin() && claimed.end() <= range.end())),
                    "§3.1", [&] {
                      return "ByteRange algebra on " + show(range) + " and " + show(claimed) +
                             " (of " + show(FailureId::from_raw(run.owner)) + ")";
                    });
    }
  }

  void forget_held(FailureId failure) { std::erase(held_, failure); }

  /// Lists in prune_list_ the failures a prune op prunes, in order: its
  /// one failure, or for a sweep the held failures of its residue. A kept
  /// list, filled once per op (note_touched) and read by execute(): a fresh
  /// vector, built twice per prune op, was 2% of an input's allocations
  /// (issue 13, twenty-fourth round).
  void list_pruned(const Op& op) {
    prune_list_.clear();
    if (op.variant == 0) {
      prune_list_.push_back(FailureId::from_raw(op.failure));
      return;
    }
    for (const FailureId failure : held_) {
      if (failure.raw() % 3 == op.needed) {
        prune_list_.push_back(failure);
      }
    }
  }

  // -- the TLA+ trace (proofs/TRACES.md, TaintTrace.tla) --------------------

  /// The events of one executed op, with the claims of the allocation each
  /// names and, on the last, every live node with its tags — the state after
  /// the op, which for a multi-call op is the state after its last call.
  void trace_op(const Op& op, const Outcome& core, const std::vector<FailureId>& held_before,
                const std::vector<FailureId>& pruned_before) {
    using tla::Value;
    std::vector<std::pair<Value, std::optional<std::size_t>>> events;
    const auto number = [](std::uint64_t value) { return Value::number(value); };
    const auto event = [](const char* name) {
      return Value::record({{"op", Value::string(name)}});
    };
    const bool threw = core.ending == Ending::logic_error;
    auto on_alloc = [&](const char* name, std::size_t alloc) {
      Value e = event(name);
      e.set("alloc", number(alloc + 1));
      return e;
    };
    auto with_range = [&](Value e) -> std::optional<Value> {
      if (!op.range.valid()) {
        return std::nullopt; // Refused by the checked constructor: never reached the taint.
      }
      const std::uint64_t end = op.range.sized ? op.range.a + op.range.b : op.range.b;
      e.set("lo", Value::offset(op.range.a));
      e.set("hi", Value::offset(end));
      return e;
    };
    switch (op.kind) {
    case Kind::insert:
      for (std::uint64_t id = graph_.next_id().raw() - op.repeat; id < graph_.next_id().raw();
           ++id) {
        Value e = event("insert");
        e.set("f", number(id));
        events.emplace_back(std::move(e), std::nullopt);
      }
      break;
    case Kind::taint:
      if (auto e = with_range(on_alloc("taint", op.alloc))) {
        e->set("f", number(op.failure));
        e->set("threw", Value::boolean(threw));
        events.emplace_back(std::move(*e), op.alloc);
      }
      break;
    case Kind::written:
      if (auto e = with_range(on_alloc("written", op.alloc))) {
        events.emplace_back(std::move(*e), op.alloc);
      }
      break;
    case Kind::clear:
      events.emplace_back(on_alloc("clear", op.alloc), op.alloc);
      break;
    case Kind::query:
      if (auto e = with_range(on_alloc("query", op.alloc))) {
        const ByteRange range = op.range.sized ? ByteRange::sized(op.range.a, op.range.b)
                                               : ByteRange::of(op.range.a, op.range.b);
        std::vector<Value> fs;
        for (const FailureId failure : taints_[op.alloc].failures(range)) {
          fs.push_back(number(failure.raw()));
        }
        const std::optional<FailureId> one = taints_[op.alloc].failure(range);
        e->set("fs", Value::tuple(std::move(fs)));
        e->set("one", number(one ? one->raw() : 0));
        events.emplace_back(std::move(*e), op.alloc);
      }
      break;
    case Kind::replace: {
      Value e = event("replace");
      e.set("f", number(op.failure));
      events.emplace_back(std::move(e), std::nullopt);
      break;
    }
    case Kind::prune:
      for (const FailureId failure : pruned_before) {
        Value e = event("prune");
        e.set("f", number(failure.raw()));
        events.emplace_back(std::move(e), std::nullopt);
      }
      break;
    case Kind::skipped:
      // One event per record: a burst stops at the first refusal.
      for (std::uint64_t step = 0; step < (threw ? 1 : op.repeat); ++step) {
        Value e = event("skipped");
        e.set("f", number(op.failure));
        e.set("threw", Value::boolean(threw));
        events.emplace_back(std::move(e), std::nullopt);
      }
      break;
    case Kind::move: {
      Value e = on_alloc("move", op.alloc);
      e.set("to", number(op.other + 1));
      e.set("threw", Value::boolean(threw));
      events.emplace_back(std::move(e), op.alloc);
      break;
    }
    case Kind::graph_contract:
      if (op.variant == 1 || op.variant == 2) {
        Value e = event(op.variant == 1 ? "untag" : "tag");
        e.set("f", number(op.failure));
        e.set("threw", Value::boolean(threw));
        events.emplace_back(std::move(e), std::nullopt);
      }
      break;
    case Kind::final_clear:
      for (std::size_t at = 0; at < kAllocations; ++at) {
        events.emplace_back(on_alloc("clear", at), at);
      }
      break;
    case Kind::final_prune:
      for (const FailureId failure : held_before) {
        Value e = event("prune");
        e.set("f", number(failure.raw()));
        events.emplace_back(std::move(e), std::nullopt);
      }
      break;
    case Kind::report:
    case Kind::reports:
    case Kind::graph_move:
      break; // Nothing TaintTrace models (TRACES.md).
    }
    // TaintTrace needs every id the trace names (TraceMaxId), dead or never
    // minted ones included; the others are below the graph's next id.
    max_failure_named_ = std::max(max_failure_named_, op.failure);
    for (std::size_t at = 0; at < events.size(); ++at) {
      auto& [e, alloc] = events[at];
      if (alloc) {
        std::vector<Value> claims;
        taints_[*alloc].for_each_claim([&](FailureId failure, ByteRange range) {
          claims.push_back(Value::tuple(
              {number(failure.raw()), Value::offset(range.begin()), Value::offset(range.end())}));
        });
        e.set("claims", Value::tuple(std::move(claims)));
      }
      if (at + 1 == events.size()) {
        std::vector<std::pair<std::uint64_t, std::uint64_t>> nodes;
        graph_.for_each([&](FailureId failure, const Error&, std::uint64_t tags) {
          nodes.emplace_back(failure.raw(), tags);
        });
        std::sort(nodes.begin(), nodes.end());
        std::vector<Value> graph;
        for (const auto& [failure, tags] : nodes) {
          graph.push_back(Value::tuple({number(failure), number(tags)}));
        }
        e.set("graph", Value::tuple(std::move(graph)));
      }
      trace_->add(std::move(e));
    }
  }

  /// Writes the trace, when asked for one. `stopped` names the op a failed
  /// check stopped at: the trace then holds the ops before it.
  void write_trace(const std::string& stopped) const {
    if (!trace_ || !trace_path_) {
      return;
    }
    std::vector<std::string> comments = {
        std::string("Written by ") + kTarget + " from an input of " + std::to_string(input_size_) +
            " bytes: " + std::to_string(ops_.size()) + " ops, " + std::to_string(trace_->size()) +
            " events.",
        "Offsets are ranks among the offsets the trace uses (TRACES.md); allocations 1..4 are "
        "the fuzzer's four taints."};
    if (!stopped.empty()) {
      comments.push_back("A check failed at " + stopped + "; these are the events before it.");
    }
    tla::Trace trace = *trace_;
    std::vector<tla::Value> allocations;
    for (std::size_t at = 1; at <= kAllocations; ++at) {
      allocations.push_back(tla::Value::number(at));
    }
    trace.define("TraceAllocs", tla::Value::set(std::move(allocations)));
    trace.define("TraceMaxId", tla::Value::number(std::max<std::uint64_t>(
                                   {1, graph_.next_id().raw() - 1, max_failure_named_})));
    trace.write(*trace_path_, comments);
  }

  // -- comparison -----------------------------------------------------------

  /// The reset in release_input() is exact: core and the model are as new — no
  /// failure ever minted, every allocation clean — and so is everything the
  /// harness tracks. A harness reused across inputs that kept anything
  /// would make an input's outcome depend on the inputs before it.
  TAINTPOOL_FUZZ_CHECKER void check_fresh() {
    bool clean = true;
    for (std::size_t at = 0; at < kAllocations; ++at) {
      clean =
          clean && taints_[at].is_clean() && !taints_[at].is_spilled() && model_.runs(at).empty();
    }
    check_.expect(clean && model_.allocations() == kAllocations &&
                      model_.next_id() == FailureId::from_raw(1) && model_.size() == 0 &&
                      graph_.next_id() == FailureId::from_raw(1) && graph_.empty() &&
                      graph_.table_capacity() == fresh_table_capacity_ && held_.empty() &&
                      live_.empty() && touch_.failures.empty() && ops_.empty() &&
                      prune_list_.empty() &&
                      std::all_of(kept_reports_.begin(), kept_reports_.end(),
                                  [](const Report& kept) { return kept.path.empty(); }) &&
                      pending_fault_ < 0 && ops_since_sweep_ == 0 &&
                      std::all_of(carriers_.begin(), carriers_.end(),
                                  [](std::uint8_t bits) { return bits == 0; }),
                  "fuzzer", "the harness did not start the input from a fresh state");
  }

  /// After every op: what it touched (note_touched), core against the model.
  TAINTPOOL_FUZZ_CHECKER void check_touched(const Op& op) {
    check_.expect_equal("G1", "next_id", graph_.next_id(), model_.next_id());
    // live_ mirrors the model's live failures (checked in every sweep).
    check_.expect_equal("G1/G3", "graph size", graph_.size(), live_.size());
    index_carriers();
    for (std::size_t at = 0; at < kAllocations; ++at) {
      if (touch_.allocations[at]) {
        check_allocation(op, at);
      }
    }
    for (const std::uint64_t raw : touch_.failures) {
      check_failure(FailureId::from_raw(raw));
    }
    for (std::uint64_t raw = touch_.first_new; raw < graph_.next_id().raw(); ++raw) {
      check_failure(FailureId::from_raw(raw));
    }
    unindex_carriers();
  }

  /// One allocation's claims, compared in place with the model's runs, and
  /// its taint's shape.
  TAINTPOOL_FUZZ_CHECKER void check_allocation(const Op& op, std::size_t at) {
    const std::vector<OwnedRun>& runs = model_.runs(at);
    std::size_t index = 0;
    bool same = true;
    taints_[at].for_each_claim([&](FailureId failure, ByteRange range) {
      same = same && index < runs.size() && runs[index].owner == failure.raw() &&
             runs[index].begin == range.begin() && runs[index].end == range.end();
      ++index;
    });
    if (!same || index != runs.size()) [[unlikely]] {
      explain_claims(op, at);
    }
    owners_.clear();
    for (const OwnedRun& run : runs) {
      owners_.push_back(FailureId::from_raw(run.owner));
    }
    std::sort(owners_.begin(), owners_.end());
    owners_.erase(std::unique(owners_.begin(), owners_.end()), owners_.end());
    check_taint_shape(at, runs.size(), owners_);
  }

  /// check_allocation's claims comparison again, with its message: it
  /// fails. Out of line, so that the message's callable and the copies
  /// cost check_allocation's frame nothing (see check_failure).
  [[noreturn]] TAINTPOOL_FUZZ_CHECKER __attribute__((noinline, cold)) void
  explain_claims(const Op& op, std::size_t at) const {
    check_.expect_equal(
        claims_rule(op.kind), [&] { return "claims of alloc " + std::to_string(at); },
        CoreView{graph_, taints_}.claims(at), model_.claims(at));
    check_.fail("fuzzer", "check_allocation found a mismatch that explain_claims did not");
  }

  /// For check_failure: which allocations carry each failure in the model,
  /// one bit per allocation, indexed by raw id — one pass over every run
  /// instead of one per failure checked (each scanned all four allocations'
  /// runs: with the lookups around it, check_failure was a fifth of a run
  /// under perf; issue 13, twelfth round). The same runs decide the same
  /// bits, so the R1 comparisons are the ones made before.
  /// The table is zero between checks (unindex_carriers() clears the bits
  /// this set, check_fresh() checks it at every input's start), so indexing
  /// costs what the runs are, not every id ever minted: assign()ing it
  /// afresh filled next_id() bytes after every op (issue 13, fifteenth round).
  TAINTPOOL_FUZZ_CHECKER void index_carriers() {
    if (carriers_.size() < model_.next_id().raw()) {
      carriers_.resize(model_.next_id().raw(), 0);
    }
    for (std::size_t at = 0; at < kAllocations; ++at) {
      for (const OwnedRun& run : model_.runs(at)) {
        if (run.owner >= carriers_.size()) [[unlikely]] {
          carriers_.resize(run.owner + 1, 0); // Never minted: still counted, as before.
        }
        carriers_[run.owner] |= static_cast<std::uint8_t>(1u << at);
      }
    }
  }

  /// Zeroes what index_carriers() set: the model has not changed since.
  TAINTPOOL_FUZZ_CHECKER void unindex_carriers() {
    for (std::size_t at = 0; at < kAllocations; ++at) {
      for (const OwnedRun& run : model_.runs(at)) {
        carriers_[run.owner] = 0;
      }
    }
  }

  /// One failure, core against the model: liveness, tags and the carriers
  /// among the touched allocations, error, skip count; and, when the op
  /// recorded a skip or replaced an error, the kept records and the reports.
  /// Returns its skip count (core's and the model's: checked equal).
  ///
  /// The comparisons are made once, plainly, into one verdict; only a
  /// mismatch calls explain_failure(), which makes each again with its
  /// message and fails. The per-comparison checks with their message
  /// callables cost more than the comparisons: under AddressSanitizer every
  /// callable whose address a check takes gets a poisoned stack slot,
  /// poisoned and cleared on every call (this function was the harness's
  /// largest, 4.5% of a run under perf, most of it that shadow traffic;
  /// issue 13, fortieth round). The same calls into core, the same answers
  /// compared.
  TAINTPOOL_FUZZ_CHECKER std::uint64_t check_failure(FailureId id) {
    // The model's liveness, error and skip count from one lookup
    // (EngineModel::view: the same answers as live(), error() and
    // skips_recorded(), which looked the failure up three times; issue 13,
    // fifteenth round).
    const EngineModel::FailureView theirs = model_.view(id);
    const bool live = theirs.error != nullptr;
    // R1 from the model's runs: which allocations carry the failure, and
    // so its tags (EngineModel::tags() counts the same allocations, in a
    // pass of its own; the sweep calls it). index_carriers() made that one
    // pass for every failure the check visits.
    const std::uint8_t mask = carrier_mask(id);
    bool same = graph_.contains(id) == live &&
                graph_.tags(id) == (live ? static_cast<std::uint64_t>(std::popcount(mask)) : 0u);
    for (std::size_t at = 0; at < kAllocations; ++at) {
      if (touch_.allocations[at]) {
        same = same && taints_[at].carries(id) == ((mask >> at & 1u) != 0);
      }
    }
    const Error* mine = graph_.error(id);
    same = same && (mine == nullptr) == (theirs.error == nullptr) &&
           (mine == nullptr || *mine == *theirs.error) && graph_.skips_recorded(id) == theirs.skips;
    if (!same) [[unlikely]] {
      explain_failure(id);
    }
    if (touch_.reports != Reports::none) {
      check_failure_reports(id, live, theirs.skips);
    }
    return theirs.skips;
  }

  /// For check_failure: the model's carriers of `id`, one bit per allocation.
  [[nodiscard]] std::uint8_t carrier_mask(FailureId id) const {
    return id.raw() < carriers_.size() ? carriers_[id.raw()] : 0;
  }

  /// check_failure's comparisons again, one check each with its message:
  /// the first that differs fails. Only check_failure's verdict of a
  /// mismatch calls it, so it cannot return.
  [[noreturn]] TAINTPOOL_FUZZ_CHECKER __attribute__((noinline, cold)) void
  explain_failure(FailureId id) {
    const auto who = [&] { return show(id) + " "; };
    const EngineModel::FailureView theirs = model_.view(id);
    const bool live = theirs.error != nullptr;
    check_.expect_equal(
        "G3/G5/R3", [&] { return who() + "is live"; }, graph_.contains(id), live);
    std::array<bool, kAllocations> carried{};
    std::uint64_t tags = 0;
    const std::uint8_t mask = carrier_mask(id);
    for (std::size_t at = 0; at < kAllocations; ++at) {
      carried[at] = (mask >> at & 1u) != 0;
      tags += carried[at] ? 1u : 0u;
    }
    check_.expect_equal(
        "R1", [&] { return who() + "tags"; }, graph_.tags(id), live ? tags : 0);
    for (std::size_t at = 0; at < kAllocations; ++at) {
      if (touch_.allocations[at]) {
        check_.expect_equal(
            "R1", [&] { return "alloc " + std::to_string(at) + " carries(" + show(id) + ")"; },
            taints_[at].carries(id), carried[at]);
      }
    }
    const Error* mine = graph_.error(id);
    check_.expect_equal(
        "G4/G6", [&] { return who() + "error"; },
        mine != nullptr ? std::optional<Error>(*mine) : std::nullopt,
        theirs.error != nullptr ? std::optional<Error>(*theirs.error) : std::nullopt);
    check_.expect_equal(
        "G7", [&] { return who() + "skips_recorded"; }, graph_.skips_recorded(id), theirs.skips);
    check_.fail("fuzzer", "check_failure found a mismatch that explain_failure did not");
  }

  /// check_failure's part for the op's reports (touch_.reports): after a
  /// replace, the root a report shows; after a skip, the kept records and
  /// the walks the new ones start. `skips`: the failure's skip count.
  TAINTPOOL_FUZZ_CHECKER void check_failure_reports(FailureId id, bool live, std::uint64_t skips) {
    switch (touch_.reports) {
    case Reports::none:
      return;
    case Reports::root:
      // The error changed, the records did not: every walk is as it was, so
      // one read no record produced shows whether the root followed.
      check_report(id, AllocationId::from_raw(kAllocationIds + 1), Walk::empty);
      return;
    case Reports::new_records:
      break;
    }
    // Core's kept records against the model's, in place; equal from here
    // on, so the walks below start from the model's (no copy of core's).
    const std::span<const SkipRecord> records = model_.kept_records(id);
    if (!same_kept_records(id, records)) [[unlikely]] {
      check_.expect_equal(
          "G7", [&] { return show(id) + " skip_records (newest 16, oldest first)"; },
          graph_.skip_records(id), model_.skip_records(id));
    }
    if (!live) {
      return;
    }
    // A walk starts at the newest record that produced the read (G8): an
    // output of the newest record starts the longest walk there is, through
    // every record this op added (its other outputs start the same walk).
    // When this op took the log past its cap, the oldest records went: the
    // walk from an output of the oldest kept one now stops at the gap, and
    // a read no record produced keeps the empty path. (Report ops compare
    // any read at any time, and every sweep compares the kept records.)
    if (!records.empty() && !records.back().produced.empty()) {
      check_report(id, records.back().produced.front(), Walk::records);
    }
    if (skips > ErrorGraph::kept_skip_records &&
        skips - ErrorGraph::kept_skip_records <= touch_.records_added) {
      if (!records.front().produced.empty()) {
        check_report(id, records.front().produced.front(), Walk::records);
      }
      check_report(id, AllocationId::from_raw(unproduced_read(records)), Walk::empty);
    }
  }

  /// G7: whether core's kept skip records of `id` are `kept` (the model's,
  /// oldest first), compared in place (ErrorGraph::for_each_skip_record):
  /// copying them with skip_records() after every op that added one cost
  /// more than the op (issue 13).
  [[nodiscard]] bool same_kept_records(FailureId id, std::span<const SkipRecord> kept) const {
    std::size_t at = 0;
    bool same = true;
    graph_.for_each_skip_record(id, [&](const SkipRecord& record) {
      same = same && at < kept.size() && record == kept[at];
      ++at;
    });
    return same && at == kept.size();
  }

  /// G8: core's and the model's report of `id` for `read`, and how each ended.
  /// Core's report of `read` against the model's walk, compared in place
  /// (EngineModel::report_path: no record is copied on the model's side);
  /// only a mismatch builds the model's Report, to show both.
  ///
  /// Core's side is refilled into one kept Report (ErrorGraph::report_into,
  /// the walk report() makes, pinned equal to a fresh report() by
  /// ErrorGraph.G8_AReportRefilledInPlaceEqualsAFreshOneWhateverItHeldBefore):
  /// a fresh Report per check copied every record of the path (kernel name
  /// and produced list: two allocations a record) and was the largest
  /// single source of this target's allocations (issue 13, twenty-fourth
  /// round: 12% of them). The report and reports ops still call report()
  /// and reports() themselves.
  ///
  /// The empty walks (`walk`) refill a kept Report of their own: report_into
  /// cuts the path to the walk's length, destroying the records past it,
  /// so an empty walk after a long one, then the long one again, copied
  /// every record of that walk anew — after each skip that passes the cap,
  /// check_failure walks from the newest record (the longest walk), the
  /// oldest and a read nothing produced (empty); after a replace, only the
  /// empty one (issue 13, fortieth round). The walk from the oldest kept
  /// record shares the newest's on purpose: a Report of its own was
  /// measured and cost more than it saved (forty-third round: 26.3 -> 27.0
  /// mallocs a run over the seeds), as each input starts with empty paths
  /// and the oldest walk then built its records afresh, where sharing
  /// reassigns the ones the newest walk just built. What is compared is the
  /// same: report_into's answer against the model's walk.
  TAINTPOOL_FUZZ_CHECKER void check_report(FailureId id, AllocationId read, Walk walk) {
    Report& kept = kept_reports_[static_cast<std::size_t>(walk)];
    AllocationId origin = read;
    const Outcome core = run_op([&] { graph_.report_into(id, read, kept); });
    const Outcome model = run_model_or_refuse(Outcome{}, kModelReportRefusal,
                                              [&] { return try_report_path(id, read, origin); });
    check_.expect_equal(
        "G8", [&] { return show(id) + " report of " + show(read) + " ended"; }, core, model);
    if (!core.threw() && !same_report(kept, id, read, origin)) [[unlikely]] {
      check_.expect_equal(
          "G8", [&] { return show(id) + " report of " + show(read); }, std::optional<Report>(kept),
          std::optional<Report>(model_.report(id, read)));
    }
  }

  /// The model's walk for `read` of `id` into model_path_, its origin into
  /// `origin`; false where the model refuses (`id` not live).
  bool try_report_path(FailureId id, AllocationId read, AllocationId& origin) {
    const std::optional<AllocationId> found = model_.try_report_path(id, read, model_path_);
    origin = found.value_or(read);
    return found.has_value();
  }

  /// Whether `core` is the Report the model gives for `read` of live
  /// failure `id`, whose walk report_path() just left in model_path_ with
  /// `origin`: every field of Report, as its operator== compares them.
  [[nodiscard]] bool same_report(const Report& core, FailureId id, AllocationId read,
                                 AllocationId origin) const {
    const Error* root = model_.error(id);
    const std::uint64_t skips = model_.skips_recorded(id);
    return root != nullptr && core.failure == id && core.root == *root && core.read == read &&
           !core.stale && core.origin == origin && core.skips_recorded == skips &&
           core.path_may_be_incomplete == (skips > EngineModel::kept_skip_records) &&
           std::equal(
               core.path.begin(), core.path.end(), model_path_.begin(), model_path_.end(),
               [](const SkipRecord& mine, const SkipRecord* theirs) { return mine == *theirs; });
  }

  /// Everything, both sides (see the file comment): every kFullCheckEvery
  /// ops, after a graph move, and at the end of the input. Compared in
  /// place, one failure at a time, building nothing but the skip records of
  /// failures that have some. Reports are not recomputed: a report is a
  /// function of the failure's error and records, which are compared here,
  /// and it was compared whenever those changed (check_touched).
  TAINTPOOL_FUZZ_CHECKER void check_everything() {
    ops_since_sweep_ = 0;
    const Op& op = ops_.back();
    const Reports reports = touch_.reports;
    touch_.allocations.fill(true);
    touch_.reports = Reports::none;
    for (std::size_t at = 0; at < kAllocations; ++at) {
      check_allocation(op, at); // Leaves the model's owners of `at` in owners_.
      check_.expect_equal(
          "T3", [&] { return "alloc " + std::to_string(at) + " failures(everything)"; },
          taints_[at].failures(ByteRange::of(0, UINT64_MAX)), owners_);
    }
    index_carriers();
    for (std::uint64_t raw = 1; raw < graph_.next_id().raw(); ++raw) {
      const FailureId id = FailureId::from_raw(raw);
      // check_failure's skip count: core's, checked equal to the model's
      // (asking core again cost a lookup per id per sweep).
      if (check_failure(id) != 0 && !same_kept_records(id, model_.kept_records(id))) [[unlikely]] {
        check_.expect_equal(
            "G7", [&] { return show(id) + " skip_records (newest 16, oldest first)"; },
            graph_.skip_records(id), model_.skip_records(id));
      }
    }
    touch_.reports = reports;
    std::size_t live = 0;
    for (std::uint64_t raw = 1; raw < model_.next_id().raw(); ++raw) {
      if (model_.live(FailureId::from_raw(raw))) {
        ++live;
      }
    }
    check_.expect(
        live == live_.size() &&
            std::all_of(live_.begin(), live_.end(),
                        [&](std::uint64_t raw) { return model_.live(FailureId::from_raw(raw)); }) &&
            std::is_sorted(live_.begin(), live_.end()),
        "fuzzer", [&] {
          return "the live failures the decoder picks from differ from the model's: " + show(live_);
        });
    check_.expect(std::is_sorted(held_.begin(), held_.end()) &&
                      std::all_of(held_.begin(), held_.end(),
                                  [&](FailureId failure) { return model_.live(failure); }),
                  "fuzzer", [&] {
                    return "the held list is out of order or names a failure the model has "
                           "pruned: " +
                           show(held_);
                  });
    check_.expect_equal("G1/G3", "graph size", graph_.size(), model_.size());
    check_graph(); // Reads the carriers index too.
    unindex_carriers();
  }

  /// One taint's representation against what the model says it holds:
  /// `claims` runs over the failures `owners` (ascending, distinct). As in
  /// check_failure: one verdict, and explain_taint_shape() only on a
  /// mismatch.
  TAINTPOOL_FUZZ_CHECKER void check_taint_shape(std::size_t at, std::size_t claims,
                                                const std::vector<FailureId>& owners) const {
    const Taint& taint = taints_[at];
    const std::optional<FailureId> one = taint.failure(ByteRange::of(0, UINT64_MAX));
    const bool same = taint.is_clean() == (claims == 0) &&
                      taint.is_spilled() == (Taint::inline_claims ? claims >= 2 : claims != 0) &&
                      taint.claim_count() == owners.size() && one.has_value() == !owners.empty() &&
                      (!one || std::binary_search(owners.begin(), owners.end(), *one));
    const Outcome shape = run_op([&] { taint.check_invariants(); });
    if (!same || shape.threw()) [[unlikely]] {
      explain_taint_shape(at, claims, owners);
    }
  }

  /// check_taint_shape's comparisons again, one check each with its
  /// message: the first that differs fails.
  [[noreturn]] TAINTPOOL_FUZZ_CHECKER __attribute__((noinline, cold)) void
  explain_taint_shape(std::size_t at, std::size_t claims,
                      const std::vector<FailureId>& owners) const {
    const ByteRange everything = ByteRange::of(0, UINT64_MAX);
    const Taint& taint = taints_[at];
    const auto who = [&] { return "alloc " + std::to_string(at) + " "; };
    check_.expect_equal(
        "T4", [&] { return who() + "is_clean"; }, taint.is_clean(), claims == 0);
    check_.expect_equal(
        "T6", [&] { return who() + "is_spilled (one failure over one range lives inline)"; },
        taint.is_spilled(), Taint::inline_claims ? claims >= 2 : claims != 0);
    check_.expect_equal(
        "R1", [&] { return who() + "claim_count"; }, taint.claim_count(), owners.size());
    const std::optional<FailureId> one = taint.failure(everything);
    check_.expect(one.has_value() == !owners.empty() &&
                      (!one || std::binary_search(owners.begin(), owners.end(), *one)),
                  "T3", [&] { return who() + "failure(everything) is " + show(one); });
    const Outcome shape = run_op([&] { taint.check_invariants(); });
    check_.expect(!shape.threw(), "T5/T6",
                  [&] { return who() + "check_invariants: " + show(shape); });
    check_.fail("fuzzer", "check_taint_shape found a mismatch that explain_taint_shape did not");
  }

  /// What only core has, graph-wide: its invariants, refcounts against
  /// every carrier, and for_each against the model.
  TAINTPOOL_FUZZ_CHECKER void check_graph() {
    std::array<const Taint*, kAllocations> carriers{};
    for (std::size_t at = 0; at < kAllocations; ++at) {
      carriers[at] = &taints_[at];
    }
    const Outcome graph_shape = run_op([&] { graph_.check_invariants(); });
    check_.expect(!graph_shape.threw(), "G1/G7",
                  [&] { return "graph.check_invariants: " + show(graph_shape); });
    const Outcome refcounts =
        run_op([&] { taintpool::check_refcounts(graph_, carriers, held_, refcounts_); });
    check_.expect(!refcounts.threw(), "R1-R3",
                  [&] { return "check_refcounts (held " + show(held_) + "): " + show(refcounts); });
    // Each node against the model in one verdict (the model's error from
    // one lookup, its carriers from the index check_everything built, as
    // check_failure reads them: EngineModel::tags() counted the same
    // allocations with four searches of their runs per node); only a
    // mismatch explains itself (explain_node).
    std::size_t visited = 0;
    graph_.for_each([&](FailureId id, const Error& error, std::uint64_t tags) {
      ++visited;
      const Error* expected = model_.view(id).error;
      if (expected == nullptr || !(error == *expected) ||
          tags != static_cast<std::uint64_t>(std::popcount(carrier_mask(id)))) [[unlikely]] {
        explain_node(id, error, tags);
      }
    });
    check_.expect_equal("G1", "nodes graph.for_each visits against size()", visited, graph_.size());
  }

  /// check_graph's comparisons of one node again, one check each with its
  /// message (the model's own tags(), which counts what the carriers index
  /// does): the first that differs fails.
  [[noreturn]] TAINTPOOL_FUZZ_CHECKER __attribute__((noinline, cold)) void
  explain_node(FailureId id, const Error& error, std::uint64_t tags) const {
    check_.expect(model_.live(id), "G3",
                  [&] { return "graph.for_each visits " + show(id) + ", which is dead"; });
    const Error* expected = model_.error(id);
    if (expected == nullptr || !(error == *expected)) [[unlikely]] {
      check_.expect_equal(
          "G6", [&] { return "graph.for_each error of " + show(id); }, std::optional<Error>(error),
          expected != nullptr ? std::optional<Error>(*expected) : std::nullopt);
    }
    check_.expect_equal(
        "R1", [&] { return "graph.for_each tags of " + show(id); }, tags, model_.tags(id));
    check_.fail("fuzzer", "check_graph found a mismatch that explain_node did not (the carriers "
                          "index and EngineModel::tags() differ)");
  }

  /// The end of the input: every carrier lets go, every held failure is
  /// pruned, and nothing may be left (R4).
  void finish() {
    for (const Kind kind : {Kind::final_clear, Kind::final_prune}) {
      ops_.emplace_back().kind = kind;
      execute();
    }
    // Unless the final prune's own execute() just swept (every
    // kFullCheckEvery ops): the same sweep of the same state again would
    // find nothing new.
    if (ops_since_sweep_ != 0) {
      check_everything();
    }
    check_.expect(held_.empty(), "R4",
                  [&] { return "held failures survived their prune: " + show(held_); });
    check_.expect(graph_.empty() && graph_.size() == 0, "R4", [&] {
      return "the graph holds " + std::to_string(graph_.size()) +
             " nodes with every carrier cleared and every held failure pruned";
    });
    check_.expect(model_.size() == 0, "R4", "the model has live failures at the end");
  }

  std::string context() const {
    std::string text;
    if (!ops_.empty()) {
      const Op& op = ops_.back();
      text += "  at op #" + std::to_string(ops_.size() - 1) + " (input offset " +
              std::to_string(op.offset) + "): " + describe(op) + "\n";
    }
    text += "  ops:\n";
    const std::size_t shown = 200;
    const std::size_t first = ops_.size() > shown ? ops_.size() - shown : 0;
    if (first > 0) {
      text += "    ... " + std::to_string(first) + " earlier ops\n";
    }
    for (std::size_t at = first; at < ops_.size(); ++at) {
      text += "    #" + std::to_string(at) + " " + describe(ops_[at]) + "\n";
    }
    text += "  core state:\n" + show(observe(CoreView{graph_, taints_}));
    text += "  model state:\n" + show(observe(model_));
    text += "  held: " + show(held_) + "\n";
    if (trace_path_) {
      write_trace(ops_.empty() ? std::string("the start")
                               : "op #" + std::to_string(ops_.size() - 1) + " (" +
                                     describe(ops_.back()) + ")");
      text += "  TLA+ trace of the ops before it: " + trace_path_->string() + "\n";
    }
    return text;
  }

  std::optional<std::filesystem::path> trace_path_;
  std::size_t input_size_ = 0;
  std::optional<tla::Trace> trace_;
  std::uint64_t max_failure_named_ = 1; ///< The largest id an event named (TraceMaxId).
  // The graph outlives the taints (declared first, destroyed last).
  ErrorGraph graph_;
  std::array<Taint, kAllocations> taints_;
  EngineModel model_;
  std::vector<FailureId> held_;
  /// The current op's allocation fault still to fire (Op::fault_at), or -1.
  std::int64_t pending_fault_ = -1;
  /// The input's ops so far, for messages: one buffer for the process,
  /// cleared per input, so logging allocates nothing once it has grown.
  std::vector<Op>& ops_ = op_log();
  /// The model's live failures, ascending: what pick_failure picks from,
  /// kept up to date op by op (settle_live) rather than asked of the model.
  std::vector<std::uint64_t> live_;
  /// Which reports an op may have changed (G8): none, the root error of
  /// every one (replace), or the walks its new skip records start (skipped).
  enum class Reports : std::uint8_t { none, root, new_records };
  /// What the current op may change (note_touched).
  struct Touch {
    std::array<bool, kAllocations> allocations{};
    std::vector<std::uint64_t>
        failures;                    ///< Raw ids, ascending, each once; may be dead or unminted.
    std::uint64_t first_new = 1;     ///< next_id before the op: ids from here are new.
    Reports reports = Reports::none; ///< Which reports of the touched failures to compare.
    std::uint64_t records_added = 0; ///< skipped: how many records it meant to add.
  } touch_;
  std::vector<FailureId> owners_; ///< Scratch for check_allocation.
  /// Scratch for check_query: the model's owners of the queried range.
  std::vector<FailureId> query_owners_;
  /// Scratch for execute: the touched failures the op killed, ascending.
  std::vector<std::uint64_t> died_;
  /// Scratch for check_failure: the model's carriers of each raw id, one
  /// bit per allocation (index_carriers).
  std::vector<std::uint8_t> carriers_;
  /// Scratch for check_report: the model's walk, as pointers into its records.
  std::vector<const SkipRecord*> model_path_;
  /// The skipped op's record for core and the model, refilled per record
  /// (skip_record); each copies it.
  SkipRecord record_{std::string(), AllocationId::from_raw(1), {}};
  /// Scratch for check_report: core's reports, refilled in place, one per
  /// kind of walk (Walk). Each root holds the longest message's capacity
  /// and each path room for every kept record from the start (the
  /// constructor), and the paths are emptied at the end of each input
  /// (release_input), so an input frees every record it put there:
  /// libFuzzer sees balanced mallocs and frees per run.
  std::array<Report, kWalks> kept_reports_{kept_report(), kept_report()};
  /// Every error an insert or replace op may name (kErrorKinds kinds times
  /// kMessages), made once: ops copy them. An Error made per op was one
  /// more allocation per op whose message is past the small-string buffer
  /// (issue 13, fortieth round).
  std::vector<Error> errors_;
  /// Scratch for note_touched and execute: the failures a prune op prunes.
  std::vector<FailureId> prune_list_;
  /// Scratch for check_graph: check_refcounts' list, kept (a map and a
  /// list per sweep before; issue 13, twenty-fourth round).
  taintpool::RefcountScratch refcounts_;
  std::size_t ops_since_sweep_ = 0;
  /// The graph's table capacity as grow_failure_table() leaves a fresh
  /// graph (release_input() restores it; check_fresh() checks it).
  std::size_t fresh_table_capacity_ = 0;
  Checker check_;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ByteReader in(data, size);
  // One for the process: each input ends with release_input() (see Harness).
  static Harness harness;
  harness.start(taintpool::fuzz::tla::trace_path(data, size, "taint_"), size);
  harness.run(in);
  return 0;
}
