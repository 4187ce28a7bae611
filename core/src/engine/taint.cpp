// The out-of-line half of Taint: everything past the inline one-claim case.
//
// Every slow operation is the same three steps over the sorted segment array
// (an inline claim is first viewed as an array of one, on the stack):
//   1. find the window of segments the range reaches, and compute the at most
//      three segments that replace it (a left remnant, the new claim, a right
//      remnant);
//   2. do everything that can throw — grow the buffer, tag a new failure —
//      before touching the taint, so a throw leaves it as it was;
//   3. untag the failures that lost their last byte, splice the window, and
//      settle the representation (inline for one segment, clean for none).
#include <taintpool/taint.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

namespace taintpool {

namespace {

using detail::ClaimSegment;

/// The smallest heap array a spill allocates: a split claim plus a second
/// failure fit without a regrowth.
constexpr std::uint32_t min_spill_capacity = 4;

/// Raw id 0 never names a failure, so it stands for "no failure" where an
/// operation (written) has none.
constexpr std::uint64_t no_failure = 0;

/// The replacement for the window [lo, hi): at most a left remnant, the new
/// claim, and a right remnant.
struct Splice {
  std::uint32_t lo = 0;
  std::uint32_t hi = 0;
  ClaimSegment with[3] = {};
  std::uint32_t count = 0;

  void add(ClaimSegment segment) { with[count++] = segment; }
  [[nodiscard]] bool keeps(std::uint64_t failure) const {
    return std::any_of(with, with + count,
                       [&](const ClaimSegment& segment) { return segment.failure == failure; });
  }
};

[[nodiscard]] bool contains_failure(const ClaimSegment* first, const ClaimSegment* last,
                                    std::uint64_t failure) {
  return std::any_of(first, last,
                     [&](const ClaimSegment& segment) { return segment.failure == failure; });
}

/// The window of segments an operation on `range` reaches. `claimant` is the
/// failure being claimed (or no_failure for a write): its own segments that
/// merely touch the range are in the window, to be fused (T5); every other
/// segment is in it only if it shares a byte with the range.
[[nodiscard]] Splice window(const ClaimSegment* data, std::uint32_t size, ByteRange range,
                            std::uint64_t claimant) {
  const ClaimSegment* end = data + size;
  // First segment ending at or after range.begin: the first that can touch.
  const ClaimSegment* lo = std::partition_point(
      data, end, [&](const ClaimSegment& segment) { return segment.end < range.begin(); });
  if (lo != end && lo->end == range.begin() && lo->failure != claimant) {
    ++lo; // Touches without sharing a byte, and is not ours to fuse.
  }
  // One past the last segment beginning at or before range.end.
  const ClaimSegment* hi = std::partition_point(
      lo, end, [&](const ClaimSegment& segment) { return segment.begin <= range.end(); });
  if (hi != lo && (hi - 1)->begin == range.end() && (hi - 1)->failure != claimant) {
    --hi;
  }
  Splice splice;
  splice.lo = static_cast<std::uint32_t>(lo - data);
  splice.hi = static_cast<std::uint32_t>(hi - data);
  return splice;
}

/// Adds the remnants of the window's outer segments that stick out of
/// `range` on the left (before `middle` is added) or on the right (after).
void add_left_remnant(Splice& splice, const ClaimSegment* data, ByteRange range,
                      std::uint64_t claimant) {
  if (splice.lo == splice.hi) {
    return;
  }
  const ClaimSegment& first = data[splice.lo];
  if (first.failure != claimant && first.begin < range.begin()) {
    splice.add({first.failure, first.begin, range.begin()});
  }
}
void add_right_remnant(Splice& splice, const ClaimSegment* data, ByteRange range,
                       std::uint64_t claimant) {
  if (splice.lo == splice.hi) {
    return;
  }
  const ClaimSegment& last = data[splice.hi - 1];
  if (last.failure != claimant && last.end > range.end()) {
    splice.add({last.failure, range.end(), last.end});
  }
}

/// Untags every failure that has a segment in the window, is not the
/// claimant, keeps no remnant and has no segment outside the window — the
/// failures whose last byte this operation takes (T1, T2). Each once.
void untag_emptied(const ClaimSegment* data, std::uint32_t size, const Splice& splice,
                   std::uint64_t claimant, ErrorGraph& graph) {
  for (std::uint32_t at = splice.lo; at < splice.hi; ++at) {
    const std::uint64_t failure = data[at].failure;
    if (failure == claimant || splice.keeps(failure) ||
        contains_failure(data + splice.lo, data + at, failure) ||
        contains_failure(data, data + splice.lo, failure) ||
        contains_failure(data + splice.hi, data + size, failure)) {
      continue;
    }
    graph.untag(FailureId::from_raw(failure));
  }
}

[[nodiscard]] ClaimSegment* allocate_segments(std::uint32_t capacity) {
  return static_cast<ClaimSegment*>(::operator new(sizeof(ClaimSegment) * capacity));
}

void free_segments(ClaimSegment* data) noexcept {
  ::operator delete(data);
}

/// memmove that accepts an empty span with null pointers (memmove does not).
void move_segments(ClaimSegment* to, const ClaimSegment* from, std::size_t count) noexcept {
  if (count != 0) {
    std::memmove(to, from, sizeof(ClaimSegment) * count);
  }
}

[[noreturn]] void throw_too_many_segments() {
  throw std::length_error("Taint: more than 2^32 - 1 claimed ranges on one allocation");
}

} // namespace

/// The segment array an operation works on: the spilled array, or the inline
/// claim copied into a one-element array on the caller's stack.
struct Taint::Work {
  ClaimSegment* data;
  std::uint32_t size;
  std::uint32_t capacity;
  bool on_heap;
};

Taint::Work Taint::begin_work(detail::ClaimSegment& stack_slot) const noexcept {
  if (failure_ != 0) {
    stack_slot = {failure_, storage_.inline_claim.begin, storage_.inline_claim.end};
    return {&stack_slot, 1, 1, false};
  }
  return {storage_.spill.data, storage_.spill.size, storage_.spill.capacity, true};
}

void Taint::apply(Work work, const detail::ClaimSegment* replacement, ErrorGraph& graph,
                  std::uint64_t claimant, bool tag_claimant, std::uint32_t lo, std::uint32_t hi,
                  std::uint32_t count) {
  const std::uint64_t grown = std::uint64_t{work.size} - (hi - lo) + count;
  if (grown > std::numeric_limits<std::uint32_t>::max()) {
    throw_too_many_segments();
  }
  const auto size = static_cast<std::uint32_t>(grown);
  // A result of one segment goes inline and of none goes clean, so only a
  // larger result needs the array to have room.
  const bool settles_inline = inline_claims && size <= 1;
  ClaimSegment* target = work.data;
  std::uint32_t capacity = work.capacity;
  if (!settles_inline && size > work.capacity) {
    capacity = std::max({min_spill_capacity, size, work.on_heap ? work.capacity * 2 : 0u});
    target = allocate_segments(capacity);
  }
  if (tag_claimant) {
    try {
      graph.tag(FailureId::from_raw(claimant));
    } catch (...) {
      if (target != work.data) {
        free_segments(target);
      }
      throw;
    }
  }
  Splice splice;
  splice.lo = lo;
  splice.hi = hi;
  std::copy(replacement, replacement + count, splice.with);
  splice.count = count;
  untag_emptied(work.data, work.size, splice, claimant, graph);

  // Splice: [0, lo) + replacement + [hi, size) into target.
  if (settles_inline) {
    ClaimSegment result{};
    if (size == 1) {
      result = lo > 0 ? work.data[0] : (count > 0 ? replacement[0] : work.data[hi]);
    }
    if (work.on_heap) {
      free_segments(work.data);
    }
    failure_ = 0;
    storage_.spill = {};
    if (size == 1) {
      set_inline(result.failure, ByteRange::of(result.begin, result.end));
    }
    return;
  }
  if (target == work.data) {
    move_segments(target + lo + count, work.data + hi, work.size - hi);
  } else {
    move_segments(target, work.data, lo);
    move_segments(target + lo + count, work.data + hi, work.size - hi);
    if (work.on_heap) {
      free_segments(work.data);
    }
  }
  std::copy(replacement, replacement + count, target + lo);
  if (size == 0) {
    free_segments(target);
    failure_ = 0;
    storage_.spill = {};
    return;
  }
  failure_ = 0;
  storage_.spill = {target, size, capacity};
}

void Taint::taint_slow(ByteRange range, FailureId failure, ErrorGraph& graph) {
  ClaimSegment stack_slot{};
  const Work work = begin_work(stack_slot);
  const std::uint64_t claimant = failure.raw();
  Splice splice = window(work.data, work.size, range, claimant);

  // The new claim absorbs every segment of its own failure it touches (T5).
  ByteRange claim = range;
  for (std::uint32_t at = splice.lo; at < splice.hi; ++at) {
    if (work.data[at].failure == claimant) {
      claim = hull(claim, ByteRange::of(work.data[at].begin, work.data[at].end));
    }
  }
  add_left_remnant(splice, work.data, range, claimant);
  splice.add({claimant, claim.begin(), claim.end()});
  add_right_remnant(splice, work.data, range, claimant);

  const bool tag_claimant = !contains_failure(work.data, work.data + work.size, claimant);
  apply(work, splice.with, graph, claimant, tag_claimant, splice.lo, splice.hi, splice.count);
}

void Taint::written_slow(ByteRange range, ErrorGraph& graph) {
  ClaimSegment stack_slot{};
  const Work work = begin_work(stack_slot);
  Splice splice = window(work.data, work.size, range, no_failure);
  if (splice.lo == splice.hi) {
    return; // No claimed byte in range: nothing to release.
  }
  add_left_remnant(splice, work.data, range, no_failure);
  add_right_remnant(splice, work.data, range, no_failure);
  apply(work, splice.with, graph, no_failure, false, splice.lo, splice.hi, splice.count);
}

std::optional<FailureId> Taint::failure_spilled(ByteRange range) const noexcept {
  if (range.empty() || storage_.spill.data == nullptr) {
    return std::nullopt;
  }
  const auto claims = segments();
  const auto first = std::partition_point(
      claims.begin(), claims.end(), [&](const ClaimSegment& s) { return s.end <= range.begin(); });
  if (first != claims.end() && first->begin < range.end()) {
    return FailureId::from_raw(first->failure);
  }
  return std::nullopt;
}

std::vector<FailureId> Taint::failures(ByteRange range) const {
  std::vector<FailureId> found;
  for_each_claim([&](FailureId failure, ByteRange claimed) {
    if (claimed.overlaps(range)) {
      found.push_back(failure);
    }
  });
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

void Taint::clear_claims(ErrorGraph& graph) noexcept {
  // Only a spilled taint comes here: clear() releases an inline claim itself.
  ClaimSegment* data = storage_.spill.data;
  if (data == nullptr) {
    return;
  }
  const std::uint32_t size = storage_.spill.size;
  storage_.spill = {};
  // The array is being discarded: sort it by failure to untag each once
  // without allocating.
  std::sort(data, data + size,
            [](const ClaimSegment& a, const ClaimSegment& b) { return a.failure < b.failure; });
  for (std::uint32_t at = 0; at < size; ++at) {
    if (at == 0 || data[at].failure != data[at - 1].failure) {
      graph.untag(FailureId::from_raw(data[at].failure));
    }
  }
  free_segments(data);
}

std::size_t Taint::claim_count() const noexcept {
  // R1: one per distinct failure. Counted without a heap buffer, because the
  // fuzzers ask after every op per touched allocation (it was a third of
  // taint_fuzzer's allocations when it sorted a vector). A failure counts at
  // its first segment. The first `seen_capacity` distinct failures are
  // remembered on the stack, so a segment costs at most that many compares;
  // a failure first met after the buffer is full is looked for among the
  // earlier segments instead (quadratic, but only past that many distinct
  // failures on one allocation, and still allocation-free).
  if (failure_ != 0) {
    return 1; // Inline: one failure over one range (T6).
  }
  constexpr std::size_t seen_capacity = 32;
  std::array<std::uint64_t, seen_capacity> seen{};
  std::size_t seen_size = 0;
  std::size_t count = 0;
  const auto claims = segments();
  for (std::size_t at = 0; at < claims.size(); ++at) {
    const std::uint64_t failure = claims[at].failure;
    if (std::find(seen.begin(), seen.begin() + seen_size, failure) != seen.begin() + seen_size) {
      continue;
    }
    if (seen_size < seen_capacity) {
      seen[seen_size++] = failure;
      ++count;
    } else if (!contains_failure(claims.data(), claims.data() + at, failure)) {
      ++count;
    }
  }
  return count;
}

bool Taint::claims_only_spilled(FailureId failure, ByteRange within) const noexcept {
  return std::ranges::all_of(segments(), [&](const ClaimSegment& segment) {
    return segment.failure == failure.raw() &&
           within.contains(ByteRange::of(segment.begin, segment.end));
  });
}

// Throws on a carrier by contract (taint.hpp), so not noexcept.
// NOLINTNEXTLINE(performance-noexcept-move-constructor,bugprone-exception-escape)
Taint& Taint::operator=(Taint&& other) {
  if (this == &other) {
    return *this;
  }
  if (!is_clean()) {
    throw std::logic_error("Taint: move-assigning over a taint that still holds claims would drop "
                           "their tags (R1); clear() it first");
  }
  failure_ = other.failure_;
  storage_ = other.storage_;
  other.failure_ = 0;
  other.storage_.spill = {};
  return *this;
}

void Taint::refuse_claim_tagged() {
  throw std::logic_error("Taint::claim_tagged needs inline claims (T6), a clean taint and a "
                         "non-empty range: the caller's tag would have no carrier (R1)");
}

void Taint::abandoned() noexcept {
  static_cast<void>(std::fputs(
      "taintpool: a Taint was destroyed while it still held claims; their tags can never "
      "be released (R1, R4). Call clear() before the carrier goes away.\n",
      stderr));
  std::abort();
}

namespace {
[[noreturn]] void shape_violation(const std::string& what) {
  throw std::logic_error("Taint shape (T5/T6): " + what);
}
} // namespace

void Taint::check_invariants() const {
  if (failure_ != 0) {
    if (!inline_claims) {
      shape_violation("an inline claim in a build without inline claims");
    }
    if (storage_.inline_claim.begin >= storage_.inline_claim.end) {
      shape_violation("the inline claim is empty or inverted");
    }
    return;
  }
  if (storage_.spill.data == nullptr) {
    if (storage_.spill.size != 0 || storage_.spill.capacity != 0) {
      shape_violation("a clean taint records a size or capacity");
    }
    return;
  }
  const std::uint32_t minimum = inline_claims ? 2 : 1;
  if (storage_.spill.size < minimum) {
    shape_violation("a spilled taint holds " + std::to_string(storage_.spill.size) +
                    " segments; fewer than " + std::to_string(minimum) + " belong inline");
  }
  if (storage_.spill.size > storage_.spill.capacity) {
    shape_violation("size exceeds capacity");
  }
  const auto claims = segments();
  for (std::size_t at = 0; at < claims.size(); ++at) {
    const ClaimSegment& segment = claims[at];
    if (segment.failure == 0) {
      shape_violation("a segment names failure 0");
    }
    if (segment.begin >= segment.end) {
      shape_violation("segment " + std::to_string(at) + " is empty or inverted");
    }
    if (at > 0) {
      const ClaimSegment& previous = claims[at - 1];
      if (previous.end > segment.begin) {
        shape_violation("segments " + std::to_string(at - 1) + " and " + std::to_string(at) +
                        " overlap or are out of order");
      }
      if (previous.failure == segment.failure && previous.end == segment.begin) {
        shape_violation("two ranges of one failure touch at " + std::to_string(segment.begin) +
                        " and were not fused");
      }
    }
  }
}

void check_refcounts(const ErrorGraph& graph, std::span<const Taint* const> carriers,
                     std::span<const FailureId> held, RefcountScratch& scratch) {
  // Each carrier's distinct failures, appended to one list, then sorted:
  // a failure's carriers are its run of equal entries. A map from failure
  // to count, and a list per call, allocated on every check, and the
  // fuzzers check every few ops (issue 13, twenty-fourth round); the same
  // failures are counted, and the first violation named is the same one
  // (R2 per carrier in id order while listing, then R1 and R3 per node).
  std::vector<FailureId>& claimed = scratch.claimed_;
  claimed.clear();
  for (const Taint* carrier : carriers) {
    const auto mine = static_cast<std::ptrdiff_t>(claimed.size());
    carrier->for_each_claim([&](FailureId failure, ByteRange) { claimed.push_back(failure); });
    std::sort(claimed.begin() + mine, claimed.end());
    claimed.erase(std::unique(claimed.begin() + mine, claimed.end()), claimed.end());
    for (auto failure = claimed.begin() + mine; failure != claimed.end(); ++failure) {
      if (!graph.contains(*failure)) {
        throw std::logic_error("R2: a carrier claims " + to_string(*failure) +
                               ", which has no node");
      }
    }
  }
  std::sort(claimed.begin(), claimed.end());
  graph.for_each([&](FailureId failure, const Error&, std::uint64_t tags) {
    const auto [first, last] = std::equal_range(claimed.begin(), claimed.end(), failure);
    const auto expected = static_cast<std::uint64_t>(last - first);
    if (tags != expected) {
      throw std::logic_error("R1: " + to_string(failure) + " has " + std::to_string(tags) +
                             " tags but " + std::to_string(expected) + " carriers");
    }
    if (tags == 0 && std::find(held.begin(), held.end(), failure) == held.end()) {
      throw std::logic_error("R3: " + to_string(failure) +
                             " has no carrier and no operation holds it");
    }
  });
}

void check_refcounts(const ErrorGraph& graph, std::span<const Taint* const> carriers,
                     std::span<const FailureId> held) {
  RefcountScratch scratch;
  check_refcounts(graph, carriers, held, scratch);
}

} // namespace taintpool
