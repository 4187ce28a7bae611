#include "pools.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace taintpool::detail {

namespace {

[[noreturn]] void layout_violation(const std::string& what) {
  throw std::logic_error("pool layout (P2): " + what);
}

std::uint64_t max_of(std::uint64_t a, std::uint64_t b) noexcept {
  return a < b ? b : a;
}

/// extent / 8 * eighths, saturating instead of wrapping.
std::uint64_t eighths_of(std::uint64_t extent, std::uint64_t eighths) noexcept {
  const std::uint64_t eighth = extent / 8;
  if (eighths != 0 && eighth > UINT64_MAX / eighths) {
    return UINT64_MAX;
  }
  return eighth * eighths;
}

} // namespace

// ---------------------------------------------------------------- Pool

Pool::Pool(Storage& storage, SliceCache& cache, MemoryStats& stats, std::uint64_t unit) noexcept
    : storage_(storage)
    , cache_(cache)
    , stats_(stats)
    , bins_(unit)
    , unit_(unit) {
}

Pool::~Pool() = default;

Slice* Pool::add_page(std::uint64_t size) {
  auto* page = new Page();
  try {
    page->handle = storage_.allocate(size);
  } catch (...) {
    delete page;
    throw;
  }
  page->base = static_cast<std::byte*>(storage_.resolve(page->handle));
  page->size = size;
  page->pool = this;
  page->pool_index = index_;
  page->lane = lane_;
  page->next = pages_;
  if (pages_ != nullptr) {
    pages_->prev = page;
  }
  pages_ = page;

  Slice* whole = cache_.take();
  whole->page = page;
  whole->offset = 0;
  whole->extent = size;
  page->first = whole;
  bins_.insert(whole);

  stats_.reserved += size;
  stats_.pages += 1;
  stats_.peak_reserved = max_of(stats_.peak_reserved, stats_.reserved);
  return whole;
}

void Pool::drop_page(Page* page) noexcept {
  Slice* whole = page->first;
  bins_.remove(whole);
  cache_.give(whole);
  if (page->prev != nullptr) {
    page->prev->next = page->next;
  } else {
    pages_ = page->next;
  }
  if (page->next != nullptr) {
    page->next->prev = page->prev;
  }
  storage_.deallocate(page->handle, page->size);
  stats_.reserved -= page->size;
  stats_.pages -= 1;
  delete page;
}

void Pool::release_all_pages() noexcept {
  while (pages_ != nullptr) {
    Page* page = pages_;
    for (Slice* slice = page->first; slice != nullptr;) {
      Slice* next = slice->page_next;
      if (slice->state == SliceState::Free || slice->state == SliceState::Recent) {
        if (slice->state == SliceState::Free) {
          bins_.remove(slice);
        }
        cache_.give(slice);
      } else {
        // Tombstoned by the manager: the record lives on for its handles.
        slice->page = nullptr;
        slice->page_prev = nullptr;
        slice->page_next = nullptr;
      }
      slice = next;
    }
    pages_ = page->next;
    storage_.deallocate(page->handle, page->size);
    stats_.reserved -= page->size;
    stats_.pages -= 1;
    delete page;
  }
  pages_ = nullptr;
}

void Pool::check_invariants(MemoryStats& seen) const {
  bins_.check_invariants();
  std::uint64_t free_slices = 0;
  const Page* previous_page = nullptr;
  for (const Page* page = pages_; page != nullptr; page = page->next) {
    if (page->prev != previous_page || page->pool != this) {
      layout_violation("the page list is not linked both ways to its pool");
    }
    previous_page = page;
    seen.reserved += page->size;
    seen.pages += 1;
    std::uint64_t expected_offset = 0;
    const Slice* previous = nullptr;
    for (const Slice* slice = page->first; slice != nullptr; slice = slice->page_next) {
      if (slice->page != page || slice->page_prev != previous) {
        layout_violation("a slice is not linked to its page and neighbours");
      }
      if (slice->offset != expected_offset) {
        layout_violation("slices do not tile their page: a slice at offset " +
                         std::to_string(slice->offset) + " where " +
                         std::to_string(expected_offset) + " was expected");
      }
      if (slice->extent == 0 || slice->extent % unit_ != 0) {
        layout_violation("extent " + std::to_string(slice->extent) +
                         " is not a positive multiple of the alignment " + std::to_string(unit_));
      }
      if (slice->extent > page->size - slice->offset) {
        layout_violation("a slice runs past its page");
      }
      slice->taint.check_invariants();
      switch (slice->state) {
      case SliceState::Free:
      case SliceState::Recent:
        free_slices += slice->state == SliceState::Free ? 1 : 0;
        if (!slice->taint.is_clean()) {
          layout_violation("a free slice still carries taint (P1)");
        }
        if (slice->allocation != 0) {
          layout_violation("a free slice names an allocation");
        }
        break;
      case SliceState::Bound:
        if (slice->size > slice->extent) {
          layout_violation("an allocation is larger than its slice");
        }
        if (reinterpret_cast<std::uintptr_t>(page->base + slice->offset) % unit_ != 0) {
          layout_violation("an allocation is not aligned to " + std::to_string(unit_));
        }
        seen.in_use += slice->size;
        seen.padding += slice->extent - slice->size;
        seen.allocations += 1;
        break;
      case SliceState::Tombstoned:
        layout_violation("a tombstoned slice is still on a live page");
      }
      expected_offset += slice->extent;
      previous = slice;
    }
    if (expected_offset != page->size) {
      layout_violation("slices cover " + std::to_string(expected_offset) + " bytes of a " +
                       std::to_string(page->size) + "-byte page");
    }
  }
  if (free_slices != bins_.count()) {
    layout_violation(std::to_string(free_slices) + " free slices on pages but " +
                     std::to_string(bins_.count()) + " in the free index");
  }
}

// ---------------------------------------------------------------- SlicedPool

SlicedPool::SlicedPool(Storage& storage, SliceCache& cache, MemoryStats& stats, std::uint64_t unit,
                       std::uint64_t page_size) noexcept
    : Pool(storage, cache, stats, unit)
    , page_size_(page_size) {
}

Slice* SlicedPool::reserve(std::uint64_t extent) {
  // Exactly the extent just released: take it back as it is, newest first.
  for (std::uint32_t at = recent_count_; at-- > 0;) {
    Slice* slice = recent_[at];
    if (slice->extent == extent) {
      std::copy(recent_.begin() + at + 1, recent_.begin() + recent_count_, recent_.begin() + at);
      --recent_count_;
      slice->state = SliceState::Free;
      return slice;
    }
  }
  cache_.ensure(2); // A new page's whole slice, and a split's remainder.
  Slice* slice = bins_.find(extent);
  if (slice == nullptr && recent_count_ != 0) {
    consolidate(); // Parked slices may merge into room: no page for them.
    slice = bins_.find(extent);
  }
  if (slice == nullptr) {
    slice = add_page(page_size_);
  }
  bins_.remove(slice);
  if (slice->extent > extent) {
    // Split: the remainder is a fresh record, so it starts clean (P1).
    Slice* rest = cache_.take();
    rest->page = slice->page;
    rest->offset = slice->offset + extent;
    rest->extent = slice->extent - extent;
    rest->page_prev = slice;
    rest->page_next = slice->page_next;
    if (slice->page_next != nullptr) {
      slice->page_next->page_prev = rest;
    }
    slice->page_next = rest;
    slice->extent = extent;
    bins_.insert(rest);
  }
  return slice;
}

void SlicedPool::absorb(Slice* left, Slice* right) noexcept {
  left->extent += right->extent;
  left->page_next = right->page_next;
  if (right->page_next != nullptr) {
    right->page_next->page_prev = left;
  }
  cache_.give(right);
}

void SlicedPool::release(Slice* slice) noexcept {
  // Parked first, so merging the oldest cannot absorb it as a free neighbour.
  slice->state = SliceState::Recent;
  if (recent_count_ == kept_recent) {
    Slice* oldest = recent_[0];
    std::copy(recent_.begin() + 1, recent_.end(), recent_.begin());
    --recent_count_;
    merge(oldest);
  }
  recent_[recent_count_++] = slice;
}

void SlicedPool::consolidate() noexcept {
  const std::uint32_t count = recent_count_;
  recent_count_ = 0;
  for (std::uint32_t at = 0; at < count; ++at) {
    merge(recent_[at]);
  }
}

void SlicedPool::release_all_pages() noexcept {
  recent_count_ = 0; // Their records go back to the cache with their pages.
  Pool::release_all_pages();
}

void SlicedPool::merge(Slice* slice) noexcept {
  slice->state = SliceState::Free;
  if (Slice* left = slice->page_prev; left != nullptr && left->state == SliceState::Free) {
    bins_.remove(left);
    absorb(left, slice);
    slice = left;
  }
  if (Slice* right = slice->page_next; right != nullptr && right->state == SliceState::Free) {
    bins_.remove(right);
    absorb(slice, right);
  }
  bins_.insert(slice);
}

void SlicedPool::release_free_pages() noexcept {
  consolidate();
  for (Page* page = pages_; page != nullptr;) {
    Page* next = page->next;
    if (page->first->state == SliceState::Free && page->first->extent == page->size) {
      drop_page(page);
    }
    page = next;
  }
}

void SlicedPool::check_invariants(MemoryStats& seen) const {
  Pool::check_invariants(seen);
  std::uint32_t parked = 0;
  for (const Page* page = pages_; page != nullptr; page = page->next) {
    if (page->size != page_size_) {
      layout_violation("a sliced page of the wrong size");
    }
    for (const Slice* slice = page->first; slice != nullptr; slice = slice->page_next) {
      if (slice->state == SliceState::Recent) {
        ++parked;
        if (std::find(recent_.begin(), recent_.begin() + recent_count_, slice) ==
            recent_.begin() + recent_count_) {
          layout_violation("a slice is marked recent but is not on the recent list");
        }
      }
      if (slice->page_next != nullptr && slice->state == SliceState::Free &&
          slice->page_next->state == SliceState::Free) {
        layout_violation("two free neighbours were not coalesced");
      }
    }
  }
  if (parked != recent_count_) {
    layout_violation("the recent list holds " + std::to_string(recent_count_) + " slices but " +
                     std::to_string(parked) + " are marked recent");
  }
}

// ---------------------------------------------------------------- ExclusivePool

ExclusivePool::ExclusivePool(Storage& storage, SliceCache& cache, MemoryStats& stats,
                             std::uint64_t unit, std::uint64_t reuse_slack_eighths,
                             std::uint64_t release_after) noexcept
    : Pool(storage, cache, stats, unit)
    , reuse_slack_eighths_(reuse_slack_eighths)
    , release_after_(release_after) {
}

void ExclusivePool::unlink_idle(Page* page) noexcept {
  if (page->idle_prev != nullptr) {
    page->idle_prev->idle_next = page->idle_next;
  } else {
    idle_oldest_ = page->idle_next;
  }
  if (page->idle_next != nullptr) {
    page->idle_next->idle_prev = page->idle_prev;
  } else {
    idle_newest_ = page->idle_prev;
  }
  page->idle_prev = nullptr;
  page->idle_next = nullptr;
}

void ExclusivePool::age() noexcept {
  while (idle_oldest_ != nullptr && served_ - idle_oldest_->idle_since >= release_after_) {
    Page* page = idle_oldest_;
    unlink_idle(page);
    drop_page(page);
  }
}

Slice* ExclusivePool::reserve(std::uint64_t extent) {
  cache_.ensure(1);
  age();
  Slice* slice = bins_.find(extent);
  if (slice != nullptr && slice->extent - extent <= eighths_of(extent, reuse_slack_eighths_)) {
    unlink_idle(slice->page);
  } else {
    slice = add_page(extent);
  }
  bins_.remove(slice);
  ++served_;
  return slice;
}

void ExclusivePool::release(Slice* slice) noexcept {
  bins_.insert(slice);
  Page* page = slice->page;
  page->idle_since = served_;
  page->idle_prev = idle_newest_;
  page->idle_next = nullptr;
  if (idle_newest_ != nullptr) {
    idle_newest_->idle_next = page;
  } else {
    idle_oldest_ = page;
  }
  idle_newest_ = page;
}

void ExclusivePool::release_free_pages() noexcept {
  while (idle_oldest_ != nullptr) {
    Page* page = idle_oldest_;
    unlink_idle(page);
    drop_page(page);
  }
}

void ExclusivePool::release_all_pages() noexcept {
  idle_oldest_ = nullptr;
  idle_newest_ = nullptr;
  Pool::release_all_pages();
}

void ExclusivePool::check_invariants(MemoryStats& seen) const {
  Pool::check_invariants(seen);
  std::uint64_t idle = 0;
  const Page* previous = nullptr;
  for (const Page* page = idle_oldest_; page != nullptr; page = page->idle_next) {
    if (page->idle_prev != previous || page->first->state != SliceState::Free) {
      layout_violation("the idle-page list holds a page in use or is mislinked");
    }
    previous = page;
    ++idle;
  }
  if (previous != idle_newest_) {
    layout_violation("the idle-page list's tail is wrong");
  }
  for (const Page* page = pages_; page != nullptr; page = page->next) {
    if (page->first->page_next != nullptr || page->first->extent != page->size) {
      layout_violation("an exclusive page holds more than one slice");
    }
  }
  if (idle != bins_.count()) {
    layout_violation("free exclusive pages and idle pages disagree");
  }
}

} // namespace taintpool::detail
