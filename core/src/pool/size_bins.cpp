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

/// The best block of one bin's list that fits, walking at most `walk`.
Slice* best_in(Slice* head, std::uint64_t extent, unsigned walk) noexcept {
  Slice* best = nullptr;
  for (Slice* slice = head; slice != nullptr && walk != 0; slice = slice->bin_next, --walk) {
    if (slice->extent >= extent && better(slice, best)) {
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

std::uint32_t SizeBins::bin_of(std::uint64_t units) noexcept {
  if (units < columns) {
    return static_cast<std::uint32_t>(units);
  }
  const auto top = static_cast<unsigned>(std::bit_width(units) - 1); // >= columns_log2
  const auto row = top - columns_log2 + 1;
  const auto column = static_cast<unsigned>((units >> (top - columns_log2)) & (columns - 1));
  return row * columns + column;
}

std::uint32_t SizeBins::bin_at_least(std::uint64_t units) noexcept {
  if (units < columns) {
    return static_cast<std::uint32_t>(units);
  }
  // Round up to the next bin boundary, so every block in the bin fits.
  const auto top = static_cast<unsigned>(std::bit_width(units) - 1);
  const std::uint64_t step = std::uint64_t{1} << (top - columns_log2);
  const std::uint64_t rounded = units + (step - 1);
  return bin_of(rounded < units ? units : rounded);
}

Slice* SizeBins::first_nonempty_from(std::uint32_t bin) const noexcept {
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

void SizeBins::insert(Slice* slice) noexcept {
  const std::uint32_t bin = bin_of(slice->extent >> unit_log2_);
  slice->bin = bin;
  slice->bin_prev = nullptr;
  slice->bin_next = heads_[bin];
  if (heads_[bin] != nullptr) {
    heads_[bin]->bin_prev = slice;
  }
  heads_[bin] = slice;
  column_maps_[bin / columns] =
      static_cast<std::uint16_t>(column_maps_[bin / columns] | (1u << (bin % columns)));
  row_map_ |= std::uint64_t{1} << (bin / columns);
  ++count_;
}

void SizeBins::remove(Slice* slice) noexcept {
  const std::uint32_t bin = slice->bin;
  if (slice->bin_prev != nullptr) {
    slice->bin_prev->bin_next = slice->bin_next;
  } else {
    heads_[bin] = slice->bin_next;
  }
  if (slice->bin_next != nullptr) {
    slice->bin_next->bin_prev = slice->bin_prev;
  }
  slice->bin_prev = nullptr;
  slice->bin_next = nullptr;
  if (heads_[bin] == nullptr) {
    column_maps_[bin / columns] =
        static_cast<std::uint16_t>(column_maps_[bin / columns] & ~(1u << (bin % columns)));
    if (column_maps_[bin / columns] == 0) {
      row_map_ &= ~(std::uint64_t{1} << (bin / columns));
    }
  }
  --count_;
}

Slice* SizeBins::find(std::uint64_t extent) const noexcept {
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
