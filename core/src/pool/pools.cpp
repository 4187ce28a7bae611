#include "pools.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace taintpool::detail {

namespace {

[[noreturn]] void layout_violation(const std::string& what) {
  throw std::logic_error("pool layout (P2): " + what);
}

std::uint64_t max_of(std::uint64_t a, std::uint64_t b) noexcept {
  return a < b ? b : a;
}

/// Rounds up to a power-of-two unit; callers keep size <= 2^63.
std::uint64_t round_up(std::uint64_t size, std::uint64_t unit) noexcept {
  return (size + unit - 1) & ~(unit - 1);
}

/// Storage blocks a page holds: its mapped chunks, or itself.
std::uint64_t blocks_of(const Page* page) noexcept {
  return page->reservation ? page->chunks.size() : 1;
}

} // namespace

// ---------------------------------------------------------------- Pool

Pool::Pool(Storage& storage, SliceCache& cache, MemoryStats& stats, std::uint64_t unit, Fit fit,
           std::uint64_t max_extent)
    : storage_(storage)
    , cache_(cache)
    , stats_(stats)
    , bins_(unit, fit, max_extent)
    , unit_(unit) {
}

Pool::~Pool() = default;

void Pool::link_page(Page* page) noexcept {
  page->pool = this;
  page->pool_index = index_;
  page->lane = lane_;
  page->prev = nullptr;
  page->next = pages_;
  if (pages_ != nullptr) {
    pages_->prev = page;
  }
  pages_ = page;
}

void Pool::unlink_page(Page* page) noexcept {
  if (page->prev != nullptr) {
    page->prev->next = page->next;
  } else {
    pages_ = page->next;
  }
  if (page->next != nullptr) {
    page->next->prev = page->prev;
  }
  page->prev = nullptr;
  page->next = nullptr;
}

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
  page->mapped = size;
  link_page(page);

  Slice* whole = cache_.take();
  whole->page = page;
  whole->offset = 0;
  whole->extent = size;
  page->first = whole;
  bins_of(whole).insert(whole);

  stats_.reserved += size;
  stats_.pages += 1;
  stats_.peak_reserved = max_of(stats_.peak_reserved, stats_.reserved);
  return whole;
}

void Pool::free_page(Page* page) noexcept {
  storage_.deallocate(page->handle, page->size);
  stats_.reserved -= page->mapped;
  stats_.pages -= blocks_of(page);
  delete page;
}

void Pool::drop_page(Page* page) noexcept {
  Slice* whole = page->first;
  bins_of(whole).remove(whole);
  cache_.give(whole);
  unlink_page(page);
  free_page(page);
}

void Pool::release_all_pages() noexcept {
  while (pages_ != nullptr) {
    // Pop the head page: the list never points at a page being freed.
    Page* page = pages_;
    pages_ = page->next;
    if (pages_ != nullptr) {
      pages_->prev = nullptr;
    }
    page->next = nullptr;
    for (Slice* slice = page->first; slice != nullptr;) {
      Slice* next = slice->page_next;
      if (slice->state == SliceState::Tombstoned) {
        // Tombstoned by the manager: the record lives on for its handles.
        slice->page = nullptr;
        slice->page_prev = nullptr;
        slice->page_next = nullptr;
      } else {
        if (slice->state == SliceState::Free) {
          bins_of(slice).remove(slice);
        }
        cache_.give(slice);
      }
      slice = next;
    }
    free_page(page);
  }
}

void Pool::check_invariants(MemoryStats& seen) const {
  bins_.check_invariants();
  if (far_bins_ != nullptr) {
    far_bins_->check_invariants();
  }
  std::uint64_t free_slices = 0;
  const Page* previous_page = nullptr;
  for (const Page* page = pages_; page != nullptr; page = page->next) {
    if (page->prev != previous_page || page->pool != this || page->pool_index != index_ ||
        page->lane != lane_) {
      layout_violation("the page list is not linked both ways to its pool and lane");
    }
    previous_page = page;
    if (!page->reservation && page->mapped != page->size) {
      layout_violation("a page of memory does not count all of itself as held");
    }
    seen.reserved += page->mapped;
    seen.pages += blocks_of(page);
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
      case SliceState::Unmapped:
        free_slices += slice->state == SliceState::Free ? 1 : 0;
        if (!slice->taint.is_clean()) {
          layout_violation("a free or unmapped slice still carries taint (P1)");
        }
        if (slice->allocation != 0) {
          layout_violation("a free or unmapped slice names an allocation");
        }
        if (slice->state == SliceState::Unmapped && !page->reservation) {
          layout_violation("an unmapped slice on a page of memory");
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
  const std::uint64_t indexed = bins_.count() + (far_bins_ != nullptr ? far_bins_->count() : 0);
  if (free_slices != indexed) {
    layout_violation(std::to_string(free_slices) + " free slices on pages but " +
                     std::to_string(indexed) + " in the free index");
  }
}

// ---------------------------------------------------------------- SlicedPool

SlicedPool::SlicedPool(Storage& storage, SliceCache& cache, MemoryStats& stats, std::uint64_t unit,
                       std::uint64_t page_size, Fit fit)
    : Pool(storage, cache, stats, unit, fit, page_size != 0 ? page_size : UINT64_MAX)
    , page_size_(page_size)
    , kept_(fit == Fit::Best ? 1 : kept_recent) {
}

Slice* SlicedPool::grow(std::uint64_t /*extent*/) {
  return add_page(page_size_);
}

Slice* SlicedPool::take_recent_matching(std::uint64_t extent) noexcept {
  // Every slot at once, no early exit: a mask of the slots that match.
  unsigned matches = 0;
  for (std::uint32_t slot = 0; slot < kept_recent; ++slot) {
    matches |= static_cast<unsigned>(recent_extents_[slot] == extent) << slot;
  }
  if (matches == 0) {
    return nullptr; // Only a tag matched: another extent.
  }
  // In age order (bit a: the a-th oldest); the newest match is taken.
  const unsigned by_age =
      ((matches >> recent_oldest_) | (matches << (kept_recent - recent_oldest_))) &
      ((1u << kept_recent) - 1);
  const auto newest = static_cast<std::uint32_t>(std::bit_width(by_age) - 1);
  Slice* slice = recent_[recent_slot(newest)];
  // Close the gap: the newer ones move one slot back.
  for (std::uint32_t age = newest; age + 1 < recent_count_; ++age) {
    const std::uint32_t from = recent_slot(age + 1);
    set_recent(recent_slot(age), recent_[from], recent_extents_[from]);
  }
  --recent_count_;
  set_recent(recent_slot(recent_count_), nullptr, 0);
  slice->state = SliceState::Free;
  return slice;
}

Slice* SlicedPool::reserve(std::uint64_t extent) {
  // Exactly the extent just released: take it back as it is, newest first.
  if (Slice* slice = take_recent(extent)) {
    return slice;
  }
  cache_.ensure(spares_for_reserve());
  if (kept_ == 1) {
    // Best fit: a parked slice takes part in the choice like any free range.
    consolidate();
  }
  Slice* slice = bins_.find(extent);
  if (slice == nullptr && recent_count_ != 0) {
    consolidate(); // Parked slices may merge into room: no new memory for them.
    slice = bins_.find(extent);
  }
  if (slice == nullptr) {
    slice = grow(extent);
  }
  return split(slice, extent);
}

Slice* SlicedPool::cut(Slice* slice, std::uint64_t keep) noexcept {
  // The right part is a fresh record, so it starts clean (P1); the left
  // keeps its record and its place on the page.
  Slice* right = cache_.take();
  right->page = slice->page;
  right->offset = slice->offset + keep;
  right->extent = slice->extent - keep;
  right->page_prev = slice;
  right->page_next = slice->page_next;
  Slice** const back = slice->page_next != nullptr ? &slice->page_next->page_prev : &link_sink_;
  *back = right;
  slice->page_next = right;
  slice->extent = keep;
  return right;
}

Slice* SlicedPool::split(Slice* slice, std::uint64_t extent) noexcept {
  SizeBins& index = bins_of(slice); // The remainder stays on the page, so in the index.
  index.remove(slice);
  if (slice->extent > extent) {
    index.insert(cut(slice, extent));
  }
  return slice;
}

void SlicedPool::absorb(Slice* left, Slice* right) noexcept {
  left->extent += right->extent;
  left->page_next = right->page_next;
  Slice** const back = right->page_next != nullptr ? &right->page_next->page_prev : &link_sink_;
  *back = left;
  cache_.give(right);
}

void SlicedPool::release(Slice* slice) noexcept {
  if (kept_ == 0) {
    merge(slice);
    return;
  }
  // Parked first, so merging the oldest cannot absorb it as a free neighbour.
  slice->state = SliceState::Recent;
  // Merging it later reads its neighbours, cache misses with many live
  // allocations: fetch them now, while it waits (hints only).
  __builtin_prefetch(slice->page_prev, 1);
  __builtin_prefetch(slice->page_next, 1);
  if (recent_count_ == kept_) {
    const std::uint32_t slot = recent_oldest_;
    Slice* oldest = recent_[slot];
    // The new slice takes the vacated slot over whole (one tag update, not
    // two). A full ring of kept_recent moves on by one, which makes that
    // slot the newest; a best-fit pool's ring of one stays where it is
    // (moving it on, as it did, cost a second update to empty the old
    // slot: an arena release that finds a slice parked, pool20).
    if (kept_ != 1) {
      recent_oldest_ = recent_slot(1);
    }
    set_recent(slot, slice, slice->extent);
    // No hint here for what merging the next oldest will unfile (its free
    // neighbours' bin links): g++ had deleted such a call as pure, and
    // forced inline it cost 45 instructions and ~12 ns a pair at N = 10^3
    // for no gain at 10^5 (bench/RESULTS.md, pool6).
    merge(oldest);
    return;
  }
  set_recent(recent_slot(recent_count_++), slice, slice->extent);
}

void SlicedPool::consolidate() noexcept {
  // Oldest first, as they would have been merged had they waited.
  const std::uint32_t count = recent_count_;
  const std::uint32_t oldest = recent_oldest_;
  recent_count_ = 0;
  recent_oldest_ = 0;
  clear_recent();
  for (std::uint32_t age = 0; age < count; ++age) {
    merge(recent_[(oldest + age) & recent_slot_mask]);
  }
}

void SlicedPool::release_all_pages() noexcept {
  // Their records go back to the cache with their pages.
  recent_count_ = 0;
  recent_oldest_ = 0;
  clear_recent();
  Pool::release_all_pages();
}

Slice* SlicedPool::merge(Slice* slice) noexcept {
  SizeBins& index = bins_of(slice); // Neighbours share the page, so the index.
  slice->state = SliceState::Free;
  if (Slice* left = slice->page_prev; left != nullptr && left->state == SliceState::Free) {
    index.remove(left);
    absorb(left, slice);
    slice = left;
  }
  if (Slice* right = slice->page_next; right != nullptr && right->state == SliceState::Free) {
    index.remove(right);
    absorb(slice, right);
  }
  index.insert(slice);
  return slice;
}

Released SlicedPool::drop_free_pages() noexcept {
  Released released;
  for (Page* page = pages_; page != nullptr;) {
    Page* next = page->next;
    if (!page->reservation && page->first->state == SliceState::Free &&
        page->first->extent == page->size) {
      released.bytes += page->mapped;
      released.blocks += 1;
      drop_page(page);
    }
    page = next;
  }
  return released;
}

Released SlicedPool::release_free_pages() {
  consolidate();
  return drop_free_pages();
}

void SlicedPool::check_invariants(MemoryStats& seen) const {
  Pool::check_invariants(seen);
  std::uint32_t parked = 0;
  for (const Page* page = pages_; page != nullptr; page = page->next) {
    if (page_size_ != 0 && page->size != page_size_) {
      layout_violation("a sliced page of the wrong size");
    }
    for (const Slice* slice = page->first; slice != nullptr; slice = slice->page_next) {
      if (slice->state == SliceState::Recent) {
        ++parked;
        bool listed = false;
        for (std::uint32_t age = 0; age < recent_count_; ++age) {
          listed = listed || recent_[recent_slot(age)] == slice;
        }
        if (!listed) {
          layout_violation("a slice is marked recent but is not on the recent list");
        }
      }
      if (slice->page_next != nullptr && slice->state == slice->page_next->state &&
          (slice->state == SliceState::Free || slice->state == SliceState::Unmapped)) {
        layout_violation("two free (or two unmapped) neighbours were not coalesced");
      }
    }
  }
  for (std::uint32_t age = 0; age < kept_recent; ++age) {
    const std::uint32_t slot = recent_slot(age);
    const std::uint64_t expected = age < recent_count_ ? recent_[slot]->extent : 0;
    if (recent_extents_[slot] != expected) {
      layout_violation("the recent list's extent of slot " + std::to_string(slot) + " is " +
                       std::to_string(recent_extents_[slot]) + " where " +
                       std::to_string(expected) + " was expected");
    }
  }
  for (std::uint32_t slot = 0; slot < kept_recent; ++slot) {
    const std::uint64_t extent = recent_extents_[slot];
    const std::uint64_t expected = extent == 0 ? 0 : recent_tag(extent);
    if (((recent_tags_ >> (8 * slot)) & 0xFF) != expected) {
      layout_violation("the recent list's tag of slot " + std::to_string(slot) +
                       " does not match its extent " + std::to_string(extent));
    }
  }
  if (recent_count_ > kept_ || recent_oldest_ > recent_slot_mask) {
    layout_violation("the recent list holds more than it keeps");
  }
  if (parked != recent_count_) {
    layout_violation("the recent list holds " + std::to_string(recent_count_) + " slices but " +
                     std::to_string(parked) + " are marked recent");
  }
}

// ---------------------------------------------------------------- ArenaPool

ArenaPool::ArenaPool(Storage& storage, SliceCache& cache, MemoryStats& stats, std::uint64_t unit,
                     const MemoryConfig& config)
    : SlicedPool(storage, cache, stats, unit, 0, Fit::Best)
    , address_space_(config.arena_address_space)
    , growth_divisor_(config.arena_growth_divisor)
    , min_growth_(config.arena_min_growth)
    , ramp_growth_(config.arena_ramp_growth)
    , learns_holes_(config.arena_sets_hole_makers_apart) {
}

Slice* ArenaPool::reserve(std::uint64_t extent) {
  if (!learns_holes_ || virtual_memory() == nullptr) {
    Slice* slice = SlicedPool::reserve(extent); // Without mapping, a hole cannot join a growth.
    ++live_;
    return slice;
  }
  const std::uint32_t key = blame_.key_for(extent);
  Slice* slice = nullptr;
  if (blame_.isolated(key)) {
    slice = reserve_apart(extent);
  } else {
    slice = reserve_beside_apart(extent);
  }
  blame_.served(extent);
  slice->bin = key; // Unused while the slice is bound: the context rides along to release.
  ++live_;
  return slice;
}

void ArenaPool::release(Slice* slice) noexcept {
  if (learns_holes_ && memory_ != nullptr) {
    blame_.vacated(slice->bin, slice->page, slice->offset, slice->extent);
  }
  // Where the slice lies is read before the release: without a recent list
  // the release merges it, and a record merged into its neighbour goes
  // back to the cache.
  const bool off_near_bottom = slice->page_prev != nullptr || slice->page == far_page_;
  SlicedPool::release(slice);
  // Empty: nothing stays parked, so the next request starts from the
  // bottom of one free range, as the first did (see the class comment).
  // A slice at the bottom of a near page stays: taking it back is that
  // start already, and a same-size pair on an empty arena keeps its
  // recent-list reuse.
  if (--live_ == 0 && off_near_bottom) {
    consolidate();
  }
}

Slice* ArenaPool::reserve_apart(std::uint64_t extent) {
  if (Slice* slice = take_recent(extent)) {
    return slice;
  }
  cache_.ensure(spares_for_reserve());
  if (far_bins_ == nullptr) {
    far_bins_ = std::make_unique<SizeBins>(unit_, Fit::Best, UINT64_MAX);
  }
  consolidate();
  Slice* slice = best_fit_far(extent);
  if (slice == nullptr && stats_.free() > HoleBlame::tight_factor * extent) {
    slice = best_fit_near(extent); // Not tight: no new memory for it (see HoleBlame).
  }
  if (slice == nullptr) {
    // Tight, and nothing far fits: the top of a roomy near block that
    // borders unmapped space holds it without new memory, and its hole,
    // once freed, joins that block's next growth as a far one would
    // (HoleBlame::edge_factor).
    if (Slice* edge = free_block_before_unmapped(HoleBlame::edge_factor * extent)) {
      return split_off_top(edge, extent);
    }
    grow_far_ = true;
    try {
      slice = grow(extent);
    } catch (...) {
      grow_far_ = false;
      throw;
    }
    grow_far_ = false;
  }
  return split(slice, extent);
}

Slice* ArenaPool::reserve_beside_apart(std::uint64_t extent) {
  if (Slice* slice = take_recent(extent)) {
    return slice;
  }
  cache_.ensure(spares_for_reserve());
  consolidate();
  Slice* slice = best_fit_near_first(extent);
  if (slice == nullptr) {
    slice = grow(extent);
  }
  return split(slice, extent);
}

Slice* ArenaPool::best_fit_near(std::uint64_t extent) noexcept {
  Slice* slice = bins_.find(extent);
  // An exact fit is taken wherever it lies: no remainder, and its
  // neighbour's record is not read (the common case in a warm step).
  if (slice == nullptr || slice->extent == extent || slice->page_next == nullptr ||
      slice->page_next->state != SliceState::Unmapped) {
    return slice;
  }
  // The edge comes last (see the class comment): any other fit first.
  Slice* other = bins_.find_next(extent, slice);
  return other != nullptr ? other : slice;
}

Slice* ArenaPool::free_block_before_unmapped(std::uint64_t at_least) const noexcept {
  Slice* best = nullptr;
  for (const Page* page = pages_; page != nullptr; page = page->next) {
    if (page == far_page_) {
      continue; // Its free blocks were looked at first.
    }
    for (const Slice* hole = page->unmapped; hole != nullptr; hole = hole->bin_next) {
      Slice* left = hole->page_prev;
      if (left != nullptr && left->state == SliceState::Free && left->extent >= at_least &&
          (best == nullptr || left->extent < best->extent)) {
        best = left;
      }
    }
  }
  return best;
}

Slice* ArenaPool::split_off_top(Slice* slice, std::uint64_t extent) noexcept {
  SizeBins& index = bins_of(slice);
  index.remove(slice);
  if (slice->extent == extent) {
    return slice;
  }
  Slice* top = cut(slice, slice->extent - extent);
  index.insert(slice); // Filed again under its new extent.
  return top;
}

Slice* ArenaPool::best_fit_far(std::uint64_t extent) const noexcept {
  return far_page_ != nullptr ? far_bins_->find(extent) : nullptr;
}

Slice* ArenaPool::best_fit_near_first(std::uint64_t extent) noexcept {
  Slice* slice = best_fit_near(extent);
  return slice != nullptr ? slice : best_fit_far(extent);
}

bool ArenaPool::blame_holes(std::uint64_t extent, std::uint64_t granule) noexcept {
  // The free ranges of at least extent / 2: as extent >= held / 12
  // (HoleBlame::blame_divisor), at most 24 of them, of which the first 16
  // are kept (one missed only leaves its maker unblamed). One walk over the
  // slices finds them. The free ranges this growth maps next to are not
  // holes: it joins them and maps only what they lack, so they stranded
  // nothing, and setting their makers apart would only send those makers'
  // later blocks to new far memory (HoleBlame's class comment).
  const Slice* joined_below = nullptr;
  const Slice* joined_above = nullptr;
  std::uint64_t need = 0;
  if (const Slice* site = growth_site(extent, granule, need)) {
    if (site->page_prev != nullptr && site->page_prev->state == SliceState::Free) {
      joined_below = site->page_prev;
    }
    if (need == site->extent && site->page_next != nullptr &&
        site->page_next->state == SliceState::Free) {
      joined_above = site->page_next; // Mapped whole, the site joins what follows it too.
    }
  }
  struct Hole {
    const Page* page;
    std::uint64_t offset;
    std::uint64_t end;
  };
  std::array<Hole, 16> holes{};
  std::size_t count = 0;
  for (const Page* page = pages_; page != nullptr; page = page->next) {
    for (const Slice* slice = page->first; slice != nullptr && count < holes.size();
         slice = slice->page_next) {
      if (slice->state == SliceState::Free && slice->extent * 2 >= extent &&
          slice != joined_below && slice != joined_above) {
        holes[count++] = Hole{page, slice->offset, slice->offset + slice->extent};
      }
    }
  }
  return blame_.blame(extent, [&](const Page* page, std::uint64_t offset, std::uint64_t size) {
    for (std::size_t at = 0; at < count; ++at) {
      if (holes[at].page == page && holes[at].offset < offset + size && offset < holes[at].end) {
        return true;
      }
    }
    return false;
  });
}

VirtualMemory* ArenaPool::virtual_memory() noexcept {
  if (!memory_asked_) {
    memory_ = storage_.virtual_memory();
    memory_asked_ = true;
  }
  return memory_;
}

std::uint64_t ArenaPool::growth(std::uint64_t need, std::uint64_t granule) const noexcept {
  std::uint64_t step = growth_divisor_ != 0 ? held_ / growth_divisor_ : 0;
  step = max_of(step, need);
  step = max_of(step, min_growth_);
  // Young: at least double, up to the ramp's cap (MemoryConfig says why).
  step = max_of(step, std::min(held_, ramp_growth_));
  return round_up(step, granule);
}

Slice* ArenaPool::grow(std::uint64_t extent) {
  if (VirtualMemory* memory = virtual_memory()) {
    if (learns_holes_) {
      if (extent * HoleBlame::blame_divisor >= held_) {
        const bool had_set_apart = blame_.sets_apart_any();
        // Settled: the layout this growth repeats is already learned, so
        // what lies wholly free now stays free (see the class comment).
        if (!blame_holes(extent, memory->granularity()) && had_set_apart) {
          give_back_free_chunks();
        }
      }
      blame_.forget_vacated(); // Blame looks only at blocks freed since the last growth.
    }
    return grow_mapped(*memory, extent);
  }
  return grow_pages(extent);
}

Slice* ArenaPool::grow_pages(std::uint64_t extent) {
  const std::uint64_t size = growth(extent, unit_);
  Slice* whole = nullptr;
  try {
    whole = add_page(size);
  } catch (const StorageExhausted&) {
    if (size == extent) {
      throw;
    }
    whole = add_page(extent); // The step was a wish; the request is the need.
  }
  held_ += whole->extent;
  return whole;
}

Slice* ArenaPool::add_reservation(VirtualMemory& memory, std::uint64_t size) {
  auto* page = new Page();
  try {
    page->handle = memory.reserve(size);
  } catch (...) {
    delete page;
    throw;
  }
  page->base = static_cast<std::byte*>(storage_.resolve(page->handle));
  page->size = size;
  page->reservation = true;
  page->mapped = 0;
  link_page(page);
  Slice* hole = cache_.take();
  hole->page = page;
  hole->offset = 0;
  hole->extent = size;
  hole->state = SliceState::Unmapped;
  page->first = hole;
  link_unmapped(hole);
  return hole;
}

void ArenaPool::link_unmapped(Slice* hole) noexcept {
  Page* page = hole->page;
  Slice* before = nullptr;
  Slice* after = page->unmapped;
  while (after != nullptr && after->offset < hole->offset) {
    before = after;
    after = after->bin_next;
  }
  hole->bin_prev = before;
  hole->bin_next = after;
  if (before != nullptr) {
    before->bin_next = hole;
  } else {
    page->unmapped = hole;
  }
  if (after != nullptr) {
    after->bin_prev = hole;
  }
}

void ArenaPool::unlink_unmapped(Slice* hole) noexcept {
  if (hole->bin_prev != nullptr) {
    hole->bin_prev->bin_next = hole->bin_next;
  } else {
    hole->page->unmapped = hole->bin_next;
  }
  if (hole->bin_next != nullptr) {
    hole->bin_next->bin_prev = hole->bin_prev;
  }
  hole->bin_prev = nullptr;
  hole->bin_next = nullptr;
}

Slice* ArenaPool::growth_site(std::uint64_t extent, std::uint64_t granule,
                              std::uint64_t& need) const noexcept {
  // The unmapped range whose mapping makes room for `extent` with the least
  // new memory: free bytes just before it count, and a hole mapped whole
  // joins the free bytes after it too. Cold path: a walk over the unmapped
  // lists.
  Slice* hole = nullptr;
  for (Page* page = pages_; page != nullptr; page = page->next) {
    if (grow_far_ && page != far_page_) {
      continue; // A set-apart block grows only the far reservation.
    }
    for (Slice* slice = page->unmapped; slice != nullptr; slice = slice->bin_next) {
      const Slice* left = slice->page_prev;
      const Slice* right = slice->page_next;
      const std::uint64_t before =
          left != nullptr && left->state == SliceState::Free ? left->extent : 0;
      const std::uint64_t after =
          right != nullptr && right->state == SliceState::Free ? right->extent : 0;
      std::uint64_t wanted = 0;
      if (before + slice->extent >= extent) {
        wanted = round_up(extent - before, granule);
      } else if (before + slice->extent + after >= extent) {
        wanted = slice->extent;
      } else {
        continue;
      }
      // Least new memory; on a tie, not the far reservation (it is kept for
      // the blocks set apart and the requests their holes serve).
      if (hole == nullptr || wanted < need ||
          (wanted == need && hole->page == far_page_ && page != far_page_)) {
        hole = slice;
        need = wanted;
      }
    }
  }
  return hole;
}

Slice* ArenaPool::grow_mapped(VirtualMemory& memory, std::uint64_t extent) {
  const std::uint64_t granule = memory.granularity();
  if (grow_far_ && far_page_ == nullptr) {
    // The first set-apart block: its own reservation, so its hole borders
    // unmapped space. Nothing is mapped yet; release_free_pages gives an
    // empty one back.
    far_page_ = add_reservation(memory, round_up(address_space_, granule))->page;
  }
  std::uint64_t need = 0;
  Slice* hole = growth_site(extent, granule, need);
  bool created = false;
  if (hole == nullptr) {
    hole = add_reservation(memory,
                           max_of(round_up(address_space_, granule), round_up(extent, granule)));
    need = round_up(extent, granule);
    created = true;
  }
  Page* page = hole->page;
  std::uint64_t amount =
      need == hole->extent ? need : std::min(hole->extent, growth(need, granule));
  StorageHandle chunk;
  try {
    page->chunks.reserve(page->chunks.size() + 1);
    try {
      chunk = memory.map(page->handle, hole->offset, amount);
    } catch (const StorageExhausted&) {
      if (amount == need) {
        throw;
      }
      amount = need; // The step was a wish; the request is the need.
      chunk = memory.map(page->handle, hole->offset, amount);
    }
  } catch (...) {
    if (created) {
      unlink_page(page);
      unlink_unmapped(hole);
      cache_.give(hole);
      memory.unreserve(page->handle, page->size);
      delete page;
    }
    throw;
  }
  const auto at = std::upper_bound(
      page->chunks.begin(), page->chunks.end(), hole->offset,
      [](std::uint64_t offset, const MappedChunk& each) { return offset < each.offset; });
  page->chunks.insert(at, MappedChunk{hole->offset, amount, chunk});
  page->mapped += amount;
  held_ += amount;
  stats_.reserved += amount;
  stats_.pages += 1;
  stats_.peak_reserved = max_of(stats_.peak_reserved, stats_.reserved);

  Slice* fresh = hole;
  if (amount == hole->extent) {
    unlink_unmapped(hole);
    hole->state = SliceState::Free;
  } else { // The hole keeps its place in the unmapped list: its order holds.
    fresh = cache_.take();
    fresh->page = page;
    fresh->offset = hole->offset;
    fresh->extent = amount;
    fresh->page_prev = hole->page_prev;
    fresh->page_next = hole;
    if (hole->page_prev != nullptr) {
      hole->page_prev->page_next = fresh;
    } else {
      page->first = fresh;
    }
    hole->page_prev = fresh;
    hole->offset += amount;
    hole->extent -= amount;
  }
  return merge(fresh);
}

void ArenaPool::carve_unmapped(Slice* slice, std::uint64_t offset, std::uint64_t size) noexcept {
  bins_of(slice).remove(slice);
  const std::uint64_t end = slice->offset + slice->extent;
  Slice* hole = slice;
  if (offset != slice->offset) {
    hole = cache_.take();
    hole->page = slice->page;
    hole->page_prev = slice;
    hole->page_next = slice->page_next;
    if (slice->page_next != nullptr) {
      slice->page_next->page_prev = hole;
    }
    slice->page_next = hole;
    slice->extent = offset - slice->offset;
    bins_of(slice).insert(slice);
  }
  hole->offset = offset;
  hole->extent = size;
  hole->state = SliceState::Unmapped;
  link_unmapped(hole);
  if (offset + size < end) {
    Slice* rest = cache_.take();
    rest->page = hole->page;
    rest->offset = offset + size;
    rest->extent = end - (offset + size);
    rest->page_prev = hole;
    rest->page_next = hole->page_next;
    if (hole->page_next != nullptr) {
      hole->page_next->page_prev = rest;
    }
    hole->page_next = rest;
    bins_of(rest).insert(rest);
  }
  if (Slice* left = hole->page_prev; left != nullptr && left->state == SliceState::Unmapped) {
    unlink_unmapped(hole);
    absorb(left, hole);
    hole = left;
  }
  if (Slice* right = hole->page_next; right != nullptr && right->state == SliceState::Unmapped) {
    unlink_unmapped(right);
    absorb(hole, right);
  }
}

void ArenaPool::unmap_free_chunks(Page* page, Released& released) noexcept {
  Slice* slice = page->first;
  for (std::size_t at = 0; at < page->chunks.size();) {
    const MappedChunk chunk = page->chunks[at];
    while (slice != nullptr && slice->offset + slice->extent <= chunk.offset) {
      slice = slice->page_next;
    }
    if (slice == nullptr || slice->state != SliceState::Free ||
        chunk.offset + chunk.size > slice->offset + slice->extent) {
      ++at;
      continue;
    }
    Slice* before = slice->page_prev;
    carve_unmapped(slice, chunk.offset, chunk.size);
    memory_->unmap(page->handle, chunk.offset, chunk.size, chunk.handle);
    page->chunks.erase(page->chunks.begin() + static_cast<std::ptrdiff_t>(at));
    page->mapped -= chunk.size;
    held_ -= chunk.size;
    stats_.reserved -= chunk.size;
    stats_.pages -= 1;
    released.bytes += chunk.size;
    released.blocks += 1;
    // Resume the walk just before the carved range.
    slice = before != nullptr ? before : page->first;
  }
}

std::size_t ArenaPool::mapped_chunks() const noexcept {
  std::size_t chunks = 0;
  for (const Page* page = pages_; page != nullptr; page = page->next) {
    chunks += page->chunks.size();
  }
  return chunks;
}

void ArenaPool::give_back_free_chunks() {
  // Before anything changes: carving may split (two records a chunk), and
  // the growth and split that follow need their spares still.
  cache_.ensure(2 * mapped_chunks() + spares_for_reserve());
  Released released;
  for (Page* page = pages_; page != nullptr; page = page->next) {
    if (page->reservation) {
      unmap_free_chunks(page, released);
    }
  }
}

Released ArenaPool::release_free_pages() {
  consolidate();
  cache_.ensure(2 * mapped_chunks()); // Before anything changes: carving may split.
  Released released = drop_free_pages();
  for (Page* page = pages_; page != nullptr;) {
    Page* next = page->next;
    if (page->reservation) {
      unmap_free_chunks(page, released);
      if (page->chunks.empty()) {
        // Only address space left: one Unmapped slice. Give it back.
        unlink_unmapped(page->first);
        cache_.give(page->first);
        unlink_page(page);
        free_page(page);
      }
    }
    page = next;
  }
  return released;
}

void ArenaPool::release_all_pages() noexcept {
  blame_.reset();
  live_ = 0; // Bound slices were tombstoned: release() never sees them.
  // Every slice goes back to the cache with its page: the lists go too.
  for (Page* page = pages_; page != nullptr; page = page->next) {
    page->unmapped = nullptr;
  }
  SlicedPool::release_all_pages();
}

void ArenaPool::free_page(Page* page) noexcept {
  if (page == far_page_) {
    far_page_ = nullptr;
  }
  blame_.forget_vacated(); // They may name this page.
  held_ -= page->mapped;
  if (!page->reservation) {
    Pool::free_page(page);
    return;
  }
  for (const MappedChunk& chunk : page->chunks) {
    memory_->unmap(page->handle, chunk.offset, chunk.size, chunk.handle);
  }
  memory_->unreserve(page->handle, page->size);
  stats_.reserved -= page->mapped;
  stats_.pages -= page->chunks.size();
  delete page;
}

void ArenaPool::check_invariants(MemoryStats& seen) const {
  SlicedPool::check_invariants(seen);
  std::uint64_t bound = 0;
  for (const Page* page = pages_; page != nullptr; page = page->next) {
    for (const Slice* slice = page->first; slice != nullptr; slice = slice->page_next) {
      bound += slice->state == SliceState::Bound ? 1 : 0;
    }
  }
  if (bound != live_) {
    layout_violation("the arena counts " + std::to_string(live_) + " slices handed out but " +
                     std::to_string(bound) + " are bound");
  }
  std::uint64_t held = 0;
  bool far_listed = far_page_ == nullptr;
  for (const Page* page = pages_; page != nullptr; page = page->next) {
    held += page->mapped;
    far_listed = far_listed || (page == far_page_ && page->reservation);
    // The unmapped list holds exactly the page's Unmapped slices, by offset.
    const Slice* listed = page->unmapped;
    const Slice* previous_listed = nullptr;
    for (const Slice* slice = page->first; slice != nullptr; slice = slice->page_next) {
      if (slice->state != SliceState::Unmapped) {
        continue;
      }
      if (listed != slice || slice->bin_prev != previous_listed) {
        layout_violation("an unmapped slice at offset " + std::to_string(slice->offset) +
                         " is not in its page's unmapped list in address order");
      }
      previous_listed = listed;
      listed = listed->bin_next;
    }
    if (listed != nullptr) {
      layout_violation("a page's unmapped list names a slice that is not unmapped");
    }
    if (!page->reservation) {
      continue;
    }
    if (memory_ == nullptr) {
      layout_violation("a reservation in an arena whose storage has no virtual memory");
    }
    const std::uint64_t granule = memory_->granularity();
    // The mapped chunks, in order, cover exactly the slices that are not
    // Unmapped: walk both in address order.
    std::uint64_t sum = 0;
    std::uint64_t end = 0;
    for (const MappedChunk& chunk : page->chunks) {
      if (chunk.size == 0 || chunk.offset < end || chunk.offset % granule != 0 ||
          chunk.size % granule != 0 || chunk.size > page->size - chunk.offset || !chunk.handle) {
        layout_violation("a reservation's chunks are not sorted, disjoint, granular and inside it");
      }
      end = chunk.offset + chunk.size;
      sum += chunk.size;
    }
    if (sum != page->mapped) {
      layout_violation("a reservation's chunks add up to " + std::to_string(sum) + " bytes, not " +
                       std::to_string(page->mapped));
    }
    std::size_t next_chunk = 0;
    std::uint64_t covered_to = 0; // End of the run of chunks that covers what we walked.
    for (const Slice* slice = page->first; slice != nullptr; slice = slice->page_next) {
      const std::uint64_t slice_end = slice->offset + slice->extent;
      if (slice->state == SliceState::Unmapped) {
        if (slice->offset % granule != 0 || slice->extent % granule != 0) {
          layout_violation("an unmapped slice is not granule-aligned");
        }
        if (covered_to > slice->offset ||
            (next_chunk < page->chunks.size() && page->chunks[next_chunk].offset < slice_end)) {
          layout_violation("a mapped chunk overlaps an unmapped slice");
        }
        continue;
      }
      while (covered_to < slice_end) {
        if (next_chunk == page->chunks.size() ||
            page->chunks[next_chunk].offset !=
                (covered_to > slice->offset ? covered_to : slice->offset)) {
          layout_violation("bytes of a slice at offset " + std::to_string(slice->offset) +
                           " have no memory mapped behind them");
        }
        covered_to = page->chunks[next_chunk].offset + page->chunks[next_chunk].size;
        ++next_chunk;
      }
    }
    if (next_chunk != page->chunks.size()) {
      layout_violation("a mapped chunk lies under no slice");
    }
  }
  if (!far_listed) {
    layout_violation("the arena's far reservation is not one of its reservations");
  }
  if (held != held_) {
    layout_violation("the arena counts " + std::to_string(held_) + " bytes held, its pages " +
                     std::to_string(held));
  }
}

} // namespace taintpool::detail
