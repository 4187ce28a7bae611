// Slice, Page and ReleaseInbox: the records a MemoryManager keeps. Internal:
// public only so the manager's binding lookup can be inline on the launch
// path; nothing outside taintpool should name these.
//
// A Page is one block from storage: a page of memory, or a reservation of
// address space (virtual_memory.hpp) parts of which are backed by mapped
// chunks. Slices tile it exactly — offsets run from 0 with no gap, extents
// sum to the page size (P2) — and each slice is Free, Recent, Bound to one
// allocation, Unmapped (address space of a reservation with no memory
// behind it), or Tombstoned (its allocation was ended by the manager while
// handles still pointed at it, and its page is gone).
//
// A Slice outlives many allocations: it is the record a handle points at, so
// it is where the handle count lives, and it is recycled rather than freed
// when splits and merges come and go (SliceCache), so the steady state
// allocates nothing.
//
// Records live in slabs (SliceSlab): arrays of records carved once and never
// freed before the last record of the manager is gone. A record on its own
// from operator new costs 256 bytes of address space for its 128 (glibc's
// aligned allocation), so slabs halve the footprint of the records — with
// 10^5 live allocations that is what decides how many of them the caches
// and the TLB hold (issue 12: flat cost in the number of live allocations).
// The slabs belong to the ReleaseInbox, which every record already keeps
// alive, so a record a stray handle holds after its manager is gone still
// has memory under it.
//
// Threading: `refs` and `next_released` are touched by whichever thread
// drops a handle; everything else only by the manager's thread. The two
// meet in ReleaseInbox, a lock-free stack: a handle that leaves only the
// manager's own reference pushes the slice; the manager takes the whole
// stack at the start of its next call. Push-only plus take-all has no ABA
// problem, so a plain CAS loop suffices.
#pragma once

#include <taintpool/pool/storage.hpp>
#include <taintpool/taint.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace taintpool::detail {

struct Page;
struct ReleaseInbox;
struct SliceSlab;
class Pool;

/// Where a slice record is in its life. Leaving Bound is a P1 clear point.
enum class SliceState : std::uint8_t {
  Free,       ///< In its pool's free index (SizeBins), merged with free neighbours.
  Recent,     ///< Freed moments ago and parked unmerged for exact-size reuse (SlicedPool).
  Bound,      ///< Holds a live allocation.
  Tombstoned, ///< Its allocation was ended while handles remained; its page is gone.
  Unmapped    ///< Reserved address space with no memory behind it (ArenaPool); always clean.
};

/// One region of a page, and the record every handle to its allocation
/// points at (see above).
///
/// Layout: two cache lines, and what each path touches is in one of them.
/// The first holds what the manager's walks read — neighbours, free-index
/// links, extent, state — so merging with a neighbour or unlinking one from
/// a bin touches one line of it. The second holds the allocation — handle
/// count, inbox link, id, size, taint — which a dropped handle has just
/// touched when the manager discovers the release. With 10^5 live
/// allocations every record is a cache miss, so lines touched per operation
/// is what the pool's cost is made of (issue 12: flat cost in the number of
/// live allocations).
struct alignas(64) Slice {
  /// Free, with no page; retains `owner_inbox` for as long as it exists.
  explicit Slice(ReleaseInbox& owner_inbox) noexcept;
  /// The taint must be clean (Taint's destructor aborts otherwise). Records
  /// are made in slabs and ended by destroy(), never by delete: it releases
  /// the inbox after this destructor, since that may free the slab.
  ~Slice();
  Slice(const Slice&) = delete;
  Slice& operator=(const Slice&) = delete;

  // Line 1: the manager's thread only.
  Slice* page_prev = nullptr; ///< Address order within the page; tombstone list after.
  Slice* page_next = nullptr;
  Slice* bin_prev =
      nullptr; ///< Free-index list while Free; the page's unmapped list while Unmapped.
  Slice* bin_next = nullptr;
  Page* page = nullptr;     ///< Null once Tombstoned and its page is gone.
  std::uint64_t offset = 0; ///< From the page's base.
  std::uint64_t extent = 0; ///< Bytes of the page this slice covers: size + padding.
  std::uint32_t bin = 0; ///< Free-index bin, while Free; the arena's request context while Bound.
  SliceState state = SliceState::Free;

  // Line 2: shared with handles, on any thread (refs, next_released, inbox);
  // the rest the manager's thread only.
  alignas(64) std::atomic<std::uint64_t> refs{
      1};                         ///< The manager's own reference, plus one per handle.
  Slice* next_released = nullptr; ///< Link in the inbox; written by the pusher before its CAS.
  ReleaseInbox* inbox;            ///< Outlives the slice (it is refcounted by slices).
  std::uint64_t size = 0;         ///< Bytes the bound allocation asked for.
  std::uint64_t allocation = 0;   ///< Raw AllocationId while Bound (or Tombstoned), else 0.
  Taint taint;                    ///< The bound allocation's stale bytes (allocation-relative).
};

/// One mapped chunk of a reservation: what VirtualMemory::map gave.
struct MappedChunk {
  std::uint64_t offset = 0; ///< From the reservation's base.
  std::uint64_t size = 0;
  StorageHandle handle; ///< For unmap.
};

/// One block from storage, tiled exactly by its slices (P2).
struct Page {
  StorageHandle handle;         ///< What the storage gave: a page, or a reservation.
  std::byte* base = nullptr;    ///< storage.resolve(handle).
  std::uint64_t size = 0;       ///< Bytes asked of the storage (a reservation's address space).
  Pool* pool = nullptr;         ///< The pool that owns it.
  std::uint32_t pool_index = 0; ///< The pool's place in its manager's ladder.
  std::uint32_t lane = 0;       ///< The lane whose pool owns it.
  Slice* first = nullptr;       ///< Lowest-offset slice.
  Page* prev = nullptr;         ///< The owning pool's list of pages.
  Page* next = nullptr;
  /// A reservation (true): only `chunks` hold memory, and Unmapped slices
  /// tile the rest. A page (false): all of it is memory.
  bool reservation = false;
  std::vector<MappedChunk> chunks; ///< A reservation's mapped chunks, by offset.
  std::uint64_t mapped = 0;        ///< Bytes of memory held: the chunks' sum, or `size`.
  /// A reservation's Unmapped slices by offset, linked through their bin
  /// links: growth looks only at these, not at every slice (with 10^5 live
  /// allocations a walk over all of them per growth cost 70% of the time).
  Slice* unmapped = nullptr;
};

static_assert(sizeof(Slice) == 128, "a slice record is two cache lines (see Slice)");

/// Ends a record made in a slab (SliceCache): runs its destructor, then
/// releases the inbox; the slab's memory goes with the inbox's last owner.
void destroy(Slice* slice) noexcept;

/// Where handles on any thread hand ended allocations to the manager's
/// thread: a lock-free, push-only stack (see above). It also owns the slabs
/// every record of its manager lives in, since it outlives them all.
struct ReleaseInbox {
  ReleaseInbox() noexcept = default;
  /// Frees the slabs: runs when the manager and every record are gone.
  ~ReleaseInbox();
  ReleaseInbox(const ReleaseInbox&) = delete;
  ReleaseInbox& operator=(const ReleaseInbox&) = delete;
  ReleaseInbox(ReleaseInbox&&) = delete;
  ReleaseInbox& operator=(ReleaseInbox&&) = delete;

  std::atomic<Slice*> head{nullptr}; ///< Newest pushed slice; linked via next_released.
  /// The manager's reference plus one per Slice object in existence, so the
  /// inbox outlives every slice a stray handle might still push.
  std::atomic<std::uint64_t> refs{1};
  /// Slabs of records, newest first (SliceCache adds them on the manager's
  /// thread; only the destructor, after every owner, frees them).
  SliceSlab* slabs = nullptr;

  /// Any thread: lock-free, one CAS in the uncontended case.
  void push(Slice* slice) noexcept {
    Slice* top = head.load(std::memory_order_relaxed);
    do {
      slice->next_released = top;
    } while (!head.compare_exchange_weak(top, slice, std::memory_order_release,
                                         std::memory_order_relaxed));
  }

  /// Every slice pushed since the last call, newest first.
  [[nodiscard]] Slice* take_all() noexcept {
    if (head.load(std::memory_order_relaxed) == nullptr) {
      return nullptr;
    }
    return head.exchange(nullptr, std::memory_order_acquire);
  }

  /// One more owner (a new Slice object).
  void retain() noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
  /// One owner fewer; the last deletes the inbox.
  void release() noexcept {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete this;
    }
  }
};

/// Spare Slice objects, so splits take one and merges give one back without
/// touching the heap once warmed up.
class SliceCache {
 public:
  explicit SliceCache(ReleaseInbox& inbox) noexcept
      : inbox_(inbox) {}
  ~SliceCache();
  SliceCache(const SliceCache&) = delete;
  SliceCache& operator=(const SliceCache&) = delete;

  /// Makes sure `count` spares exist, allocating the shortfall; the only
  /// step here that can throw, so callers do it before changing anything.
  void ensure(std::size_t count) {
    if (count_ < count) {
      grow(count);
    }
  }

  /// A clean Free slice with no page. ensure() must have provided it.
  [[nodiscard]] Slice* take() noexcept {
    Slice* slice = spares_;
    spares_ = slice->page_next;
    --count_;
    // The spares are a long LIFO of records merged away long ago, so the
    // next one is a cache miss: fetch it now, while this one is used.
    if (spares_ != nullptr) {
      __builtin_prefetch(spares_, 1);
    }
    slice->page_next = nullptr;
    return slice;
  }

  /// Back to the spares. The slice must be clean, hold only the manager's
  /// reference, and name no allocation (size and allocation 0): only its
  /// first cache line is written.
  void give(Slice* slice) noexcept {
    slice->page = nullptr;
    slice->offset = 0;
    slice->extent = 0;
    slice->page_prev = nullptr;
    slice->bin_prev = nullptr;
    slice->bin_next = nullptr;
    slice->bin = 0;
    slice->state = SliceState::Free;
    slice->page_next = spares_;
    spares_ = slice;
    ++count_;
  }

  /// Spare records on hand.
  [[nodiscard]] std::size_t spares() const noexcept { return count_; }

  /// Records in the smallest and the largest slab: slabs double from the
  /// first to the last size, so a small manager holds a few KiB of records
  /// and a large one adds 128 KiB at a time.
  static constexpr std::size_t first_slab = 32;
  static constexpr std::size_t largest_slab = 1024;

 private:
  /// Carves a new slab into spares (out of line: cold). Throws std::bad_alloc.
  void grow(std::size_t count);

  ReleaseInbox& inbox_;
  Slice* spares_ = nullptr; ///< Linked through page_next.
  std::size_t count_ = 0;
  std::size_t made_ = 0; ///< Records made in every slab so far.
};

} // namespace taintpool::detail
