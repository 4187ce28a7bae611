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
// # What is checked, after every op
//
// One allocation of 64 bytes, three ways: `bytes` (an array, one owner per
// byte — right by inspection), an OwnerMap (runs, rebuilt from scratch on
// every assign) and a Taint on a live ErrorGraph.
//   * OwnerMap::runs() equals the maximal runs of `bytes`; owners(),
//     holds() and owners_in() of the op's range agree with `bytes`;
//   * the Taint's claims (for_each_claim, ascending) equal those runs (T1,
//     T2, T4, T5: canonical, one failure's ranges never touch), failures()
//     of the op's range equals owners_in(), failure() is one of them or none
//     iff there are none (T3), carries() and claim_count() agree, and
//     is_spilled() is false whenever a single run is left (T6);
//   * every failure id minted: the graph holds it iff the taint carries it
//     or it is a fresh one not yet given a byte (R1–R3), with exactly one tag
//     per carrier; check_invariants() on the taint and the graph.
// At the end the taint is cleared and the fresh failures pruned: the graph
// must be empty (R4).
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

/// Maximal runs of one owner over the per-byte array: the canonical form.
std::vector<OwnedRun> runs_of(const std::array<std::uint64_t, kBytes>& bytes) {
  std::vector<OwnedRun> runs;
  for (std::uint64_t at = 0; at < kBytes; ++at) {
    if (bytes[at] == 0) {
      continue;
    }
    if (!runs.empty() && runs.back().owner == bytes[at] && runs.back().end == at) {
      runs.back().end = at + 1;
    } else {
      runs.push_back(OwnedRun{at, at + 1, bytes[at]});
    }
  }
  return runs;
}

/// Owners of [begin, end) in the array, ascending, each once.
std::vector<std::uint64_t> owners_of(const std::array<std::uint64_t, kBytes>& bytes,
                                     std::uint64_t begin, std::uint64_t end) {
  std::vector<std::uint64_t> found;
  for (std::uint64_t at = begin; at < end; ++at) {
    if (bytes[at] != 0) {
      found.push_back(bytes[at]);
    }
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

struct Harness {
  std::array<std::uint64_t, kBytes> bytes{};
  OwnerMap map;
  ErrorGraph graph;
  Taint taint;
  std::vector<std::uint64_t> minted; ///< Every failure id inserted, ascending.

  Harness() = default;
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;
  ~Harness() { taint.clear(graph); }

  [[nodiscard]] std::vector<std::uint64_t> live() const {
    std::vector<std::uint64_t> ids;
    for (std::uint64_t id : minted) {
      if (graph.contains(FailureId::from_raw(id))) {
        ids.push_back(id);
      }
    }
    return ids;
  }

  std::uint64_t insert() {
    const FailureId id = graph.insert_provisional();
    minted.push_back(id.raw());
    return id.raw();
  }

  void compare(std::size_t op, std::uint64_t begin, std::uint64_t end) {
    const std::vector<OwnedRun> expected = runs_of(bytes);
    check(map.runs() == expected, "model", "OwnerMap runs differ from the per-byte array", op,
          map.runs().size(), expected.size());
    const std::vector<std::uint64_t> all = owners_of(bytes, 0, kBytes);
    check(map.owners() == all, "model", "OwnerMap owners() differ", op, map.owners().size(),
          all.size());
    check(map.empty() == expected.empty(), "model", "OwnerMap empty() is wrong", op);

    std::vector<OwnedRun> claims;
    taint.for_each_claim([&](FailureId failure, ByteRange range) {
      claims.push_back(OwnedRun{range.begin(), range.end(), failure.raw()});
    });
    check(claims == expected, "T1/T2/T5", "the taint's claims differ from the model", op,
          claims.size(), expected.size());
    check(taint.is_clean() == expected.empty(), "T4", "is_clean() is wrong", op);
    check(taint.claim_count() == all.size(), "R1", "claim_count() differs from the owners", op,
          taint.claim_count(), all.size());
    if (Taint::inline_claims && expected.size() == 1) {
      check(!taint.is_spilled(), "T6", "one failure over one range spilled", op);
    }

    const std::vector<std::uint64_t> inside = owners_of(bytes, begin, end);
    check(map.owners_in(begin, end) == inside, "model", "owners_in() differs", op, begin, end);
    std::vector<std::uint64_t> reported;
    for (FailureId failure : taint.failures(ByteRange::of(begin, end))) {
      reported.push_back(failure.raw());
    }
    check(reported == inside, "T3", "failures() of the range differ", op, begin, end);
    const std::optional<FailureId> one = taint.failure(ByteRange::of(begin, end));
    check(one.has_value() == !inside.empty(), "T3", "failure() is none iff no byte is claimed", op,
          begin, end);
    if (one) {
      check(std::binary_search(inside.begin(), inside.end(), one->raw()), "T3",
            "failure() names a failure that claims no byte of the range", op, one->raw());
    }

    for (std::uint64_t id : minted) {
      const FailureId failure = FailureId::from_raw(id);
      const bool carried = std::binary_search(all.begin(), all.end(), id);
      check(map.holds(id) == carried, "model", "holds() is wrong", op, id);
      check(taint.carries(failure) == carried, "R1", "carries() is wrong", op, id);
      if (carried) {
        check(graph.tags(failure) == 1, "R1", "a carried failure has a tag count other than 1", op,
              id, graph.tags(failure));
      } else if (graph.contains(failure)) {
        check(graph.tags(failure) == 0, "R3", "an uncarried live failure holds tags", op, id,
              graph.tags(failure));
      }
    }
    taint.check_invariants();
    graph.check_invariants();
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ByteReader in(data, size);
  Harness h;
  std::size_t op = 0;
  while (!in.empty()) {
    ++op;
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
      std::vector<std::uint64_t> live = h.live();
      std::uint64_t owner = 0;
      if (live.empty() || (live.size() < kMaxLive && in.byte() % 4 == 0)) {
        owner = h.insert();
      } else {
        owner = live[in.below(live.size())];
      }
      std::fill(h.bytes.begin() + static_cast<std::ptrdiff_t>(begin),
                h.bytes.begin() + static_cast<std::ptrdiff_t>(end), owner);
      h.map.assign(begin, end, owner);
      h.taint.taint(range, FailureId::from_raw(owner), h.graph);
    } else if (kind <= 4) { // T2
      std::fill(h.bytes.begin() + static_cast<std::ptrdiff_t>(begin),
                h.bytes.begin() + static_cast<std::ptrdiff_t>(end), 0);
      h.map.assign(begin, end, 0);
      h.taint.written(range, h.graph);
    } else if (kind == 6) {
      if (h.live().size() < kMaxLive) {
        h.insert();
      }
    } else if (kind == 7) { // T4
      h.bytes.fill(0);
      h.map.reset();
      h.taint.clear(h.graph);
    }
    h.compare(op, begin, end);
  }

  // R4: with the carrier cleared and the fresh failures pruned, nothing is left.
  h.taint.clear(h.graph);
  for (std::uint64_t id : h.minted) {
    h.graph.prune(FailureId::from_raw(id));
  }
  check(h.graph.empty(), "R4", "the graph is not empty after clear and prune", op, h.graph.size());
  return 0;
}
