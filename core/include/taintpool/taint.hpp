// Taint: the bytes of one allocation that have no writer, and which failure
// left each of them so (§3.2, rules T1–T6).
//
// Whole-buffer taint is the wrong grain: a host write that fills one row
// would clear the whole tensor, and a launch that failed on one tile would
// poison reads of all the others — and once skips change control flow, a
// write that over-clears un-skips every launch downstream of garbage that no
// longer carries a failure to report. So a Taint is a set of claims, each a
// failure over some byte ranges, and every operation moves exactly the bytes
// it names.
//
// # Refcounting
//
// A Taint owns the carrier side of R1: it holds one tag on each failure that
// claims at least one of its bytes, taken when the failure's first byte
// arrives (T1) and given back the moment its last byte leaves (T1, T2, T4) —
// never deferred. It does not hold a reference to the graph; every operation
// that can tag or untag takes the graph as an argument, so one graph serves
// every allocation of a device and a Taint costs nothing to move.
//
// # Storage (T6)
//
// The case to price is not the clean slice but one failure over one range:
// every launch's write scope claims each written buffer that way on entry and
// releases it on exit. That case is stored inline — failure id and both
// offsets in 24 bytes, no heap — and so is the clean state. Anything else (a
// claim split by a partial write, a second failure) spills to a heap array of
// segments {failure, begin, end}, sorted by offset. Claims of different
// failures never share a byte (T5), so one sorted array holds them all, and
// an operation is a binary search plus a splice of the few segments it
// touches. The array keeps its capacity while spilled and is freed when the
// taint shrinks back to one segment (which moves inline) or none.
//
// Build with TAINTPOOL_TAINT_INLINE_CLAIMS=0 to disable the inline case, so
// every claim takes the spill path: the fuzzers do, to reach it sooner.
//
// # Contract
//
// Every operation either completes or, if it throws (a missing failure, out
// of memory), leaves the taint and the graph as they were. A Taint destroyed
// while it still holds claims would leak tags (R4 would never hold), so it
// aborts with a message: clear() it first, as the pool does on every P1 point.
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#ifndef TAINTPOOL_TAINT_INLINE_CLAIMS
#define TAINTPOOL_TAINT_INLINE_CLAIMS 1
#endif

namespace taintpool {

namespace detail {
/// One claimed range of one failure, as the spilled array stores it.
struct ClaimSegment {
  std::uint64_t failure; ///< Raw FailureId, never 0.
  std::uint64_t begin;   ///< First claimed byte, allocation-relative.
  std::uint64_t end;     ///< begin < end.
};
} // namespace detail

/// The claims of one allocation (§3.2): three words (T6), move-only, and a
/// carrier of one tag per claimed failure (R1) — so clear() it before it is
/// destroyed or assigned over.
class Taint {
 public:
  /// Whether one failure over one range is stored inline (T6).
  static constexpr bool inline_claims = TAINTPOOL_TAINT_INLINE_CLAIMS != 0;

  /// Clean: no claim, no tag, no allocation.
  Taint() noexcept = default;

  /// A Taint with claims is a carrier: copying it would duplicate tags
  /// behind the graph's back.
  Taint(const Taint&) = delete;
  Taint& operator=(const Taint&) = delete;

  /// Moves the claims and their tags; `other` is left clean.
  Taint(Taint&& other) noexcept
      : failure_(other.failure_)
      , storage_(other.storage_) {
    other.failure_ = 0;
    other.storage_.spill = {};
  }
  /// Throws std::logic_error if this taint still holds claims (they would be
  /// dropped without their untags); clear() it first. Not noexcept on
  /// purpose: a move that silently broke R1 would be worse than one that throws.
  // NOLINTNEXTLINE(performance-noexcept-move-constructor,bugprone-exception-escape)
  Taint& operator=(Taint&& other);

  /// A clean taint costs nothing to destroy. One that still holds claims
  /// aborts with a message (R1, R4: its tags could never be given back).
  ~Taint() {
    if (!is_clean()) [[unlikely]] {
      abandoned();
    }
  }

  /// T1: `failure` is now the last writer of every byte of `range`. Other
  /// failures lose those bytes (untagged if that was their last); the claim
  /// of `failure` grows to cover them, fusing with ranges it touches (T5);
  /// `failure` is tagged if it had no claim here. Set, never add: bytes it
  /// already claims change nothing. An empty range does nothing.
  /// Throws std::logic_error if `failure` has no node (nothing changes).
  /// Cost: inline and allocation-free for the first claim and for growing
  /// the inline one (T6); otherwise a binary search and a splice of the
  /// segments it reaches, allocating only to spill or grow the array.
  void taint(ByteRange range, FailureId failure, ErrorGraph& graph) {
    if (range.empty()) {
      return;
    }
    if constexpr (inline_claims) {
      if (failure_ == 0 && storage_.spill.data == nullptr) {
        graph.tag(failure);
        set_inline(failure.raw(), range);
        return;
      }
      if (failure_ == failure.raw() && inline_range().touches(range)) {
        set_inline(failure_, hull(inline_range(), range));
        return;
      }
    }
    taint_slow(range, failure, graph);
  }

  /// T1 on a clean taint, for a failure whose tag (G2) the caller has
  /// already taken on this taint's behalf: `range` becomes its one inline
  /// claim with no graph call. What lets a fresh buffer's never-written
  /// claim (N1) tag the node as it mints it (ErrorGraph::tag_never_written)
  /// instead of finding it again. Throws std::logic_error, changing
  /// nothing, if the taint holds a claim or `range` is empty (the caller's
  /// tag would then have no carrier, R1), or in a build without inline
  /// claims (T6), where storing it could allocate.
  void claim_tagged(ByteRange range, FailureId failure) {
    if (!inline_claims || !is_clean() || range.empty()) [[unlikely]] {
      refuse_claim_tagged();
    }
    set_inline(failure.raw(), range);
  }

  /// T2: the bytes of `range` have a successful writer: every claim loses
  /// them, and a failure left with no bytes here is untagged at once. Bytes
  /// outside `range` are untouched. An empty range does nothing.
  /// Cost: inline and allocation-free unless the write lands strictly
  /// inside the inline claim (splitting it spills) or the taint is spilled.
  void written(ByteRange range, ErrorGraph& graph) {
    if (range.empty() || is_clean()) {
      return;
    }
    if constexpr (inline_claims) {
      if (failure_ != 0) {
        InlineClaim& claim = storage_.inline_claim;
        if (range.end() <= claim.begin || claim.end <= range.begin()) {
          return; // No byte of the claim is written.
        }
        if (range.contains(inline_range())) {
          const FailureId released = FailureId::from_raw(failure_);
          failure_ = 0;
          storage_.spill = {};
          graph.untag(released);
          return;
        }
        // One edge is written: the claim shrinks and stays one range. A write
        // strictly inside it splits it, which spills (below).
        if (range.begin() <= claim.begin) {
          claim.begin = range.end();
          return;
        }
        if (claim.end <= range.end()) {
          claim.end = range.begin();
          return;
        }
      }
    }
    written_slow(range, graph);
  }

  /// T3: a failure claiming at least one byte of `range`, or none. When
  /// several do, which one is unspecified; failures() gives them all.
  /// Never true for an empty range. O(1) clean or inline, O(log n) spilled;
  /// never allocates — it is the check every read and launch input pays.
  [[nodiscard]] std::optional<FailureId> failure(ByteRange range) const noexcept {
    if (failure_ != 0) {
      if (inline_range().overlaps(range)) {
        return FailureId::from_raw(failure_);
      }
      return std::nullopt;
    }
    if (storage_.spill.data == nullptr) {
      return std::nullopt; // Clean: the common case for every read of good data.
    }
    return failure_spilled(range);
  }

  /// T3: every failure claiming a byte of `range`, each once, ascending.
  /// Allocates the result and sorts it: the failure path (reports).
  [[nodiscard]] std::vector<FailureId> failures(ByteRange range) const;

  /// T4: give back every tag; the taint is clean after. O(1) inline; a
  /// spilled array is sorted in place to untag each failure once, then
  /// freed. noexcept because every claimed failure has a node (R2); an
  /// untag that threw would mean R1 was already broken, and terminates.
  [[gnu::always_inline]] void clear(ErrorGraph& graph) noexcept {
    if (failure_ != 0) {
      // The inline claim, released inline: this is the whole of a fresh
      // buffer's first write under FreshBytes::NeverWritten (N1).
      const FailureId released = FailureId::from_raw(failure_);
      failure_ = 0;
      storage_.spill = {};
      graph.untag(released);
      return;
    }
    if (storage_.spill.data != nullptr) {
      clear_claims(graph);
    }
  }

  /// Whether every claimed byte is claimed by `failure` and lies inside
  /// `within` (true when clean): then a write of `within` releases exactly
  /// what clear() releases (T2 = T4 here). The question a launch asks of a
  /// fresh buffer's outputs (N1), so it is O(1) clean or inline and
  /// O(segments) spilled; never allocates.
  [[nodiscard]] bool claims_only(FailureId failure, ByteRange within) const noexcept {
    if (failure_ != 0) {
      // An inline claim is never empty (T5), so containment is two compares.
      const InlineClaim& claim = storage_.inline_claim;
      return failure_ == failure.raw() && within.begin() <= claim.begin &&
             claim.end <= within.end();
    }
    return storage_.spill.data == nullptr || claims_only_spilled(failure, within);
  }

  /// No byte is claimed.
  [[nodiscard]] bool is_clean() const noexcept {
    return failure_ == 0 && storage_.spill.data == nullptr;
  }

  /// Whether the claims live on the heap (T6: one failure over one range
  /// never does, unless built with TAINTPOOL_TAINT_INLINE_CLAIMS=0).
  [[nodiscard]] bool is_spilled() const noexcept {
    return failure_ == 0 && storage_.spill.data != nullptr;
  }

  /// Visits (FailureId, ByteRange) for every claimed range, in ascending
  /// byte order. Ranges of one failure never touch; ranges of different
  /// failures may. O(segments), no allocation; `fn` must not modify this.
  template <class Fn>
  void for_each_claim(Fn&& fn) const {
    if (failure_ != 0) {
      fn(FailureId::from_raw(failure_), inline_range());
      return;
    }
    for (const detail::ClaimSegment& segment : segments()) {
      fn(FailureId::from_raw(segment.failure), ByteRange::of(segment.begin, segment.end));
    }
  }

  /// Distinct failures with a claim here (each holds one tag, R1). Never
  /// allocates: O(1) inline; spilled, O(segments) compares against the
  /// first 32 distinct failures, O(segments^2) only past 32 distinct ones.
  [[nodiscard]] std::size_t claim_count() const noexcept;

  /// Whether `failure` claims any byte here. O(1) inline, O(segments)
  /// spilled; no allocation. Defined here so that a caller that asks it
  /// after every operation (a fuzzer's check of each touched failure on
  /// each touched allocation) pays no call and no coverage callbacks of
  /// core's object for it (issue 13, forty-third round).
  [[nodiscard]] bool carries(FailureId failure) const noexcept {
    if (failure_ != 0) {
      return failure_ == failure.raw();
    }
    // A plain loop, not std::any_of: no lambda or algorithm instantiation
    // of its own, which each unit would emit out of line with coverage.
    // NOLINTNEXTLINE(readability-use-anyofallof)
    for (const detail::ClaimSegment& segment : segments()) {
      if (segment.failure == failure.raw()) {
        return true;
      }
    }
    return false;
  }

  /// T5 and T6: ranges non-empty, sorted, disjoint; one failure's ranges
  /// never touch; no segment has id 0; a spilled taint holds more than
  /// inline capacity. Throws std::logic_error naming the first violation.
  void check_invariants() const;

 private:
  struct InlineClaim {
    std::uint64_t begin;
    std::uint64_t end;
  };
  struct SpilledClaims {
    detail::ClaimSegment* data = nullptr;
    std::uint32_t size = 0;
    std::uint32_t capacity = 0;
  };
  /// Active member: `inline_claim` iff failure_ != 0, else `spill` (a null
  /// `spill.data` meaning clean).
  union Storage {
    InlineClaim inline_claim;
    SpilledClaims spill = {};
  };

  [[nodiscard]] ByteRange inline_range() const noexcept {
    return ByteRange::of(storage_.inline_claim.begin, storage_.inline_claim.end);
  }
  void set_inline(std::uint64_t failure, ByteRange range) noexcept {
    failure_ = failure;
    storage_.inline_claim = {range.begin(), range.end()};
  }
  static ByteRange hull(ByteRange a, ByteRange b) noexcept {
    return ByteRange::of(a.begin() < b.begin() ? a.begin() : b.begin(),
                         a.end() < b.end() ? b.end() : a.end());
  }
  [[nodiscard]] std::span<const detail::ClaimSegment> segments() const noexcept {
    return {storage_.spill.data, storage_.spill.size};
  }

  struct Work;
  [[nodiscard]] Work begin_work(detail::ClaimSegment& stack_slot) const noexcept;
  void apply(Work work, const detail::ClaimSegment* replacement, ErrorGraph& graph,
             std::uint64_t claimant, bool tag_claimant, std::uint32_t lo, std::uint32_t hi,
             std::uint32_t count);
  void taint_slow(ByteRange range, FailureId failure, ErrorGraph& graph);
  void written_slow(ByteRange range, ErrorGraph& graph);
  [[nodiscard]] std::optional<FailureId> failure_spilled(ByteRange range) const noexcept;
  [[nodiscard]] bool claims_only_spilled(FailureId failure, ByteRange within) const noexcept;
  void clear_claims(ErrorGraph& graph) noexcept;
  [[noreturn]] static void refuse_claim_tagged();
  [[noreturn]] static void abandoned() noexcept;

  std::uint64_t failure_ = 0; ///< Inline claim's failure; 0 when spilled or clean.
  Storage storage_;
};

static_assert(sizeof(Taint) <= 24, "T6: every slice pays for a Taint; keep it three words");

/// The list check_refcounts counts carriers in, for a caller that checks
/// again and again (a fuzzer, after every few operations): kept between
/// calls, its capacity makes every later check allocation-free once it has
/// seen as many claimed failures. Holds nothing a check leaves behind that
/// the next one reads.
class RefcountScratch {
 public:
  RefcountScratch() = default;

  /// Room for `claims` (carrier, failure) pairs now, so that checks up to
  /// that size allocate nothing at all (a fuzzer grows it outside any
  /// input: libFuzzer takes a malloc with no free in a run for a leak).
  void reserve(std::size_t claims) { claimed_.reserve(claims); }

 private:
  friend void check_refcounts(const ErrorGraph& graph, std::span<const Taint* const> carriers,
                              std::span<const FailureId> held, RefcountScratch& scratch);
  std::vector<FailureId> claimed_; ///< Each carrier's distinct failures, then sorted.
};

/// R1–R3 across a set of carriers: every live node's tag count equals the
/// number of `carriers` claiming it; every claimed failure has a node (R2);
/// a node with no tags is in `held` (R3: only an operation in progress, such
/// as an open write scope, may hold an untagged node). Throws
/// std::logic_error naming the first violation. Recounts from scratch: a
/// test and fuzzer aid. O(C log C + N log C) for C claimed (carrier,
/// failure) pairs and N live nodes; allocates one list, in `scratch` when
/// the caller keeps one (nothing once it is large enough).
void check_refcounts(const ErrorGraph& graph, std::span<const Taint* const> carriers,
                     std::span<const FailureId> held, RefcountScratch& scratch);
/// As above, with a scratch list of its own.
void check_refcounts(const ErrorGraph& graph, std::span<const Taint* const> carriers,
                     std::span<const FailureId> held = {});

} // namespace taintpool
