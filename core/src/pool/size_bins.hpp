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

#include <array>
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
};

} // namespace taintpool::detail
