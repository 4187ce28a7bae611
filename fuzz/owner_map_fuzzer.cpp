// owner_map_fuzzer: the reference model's OwnerMap against a naive per-byte
// array, and core's Taint against both — the std::vector-only path that runs
// under MemorySanitizer (fuzz/README.md, "MemorySanitizer").
//
// # Why this target
//
// MemorySanitizer needs every line that writes memory the program later reads
// to be instrumented; the standard library's out-of-line parts (libstdc++.so:
// std::string's members, iostreams) are not, unless the whole toolchain is
// rebuilt against an instrumented libc++ (OSS-Fuzz and ClusterFuzzLite do;
// a local clang-14 does not). OwnerMap is std::vector and <algorithm> only —
// header templates, compiled into this binary and so instrumented — and
// Taint's whole state is integers, a tagged union (T6) and a heap array of
// segments whose capacity can exceed its size: exactly where an
// uninitialised read would hide. The graph is driven with payload-free
// TornDown errors only (ErrorGraph::insert_provisional), so no std::string
// is ever built, copied or printed on a passing run. Failures are reported
// with fprintf and abort, never through std::string.
//
// # What is checked
//
// One allocation of 64 bytes, three ways: `bytes` (an array, one owner per
// byte — right by inspection), an OwnerMap (runs, rebuilt from scratch on
// every assign) and a Taint on a live ErrorGraph. After EVERY op:
//   * OwnerMap::runs() equals the maximal runs of `bytes`; owners(),
//     empty(), and owners_in() of the op's range agree with `bytes`;
//   * the Taint's claims (for_each_claim, ascending) equal those runs (T1,
//     T2, T4, T5: canonical, one failure's ranges never touch), failures()
//     of the op's range equals owners_in(), failure() is one of them or none
//     iff there are none (T3), and is_spilled() is false whenever a single
//     run is left (T6); check_invariants() on the taint and the graph;
//   * every failure the op could have changed — each one live before it
//     (only those can lose their last byte) and any it inserted: the graph
//     holds it iff the taint carries it or it is a fresh one not yet given a
//     byte (R1–R3), with exactly one tag per carrier, and one that lost its
//     last byte is gone (G3); holds() and carries() agree with `bytes`.
// Every kFullCheckEvery ops and at the end, the last point for EVERY failure
// ever minted (a dead one must stay dead, carried by nobody), and
// claim_count() (R1: one per distinct owner; it no longer allocates, but the
// per-op checks already pin one tag per carrier, so it stays periodic).
// At the end the taint is cleared and the fresh failures pruned: the graph
// must be empty (R4).
//
// Cost: one harness serves every input (reset() between them, checked
// exact by check_fresh()), and the checks reuse its buffers and the
// OwnerMap's, so a warm passing op allocates only inside core (failures()
// returns a vector; the graph is a fresh one per input);
// fuzz/owner_map_fuzzer.options bounds the input.
//
// # How the input is decoded (past the end every byte reads as 0)
//
// Each op is one byte: its value % 8 picks taint (0-2), written (3-4), query
// (5), insert (6) or clear (7). Taint, written and query then read a range —
// two bytes, each % 65, ordered — and taint reads one byte choosing the
// failure among the live ones (a fresh one is inserted when none is live, at
// most kMaxLive at a time).
#include <taintpool/byte_range.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/model/owner_map.hpp>
#include <taintpool/taint.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

#include "common/byte_reader.hpp"
#include "common/no_coverage.hpp"

namespace {

using taintpool::ByteRange;
using taintpool::ErrorGraph;
using taintpool::FailureId;
using taintpool::Taint;
using taintpool::fuzz::ByteReader;
using taintpool::model::OwnedRun;
using taintpool::model::OwnerMap;

constexpr std::uint64_t kBytes = 64;
constexpr std::size_t kMaxLive = 6;

[[noreturn]] void fail(const char* rule, const char* what, std::size_t op, std::uint64_t a = 0,
                       std::uint64_t b = 0) {
  std::fprintf(stderr, "owner_map_fuzzer: CHECK FAILED [%s] at op %zu: %s (%llu, %llu)\n", rule, op,
               what, static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
  std::abort();
}

void check(bool ok, const char* rule, const char* what, std::size_t op, std::uint64_t a = 0,
           std::uint64_t b = 0) {
  if (!ok) {
    fail(rule, what, op, a, b);
  }
}

/// Ops between two checks of every failure ever minted; the ops in between
/// check the failures they could have changed.
constexpr std::size_t kFullCheckEvery = 16;

// The per-byte oracle and the checks are plain loops in functions libFuzzer
// does not instrument (common/no_coverage.hpp): they run 64 bytes per op,
// every op, and their branches say nothing about core or the model.

/// Maximal runs of one owner over the per-byte array, into `runs`: the
/// canonical form.
TAINTPOOL_FUZZ_CHECKER void runs_of(const std::array<std::uint64_t, kBytes>& bytes,
                                    std::vector<OwnedRun>& runs) {
  runs.clear();
  const std::uint64_t* byte = bytes.data();
  for (std::uint64_t at = 0; at < kBytes; ++at) {
    if (byte[at] == 0) {
      continue;
    }
    if (at > 0 && byte[at - 1] == byte[at]) {
      runs[runs.size() - 1].end = at + 1;
    } else {
      runs.push_back(OwnedRun{at, at + 1, byte[at]});
    }
  }
}

/// Owners of [begin, end) in the array, ascending, each once, into `found`
/// (an insertion into a sorted list: there are a handful).
TAINTPOOL_FUZZ_CHECKER void owners_of(const std::array<std::uint64_t, kBytes>& bytes,
                                      std::uint64_t begin, std::uint64_t end,
                                      std::vector<std::uint64_t>& found) {
  found.clear();
  const std::uint64_t* byte = bytes.data();
  for (std::uint64_t at = begin; at < end; ++at) {
    const std::uint64_t owner = byte[at];
    if (owner == 0 || (at > begin && byte[at - 1] == owner)) {
      continue;
    }
    std::size_t slot = found.size();
    while (slot > 0 && found[slot - 1] > owner) {
      --slot;
    }
    if (slot > 0 && found[slot - 1] == owner) {
      continue;
    }
    found.insert(found.begin() + static_cast<std::ptrdiff_t>(slot), owner);
  }
}

struct Harness {
  std::array<std::uint64_t, kBytes> bytes{};
  OwnerMap map;
  ErrorGraph graph;
  Taint taint;
  std::vector<std::uint64_t> minted;   ///< Every failure id inserted, ascending.
  std::vector<std::uint64_t> live;     ///< The live ones, ascending (settled after every op).
  std::vector<std::uint64_t> was_live; ///< live before the current op.
  /// By id: whether the failure was ever given a byte. One that was and has
  /// none left must be gone (G3); only a fresh one may live untagged (R3).
  std::vector<char> given_bytes = std::vector<char>(1, 0);
  // Buffers the checks reuse, so that a passing op allocates nothing here.
  std::vector<OwnedRun> expected;
  std::vector<OwnedRun> claims;
  std::vector<std::uint64_t> all;
  std::vector<std::uint64_t> inside;
  std::vector<std::uint64_t> found;
  std::vector<std::uint64_t> reported;

  Harness() = default;
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;
  ~Harness() { taint.clear(graph); }

  /// Back to a new harness's state for the next input, keeping every
  /// buffer's capacity: one harness serves the whole process, so a warm run
  /// allocates only inside core (issue 13). The graph is a fresh one, so
  /// ids start at 1 again; check_fresh() at the next input's start proves
  /// the reset exact. Called at the end of an input, not the start of the
  /// next: libFuzzer counts each run's mallocs and frees, and a run that
  /// leaves memory behind costs a leak check (an LSan scan of the heap).
  void reset() {
    taint.clear(graph); // Clean after every finished input; kept for safety.
    graph = ErrorGraph();
    bytes.fill(0);
    map.reset();
    minted.clear();
    live.clear();
    was_live.clear();
    given_bytes.assign(1, 0);
  }

  /// Everything an input can see is as new: no failure minted, no byte
  /// owned, on every side. Otherwise an input's outcome would depend on the
  /// inputs before it.
  TAINTPOOL_FUZZ_CHECKER void check_fresh() const {
    const bool bytes_clean =
        std::all_of(bytes.begin(), bytes.end(), [](std::uint64_t owner) { return owner == 0; });
    check(bytes_clean && map.empty() && taint.is_clean() && !taint.is_spilled() && graph.empty() &&
              graph.next_id() == FailureId::from_raw(1) && minted.empty() && live.empty() &&
              was_live.empty() && given_bytes.size() == 1,
          "fuzzer", "the harness did not start the input from a fresh state", 0);
  }

  std::uint64_t insert() {
    const FailureId id = graph.insert_provisional();
    minted.push_back(id.raw());
    live.push_back(id.raw());
    given_bytes.resize(id.raw() + 1, 0);
    return id.raw();
  }

  /// Drops from `live` the failures the op killed (only one live before it
  /// can have died).
  TAINTPOOL_FUZZ_CHECKER void settle_live() {
    std::size_t kept = 0;
    for (std::size_t at = 0; at < live.size(); ++at) {
      if (graph.contains(FailureId::from_raw(live[at]))) {
        live[kept++] = live[at];
      }
    }
    live.resize(kept);
  }

  /// Whether the ascending `ids` holds `id` (a handful: a plain scan).
  TAINTPOOL_FUZZ_CHECKER static bool among(const std::vector<std::uint64_t>& ids,
                                           std::uint64_t id) {
    for (const std::uint64_t each : ids) {
      if (each >= id) {
        return each == id;
      }
    }
    return false;
  }

  /// One failure against `bytes` (whose owners are `all`): R1–R3.
  TAINTPOOL_FUZZ_CHECKER void check_failure(std::size_t op, std::uint64_t id) const {
    const FailureId failure = FailureId::from_raw(id);
    const bool carried = among(all, id);
    check(map.holds(id) == carried, "model", "holds() is wrong", op, id);
    check(taint.carries(failure) == carried, "R1", "carries() is wrong", op, id);
    // The tag count asked once per branch: check()'s arguments are evaluated
    // on every call, so asking again there doubled the graph's lookups.
    if (carried) {
      const std::uint64_t tags = graph.tags(failure);
      check(tags == 1, "R1", "a carried failure has a tag count other than 1", op, id, tags);
    } else if (graph.contains(failure)) {
      const std::uint64_t tags = graph.tags(failure);
      check(tags == 0, "R3", "an uncarried live failure holds tags", op, id, tags);
      check(given_bytes[id] == 0, "G3", "a failure that lost its last byte is still in the graph",
            op, id);
    }
  }

  TAINTPOOL_FUZZ_CHECKER void compare(std::size_t op, std::uint64_t begin, std::uint64_t end,
                                      bool every_failure) {
    runs_of(bytes, expected);
    check(map.runs() == expected, "model", "OwnerMap runs differ from the per-byte array", op,
          map.runs().size(), expected.size());
    owners_of(bytes, 0, kBytes, all);
    map.owners(found);
    check(found == all, "model", "OwnerMap owners() differ", op, found.size(), all.size());
    check(map.empty() == expected.empty(), "model", "OwnerMap empty() is wrong", op);

    claims.clear();
    taint.for_each_claim([&](FailureId failure, ByteRange range) {
      claims.push_back(OwnedRun{range.begin(), range.end(), failure.raw()});
    });
    check(claims == expected, "T1/T2/T5", "the taint's claims differ from the model", op,
          claims.size(), expected.size());
    check(taint.is_clean() == expected.empty(), "T4", "is_clean() is wrong", op);
    if (Taint::inline_claims && expected.size() == 1) {
      check(!taint.is_spilled(), "T6", "one failure over one range spilled", op);
    }

    owners_of(bytes, begin, end, inside);
    map.owners_in(begin, end, found);
    check(found == inside, "model", "owners_in() differs", op, begin, end);
    reported.clear();
    for (FailureId failure : taint.failures(ByteRange::of(begin, end))) {
      reported.push_back(failure.raw());
    }
    check(reported == inside, "T3", "failures() of the range differ", op, begin, end);
    const std::optional<FailureId> one = taint.failure(ByteRange::of(begin, end));
    check(one.has_value() == !inside.empty(), "T3", "failure() is none iff no byte is claimed", op,
          begin, end);
    if (one) {
      check(among(inside, one->raw()), "T3",
            "failure() names a failure that claims no byte of the range", op, one->raw());
    }

    // A failure can only die, never come back (G1): the ones live before
    // the op, and any it inserted (newer than all of them), are every one
    // whose state the op could change.
    for (const std::uint64_t id : was_live) {
      check_failure(op, id);
    }
    for (const std::uint64_t id : live) {
      if (was_live.empty() || id > was_live.back()) {
        check_failure(op, id);
      }
    }
    if (every_failure) {
      for (const std::uint64_t id : minted) {
        check_failure(op, id);
      }
      check(taint.claim_count() == all.size(), "R1", "claim_count() differs from the owners", op,
            taint.claim_count(), all.size());
      check(graph.size() == live.size(), "G1/G3", "the graph holds failures nobody minted", op,
            graph.size(), live.size());
    }
    taint.check_invariants();
    graph.check_invariants();
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ByteReader in(data, size);
  static Harness h; // One for the process; reset() at the end of each input makes it as new.
  h.check_fresh();
  std::size_t op = 0;
  while (!in.empty()) {
    ++op;
    h.was_live = h.live;
    const unsigned kind = in.byte() % 8u;
    std::uint64_t begin = 0;
    std::uint64_t end = kBytes;
    if (kind <= 5) {
      begin = in.below(kBytes + 1);
      end = in.below(kBytes + 1);
      if (begin > end) {
        std::swap(begin, end);
      }
    }
    const ByteRange range = ByteRange::of(begin, end);
    if (kind <= 2) { // T1
      std::uint64_t owner = 0;
      if (h.live.empty() || (h.live.size() < kMaxLive && in.byte() % 4 == 0)) {
        owner = h.insert();
      } else {
        owner = h.live[in.below(h.live.size())];
      }
      std::fill(h.bytes.begin() + static_cast<std::ptrdiff_t>(begin),
                h.bytes.begin() + static_cast<std::ptrdiff_t>(end), owner);
      h.map.assign(begin, end, owner);
      h.taint.taint(range, FailureId::from_raw(owner), h.graph);
      if (!range.empty()) {
        h.given_bytes[owner] = 1;
      }
    } else if (kind <= 4) { // T2
      std::fill(h.bytes.begin() + static_cast<std::ptrdiff_t>(begin),
                h.bytes.begin() + static_cast<std::ptrdiff_t>(end), 0);
      h.map.assign(begin, end, 0);
      h.taint.written(range, h.graph);
    } else if (kind == 6) {
      if (h.live.size() < kMaxLive) {
        h.insert();
      }
    } else if (kind == 7) { // T4
      h.bytes.fill(0);
      h.map.reset();
      h.taint.clear(h.graph);
    }
    h.settle_live();
    h.compare(op, begin, end, op % kFullCheckEvery == 0);
  }
  h.was_live.clear();
  h.compare(op, 0, kBytes, true);

  // R4: with the carrier cleared and the fresh failures pruned, nothing is left.
  h.taint.clear(h.graph);
  for (std::uint64_t id : h.minted) {
    h.graph.prune(FailureId::from_raw(id));
  }
  check(h.graph.empty(), "R4", "the graph is not empty after clear and prune", op, h.graph.size());
  h.reset();
  return 0;
}
