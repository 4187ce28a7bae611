// SizeBins: the free index of a pool — free slices by extent, found in O(1)
// without scanning. Internal.
//
// Why segregated bins with bitmaps (the TLSF scheme) rather than an ordered
// tree or a best-fit scan: the reserve path must not scan slices or pages
// and must not allocate (issue 3). Bins are intrusive doubly-linked lists
// through the slices themselves (no allocation); two levels of bitmaps find
// the first non-empty bin at or above a size with two count-trailing-zeros
// (no scan). Each power of two is split into 16 bins, so a request is never
// served from a bin whose smallest member is more than 1/16 above the
// request's bin — the waste is bounded — and the head of the request's own
// bin is tried first, which often fits exactly.
//
// Extents are multiples of the pool's unit (its alignment) and are indexed
// in units: the first row holds 1..15 units one bin each; row r ≥ 1 holds
// [2^(r+3), 2^(r+4)) units in 16 equal bins.
//
// Two ways to pick, chosen per pool:
//   Good  the head of the request's own bin if it fits, else the head of the
//         first non-empty larger bin: O(1), within 1/16 of best. The small
//         pools, where speed matters most and waste is bounded by a page.
//   Best  the smallest fitting block, lowest address among equals: the
//         request's own bin and then the first non-empty larger bin are
//         walked (at most best_fit_walk blocks each). The arena, where
//         memory goes: on real traces best fit holds 3-9% less than good fit.
#pragma once

#include <taintpool/pool/detail/slice.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace taintpool::detail {

struct Slice;

/// How a SizeBins picks among fitting blocks (see above).
enum class Fit : std::uint8_t { Good, Best };

class SizeBins {
 public:
  /// Blocks a best-fit search walks per bin at most, so a bin crowded with
  /// near-equal blocks cannot make reserve linear.
  static constexpr unsigned best_fit_walk = 64;

  /// Bins for free blocks of up to `max_extent` bytes (larger ones are a
  /// caller's bug): only the rows of bins that can hold one are allocated,
  /// so a pool of 2 MiB pages indexes 11 rows (1.4 KiB), not 64 (8 KiB).
  /// Throws std::bad_alloc.
  SizeBins(std::uint64_t unit, Fit fit, std::uint64_t max_extent);

  void insert(Slice* slice) noexcept;
  void remove(Slice* slice) noexcept;

  /// A free slice with extent >= `extent` picked as the Fit says, or null
  /// when none is free. Good fit is O(1), except that before answering null
  /// it walks the request's own bin; best fit walks two bins (bounded). Does
  /// not remove it.
  [[nodiscard]] Slice* find(std::uint64_t extent) const noexcept;

  /// What find(extent) would pick were `found`, its answer, not filed,
  /// without unfiling and refiling it: best fit only (the arena's edge
  /// rule, pools.hpp). Walks found's bin and the next non-empty one, at
  /// most best_fit_walk blocks each, as find does.
  [[nodiscard]] Slice* find_next(std::uint64_t extent, const Slice* found) const noexcept;

  /// The largest extent held, or 0. Scans one bin.
  [[nodiscard]] std::uint64_t largest() const noexcept;

  /// Free slices held.
  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }

  /// Every listed slice is Free, filed in the bin its extent maps to, linked
  /// both ways; bitmaps match the lists; the count matches. Throws
  /// std::logic_error.
  void check_invariants() const;

 private:
  static constexpr unsigned columns_log2 = 4;
  static constexpr unsigned columns = 1u << columns_log2;
  static constexpr unsigned max_rows = 64;

  /// The bin holding blocks of `units` (rounded down).
  [[nodiscard]] static std::uint32_t bin_of(std::uint64_t units) noexcept;
  /// The first bin whose every block holds at least `units`.
  [[nodiscard]] static std::uint32_t bin_at_least(std::uint64_t units) noexcept;
  [[nodiscard]] Slice* first_nonempty_from(std::uint32_t bin) const noexcept;
  [[nodiscard]] Slice* best_fit(std::uint64_t extent, std::uint64_t units) const noexcept;

  std::uint64_t unit_log2_;
  Fit fit_;
  std::uint32_t rows_; ///< Rows of heads_ allocated: enough for max_extent.
  std::uint64_t row_map_ = 0;
  std::array<std::uint16_t, max_rows> column_maps_{};
  std::unique_ptr<Slice*[]> heads_; ///< rows_ * columns list heads.
  std::uint64_t count_ = 0;
  /// Where insert and remove write a link that has no slice to go to (the
  /// neighbour is missing): the address is selected, not branched on (see
  /// the hot paths below).
  Slice* link_sink_ = nullptr;
};

// The hot paths, inline: every reserve and release calls them (a pair of
// the random workload makes about two inserts, two removals and one find),
// and out of line their calls and spills cost 22 of the ~850 instructions a
// pair costs (issue 12 item 4, cachegrind). The cold ones (best fit,
// largest, the checks) stay in size_bins.cpp.
//
// They branch only where the answer is rare or settled (the pool about to
// grow). Whether a bin was empty, whether a slice has neighbours in its
// list, whether a request is below 16 units, whether a bin empties: to the
// branch predictor each is a coin toss under mixed sizes, so each is a
// select (cmov) here, and a link with no neighbour to land in is written
// to link_sink_. With SlicedPool's cut and absorb done alike, a random
// pair costs 11 ns less at N = 10^3 (68 to 57), 4 at 10^5, and the 40
// traces' warm replays 7% less (geometric mean); a churn that repeats one
// cycle of 64 sizes, whose branches the predictor had learnt, pays ~2 ns
// a pair more for the extra instructions (bench/RESULTS.md, pool55). The
// lists, bins and maps come out as the branching code left them.

inline std::uint32_t SizeBins::bin_of(std::uint64_t units) noexcept {
  // One formula for every row: `shift` is 0 below 2 * columns units (the
  // first row, one bin a unit, and row 1, where the column is units - 16),
  // else the bits below the column's four: the bin is the row's first bin,
  // 16 * shift + 16, plus the column. The same bin as testing units <
  // columns first, for every units (checked exhaustively to 2^24, at each
  // power of two ± 3 and at 5 × 10^7 random values; pool55).
  const auto shift =
      static_cast<unsigned>(std::bit_width(units | (2 * columns - 1))) - (columns_log2 + 1);
  return shift * columns + static_cast<std::uint32_t>(units >> shift); // units >> shift < 32
}

inline std::uint32_t SizeBins::bin_at_least(std::uint64_t units) noexcept {
  const auto shift =
      static_cast<unsigned>(std::bit_width(units | (2 * columns - 1))) - (columns_log2 + 1);
  // Round up to the next bin boundary, so every block in the bin fits.
  const std::uint64_t rounded = units + ((std::uint64_t{1} << shift) - 1);
  return bin_of(rounded < units ? units : rounded);
}

inline Slice* SizeBins::first_nonempty_from(std::uint32_t bin) const noexcept {
  std::uint32_t row = bin / columns;
  if (row >= rows_) {
    return nullptr;
  }
  const std::uint32_t column = bin % columns;
  const auto in_row = static_cast<std::uint16_t>(column_maps_[row] & (0xFFFFu << column));
  if (in_row != 0) {
    return heads_[row * columns + static_cast<std::uint32_t>(std::countr_zero(in_row))];
  }
  if (row + 1 >= rows_) {
    return nullptr;
  }
  const std::uint64_t later_rows = row_map_ & (~std::uint64_t{0} << (row + 1));
  if (later_rows == 0) {
    return nullptr;
  }
  row = static_cast<std::uint32_t>(std::countr_zero(later_rows));
  return heads_[row * columns + static_cast<std::uint32_t>(std::countr_zero(column_maps_[row]))];
}

inline void SizeBins::insert(Slice* slice) noexcept {
  const std::uint32_t bin = bin_of(slice->extent >> unit_log2_);
  Slice* const head = heads_[bin];
  slice->bin = bin;
  slice->bin_prev = nullptr;
  slice->bin_next = head;
  // The old head's back link, or the sink when the bin was empty.
  Slice** const back = head != nullptr ? &head->bin_prev : &link_sink_;
  *back = slice;
  heads_[bin] = slice;
  column_maps_[bin / columns] =
      static_cast<std::uint16_t>(column_maps_[bin / columns] | (1u << (bin % columns)));
  row_map_ |= std::uint64_t{1} << (bin / columns);
  ++count_;
}

inline void SizeBins::remove(Slice* slice) noexcept {
  const std::uint32_t bin = slice->bin;
  Slice* const prev = slice->bin_prev;
  Slice* const next = slice->bin_next;
  Slice** const forward = prev != nullptr ? &prev->bin_next : &heads_[bin];
  Slice** const back = next != nullptr ? &next->bin_prev : &link_sink_;
  *forward = next;
  *back = prev;
  slice->bin_prev = nullptr;
  slice->bin_next = nullptr;
  // The bin's bit goes if it emptied, the row's if its last bin did.
  const std::uint32_t row = bin / columns;
  const unsigned emptied = heads_[bin] == nullptr ? 1u : 0u;
  column_maps_[row] = static_cast<std::uint16_t>(column_maps_[row] & ~(emptied << (bin % columns)));
  row_map_ &= ~(std::uint64_t{column_maps_[row] == 0 ? 1u : 0u} << row);
  --count_;
}

inline Slice* SizeBins::find(std::uint64_t extent) const noexcept {
  const std::uint64_t units = extent >> unit_log2_;
  if (fit_ == Fit::Best) {
    return best_fit(extent, units);
  }
  // The request's own bin may hold a block that fits exactly; try its head.
  const std::uint32_t own = bin_of(units);
  if (Slice* head = heads_[own]; head != nullptr && head->extent >= extent) {
    return head;
  }
  if (Slice* larger = first_nonempty_from(bin_at_least(units)); larger != nullptr) {
    return larger;
  }
  // Nothing in a larger bin: a block behind the head of the request's own
  // bin may still fit. Rare (the pool is about to grow otherwise), so a walk
  // is fine, and it keeps a fitting free block from costing new memory.
  for (Slice* slice = heads_[own]; slice != nullptr; slice = slice->bin_next) {
    if (slice->extent >= extent) {
      return slice;
    }
  }
  return nullptr;
}

} // namespace taintpool::detail
