#include "size_bins.hpp"

#include <taintpool/pool/detail/slice.hpp>

#include <bit>
#include <stdexcept>
#include <string>

namespace taintpool::detail {

SizeBins::SizeBins(std::uint64_t unit, Fit fit, std::uint64_t max_extent)
    : unit_log2_(static_cast<std::uint64_t>(std::countr_zero(unit)))
    , fit_(fit)
    , rows_(bin_of(max_extent >> unit_log2_) / columns + 1)
    , heads_(std::make_unique<Slice*[]>(std::size_t{rows_} * columns)) {
}

namespace {

/// The better of two fitting blocks: smaller, then lower address.
bool better(const Slice* candidate, const Slice* best) noexcept {
  if (best == nullptr || candidate->extent != best->extent) {
    return best == nullptr || candidate->extent < best->extent;
  }
  return candidate->page->base + candidate->offset < best->page->base + best->offset;
}

/// The best block of one bin's list that fits, walking at most `walk`,
/// `skip` aside.
Slice* best_in(Slice* head, std::uint64_t extent, unsigned walk,
               const Slice* skip = nullptr) noexcept {
  Slice* best = nullptr;
  for (Slice* slice = head; slice != nullptr && walk != 0; slice = slice->bin_next, --walk) {
    if (slice->extent >= extent && slice != skip && better(slice, best)) {
      best = slice;
    }
  }
  return best;
}

} // namespace

Slice* SizeBins::best_fit(std::uint64_t extent, std::uint64_t units) const noexcept {
  const std::uint32_t own = bin_of(units);
  if (Slice* best = best_in(heads_[own], extent, best_fit_walk); best != nullptr) {
    return best;
  }
  // Every block of a larger bin fits; the first non-empty one holds the best.
  Slice* first = first_nonempty_from(own + 1);
  return first == nullptr ? nullptr : best_in(heads_[first->bin], extent, best_fit_walk);
}

Slice* SizeBins::find_next(std::uint64_t extent, const Slice* found) const noexcept {
  // find took `found` from its bin, the first that holds a fitting block:
  // the best other fit is in that bin, else in the next non-empty one.
  if (Slice* best = best_in(heads_[found->bin], extent, best_fit_walk, found); best != nullptr) {
    return best;
  }
  Slice* first = first_nonempty_from(found->bin + 1);
  return first == nullptr ? nullptr : best_in(heads_[first->bin], extent, best_fit_walk);
}

std::uint64_t SizeBins::largest() const noexcept {
  if (row_map_ == 0) {
    return 0;
  }
  const auto row = static_cast<std::uint32_t>(63 - std::countl_zero(row_map_));
  const auto column = static_cast<std::uint32_t>(
      15 - std::countl_zero(static_cast<std::uint16_t>(column_maps_[row])));
  std::uint64_t best = 0;
  for (const Slice* slice = heads_[row * columns + column]; slice != nullptr;
       slice = slice->bin_next) {
    best = slice->extent > best ? slice->extent : best;
  }
  return best;
}

void SizeBins::check_invariants() const {
  // Only the rows the row map names are walked: a list hanging off a bin the
  // maps call empty would hold blocks not walked, and the count catches it.
  std::uint64_t seen = 0;
  for (std::uint32_t row = 0; row < max_rows; ++row) {
    const bool listed = ((row_map_ >> row) & 1u) != 0;
    if (listed != (column_maps_[row] != 0) || (listed && row >= rows_)) {
      throw std::logic_error("size bins: row bitmap disagrees for row " + std::to_string(row));
    }
    for (std::uint32_t column = 0; listed && column < columns; ++column) {
      const std::uint32_t bin = row * columns + column;
      const bool mapped = ((column_maps_[row] >> column) & 1u) != 0;
      if (mapped != (heads_[bin] != nullptr)) {
        throw std::logic_error("size bins: bitmap and list disagree for bin " +
                               std::to_string(bin));
      }
      const Slice* previous = nullptr;
      for (const Slice* slice = heads_[bin]; slice != nullptr; slice = slice->bin_next) {
        ++seen;
        if (slice->state != SliceState::Free) {
          throw std::logic_error("size bins: a filed slice is not free");
        }
        if (slice->bin != bin || bin_of(slice->extent >> unit_log2_) != bin) {
          throw std::logic_error("size bins: a slice of extent " + std::to_string(slice->extent) +
                                 " is filed in the wrong bin");
        }
        if (slice->bin_prev != previous) {
          throw std::logic_error("size bins: broken back link in bin " + std::to_string(bin));
        }
        previous = slice;
      }
    }
  }
  if (seen != count_) {
    throw std::logic_error("size bins: count " + std::to_string(count_) + " but " +
                           std::to_string(seen) + " filed");
  }
}

} // namespace taintpool::detail
