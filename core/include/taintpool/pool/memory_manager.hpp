// MemoryManager: device memory with taint on every slice (§3.4, P1–P3).
//
// The manager owns the pools of one storage, hands out Allocations, and keeps
// each allocation's Taint on the slice that holds it. It is the only place
// slices are bound and unbound, so it is the only place the P1 clear points
// live:
//   * an allocation's slice is cleared when the manager discovers its last
//     handle gone (the allocation has ended for good) — at the start of the
//     next call, or at sweep();
//   * on bind, a reused slice starts clean; a split's remainder and a merged
//     slice start clean;
//   * reset() and the destructor tombstone every live allocation — its taint
//     is cleared and its handles, which may live on, see NotFound — and give
//     every page back.
// So with every handle dropped and sweep() called, no slice carries a claim
// and the ErrorGraph holds only what something else keeps alive (R4).
//
// Routing: MemoryConfig's ladder of sliced pools, then the arena (best fit
// over every free range; it grows, by mapping more of a reserved address
// range where the storage has virtual memory), then BufferTooBig. Reserve
// is O(1) with no scan and no heap allocation in steady state (size bins
// with bitmaps; recycled slice records; an open-addressing table from
// allocation id to slice), and a warm manager makes no storage call.
//
// Lanes (P4, lane-ordered reuse): allocate(size, lane) serves the request
// from that lane's own pools. Lanes share the storage, the allocation
// table, the stats and the graph, but not free memory: memory an
// allocation of lane L released is reused only by allocations of lane L,
// until it goes back to storage (cleanup(), or the out-of-memory path,
// which gives back every lane's free memory). A stream-ordered runtime maps
// a stream to a lane, so memory freed in one stream's order is never handed
// to another stream that might touch it before the free has happened.
// Lanes are made on first use, at most max_lanes of them.
//
// Errors (P3): a size no pool can hold throws Exception(BufferTooBig); a
// storage failure — after giving back every lane's free memory and retrying
// once — throws Exception(OutOfMemory) with requested, in use, reserved,
// largest free block and what was given back; a lane past max_lanes is
// std::invalid_argument; a binding to an allocation that is gone is
// NotFound, past its end InvalidBinding, and one another manager minted
// InvalidBinding naming both. Nothing changes when they throw.
//
// Ids: each manager mints its AllocationIds in an id space of its own
// (failure_id.hpp), taken when it is built and handed back when it goes, so
// a binding of another manager's allocation never resolves here: the lookup
// misses as for any unknown id, and the error path tells the two apart.
//
// Observing (allocation_observer.hpp): with MemoryConfig::observer set, the
// observer is told of every page the pools take or give back and of every
// allocation bound and ended, so a tool such as compute-sanitizer can see
// the pool's allocations (cuda::NvtxRegions). Without one, nothing changes.
//
// Threading: one thread (or one lock) drives a manager; handles may be
// copied and dropped on any thread. Every non-const call first discovers
// released allocations.
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/detail/id_table.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/pool/allocation.hpp>
#include <taintpool/pool/detail/slice.hpp>
#include <taintpool/pool/memory_config.hpp>
#include <taintpool/pool/memory_stats.hpp>
#include <taintpool/pool/observed_storage.hpp>
#include <taintpool/pool/storage.hpp>
#include <taintpool/taint.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace taintpool {

namespace detail {
struct ReleaseInbox;
class SliceCache;
class Pool;
struct Released;

/// The id table's node: a live allocation and the slice holding it.
struct LiveAllocation {
  std::uint64_t id = 0;
  Slice* slice = nullptr;

  LiveAllocation() noexcept = default;
  LiveAllocation(std::uint64_t allocation, Slice* holder) noexcept
      : id(allocation)
      , slice(holder) {}
  LiveAllocation(LiveAllocation&& other) noexcept
      : id(std::exchange(other.id, 0))
      , slice(std::exchange(other.slice, nullptr)) {}
  LiveAllocation& operator=(LiveAllocation&& other) noexcept {
    id = std::exchange(other.id, 0);
    slice = std::exchange(other.slice, nullptr);
    return *this;
  }
  LiveAllocation(const LiveAllocation&) = delete; ///< Move-only, like the table's slots.
  LiveAllocation& operator=(const LiveAllocation&) = delete;
  ~LiveAllocation() = default;
  void vacate() noexcept {
    id = 0;
    slice = nullptr;
  }
};
} // namespace detail

/// The memory a binding names, checked: where its bytes are and the taint of
/// its allocation. Valid until the next call to the manager.
struct BoundBytes {
  AllocationId allocation;
  ByteRange range;    ///< Allocation-relative, within its size.
  std::byte* data;    ///< The allocation's byte 0 (storage address space).
  std::uint64_t size; ///< The allocation's size.
  Taint* taint;       ///< The allocation's taint.
  std::uint32_t pool; ///< Which pool holds it (ladder index; the arena is last).
  std::uint32_t lane; ///< The lane it was allocated on (P4).
};

/// One live allocation, for tests, fuzzers and diagnostics.
struct AllocationInfo {
  AllocationId id;
  std::uint64_t size;    ///< Requested bytes.
  std::uint64_t extent;  ///< Bytes of page it occupies (size + padding).
  const std::byte* data; ///< Its address.
  std::uint32_t pool;    ///< Ladder index; the arena is last.
  std::uint32_t lane;    ///< The lane it was allocated on (P4).
  const Taint* taint;    ///< Its stale bytes; valid until the next non-const call.
};

/// The pools of one storage and the taint of every allocation in them (see
/// above). Not copyable or movable: handles and the inbox point into it.
class MemoryManager {
 public:
  /// Lanes a manager serves: 0 .. max_lanes - 1.
  static constexpr std::uint32_t max_lanes = 64;

  /// Throws std::invalid_argument if the config does not fit the storage.
  /// `storage` and `graph` must outlive the manager. No page is taken yet.
  MemoryManager(Storage& storage, ErrorGraph& graph, MemoryConfig config = {});
  /// Tombstones every live allocation and gives every page back (P1).
  ~MemoryManager();
  MemoryManager(const MemoryManager&) = delete;
  MemoryManager& operator=(const MemoryManager&) = delete;

  /// Reserve-then-bind: a fresh AllocationId on a clean slice of at least
  /// `size` bytes, aligned to config().alignment, from `lane`'s pools (P4;
  /// the lane's pools are made on its first use). Size 0 is valid (P3).
  /// Under FreshBytes::NeverWritten its bytes come back claimed by the
  /// manager's NeverWritten failure (N1; minted if none lives), inline (T6);
  /// size 0 carries nothing.
  /// Throws std::invalid_argument for a lane >= max_lanes,
  /// Exception(BufferTooBig) above max_allocation and
  /// Exception(OutOfMemory) when storage refuses even after every lane's
  /// free memory is given back; nothing changes then. O(1),
  /// allocation-free and storage-call-free once warm.
  [[nodiscard]] Allocation allocate(std::uint64_t size, std::uint32_t lane = 0);

  /// A new handle to a live allocation that still has one (one atomic
  /// compare-and-swap): how a Device pins an allocation a stream is still
  /// using. Empty when its last handle is already gone (its end is only
  /// waiting to be discovered) — it cannot be revived. Throws NotFound for
  /// an allocation that no longer exists.
  [[nodiscard]] Allocation share(AllocationId allocation);

  /// T1 on the binding's bytes. Throws Exception(NotFound/InvalidBinding)
  /// for a bad binding, std::logic_error for a dead failure; nothing changes.
  void taint(const Binding& binding, FailureId failure);
  /// T2 on the binding's bytes. Throws as taint() does for a bad binding.
  void written(const Binding& binding);
  /// T3 on the binding's bytes. Throws as taint() does for a bad binding.
  [[nodiscard]] std::optional<FailureId> failure(const Binding& binding);
  /// T3, all of them (Taint::failures): allocates the result.
  [[nodiscard]] std::vector<FailureId> failures(const Binding& binding);

  /// Checks the binding and returns its bytes and taint (P3): NotFound or
  /// InvalidBinding otherwise. One table lookup, no allocation.
  [[nodiscard]] BoundBytes resolve(const Binding& binding);

  /// resolve() without discovering releases first, so the results of several
  /// calls stay valid together (a launch resolves all its bindings, then
  /// works on them). Call sweep() once before a batch of these.
  [[nodiscard]] BoundBytes resolve_swept(const Binding& binding) {
    detail::Slice& slice = lookup_swept(binding);
    return BoundBytes{binding.allocation, binding.range, slice.page->base + slice.offset,
                      slice.size,         &slice.taint,  slice.page->pool_index,
                      slice.page->lane};
  }

  /// Whether the allocation is live (not dropped-and-discovered, not reset).
  [[nodiscard]] bool contains(AllocationId allocation);

  /// Discovers every allocation whose last handle is gone: clears its taint
  /// (P1) and returns its slice to its pool.
  void sweep() { discover_released(); }

  /// sweep(), then gives every lane's memory that holds no allocation back
  /// to storage: pages wholly free, and the arena's mapped chunks that lie
  /// wholly in free space.
  void cleanup();

  /// Ends every live allocation now — for a device whose memory is lost
  /// (a poisoned CUDA context). Tombstones them (taint cleared, handles see
  /// NotFound) and gives every page back (P1). The allocation table is
  /// emptied in place: it keeps its slots, as restart() does. Why: a
  /// manager whose device is lost keeps 16 bytes a slot (2 to 4 slots for
  /// each allocation it held at its peak), while one that resets and goes on
  /// serving — a runtime after a lost context, a fuzzer whose inputs reset
  /// it — would otherwise grow the table again, slot doubling by doubling,
  /// after every reset (and pool_fuzzer's balance test saw each input after
  /// a reset keep a block: fuzz/ROUNDS.md, rounds 54 and 55).
  void reset();

  /// What MemoryManager(storage(), graph(), config()) would be if this one
  /// were destroyed and it built in its place, without freeing what the
  /// manager allocated for itself: every live allocation is ended as
  /// reset() ends it and every page given back; every lane is closed (as
  /// in a fresh manager, lane_count() is 0 and a lane opens on its first
  /// allocation); every figure and peak is 0; the NeverWritten claim is
  /// forgotten; and the id space is handed back and taken again — the
  /// lowest free one, as a new manager takes — so the next id is that
  /// space's first, exactly as a fresh manager's. Kept: the release inbox,
  /// the slice records (spares), the allocation table's slots, the lane
  /// list, and each closed lane's pools, emptied as reset() empties them
  /// (no page, empty free indexes and recent lists, the arena's learned
  /// holes and growth forgotten: what reset() already relies on to keep
  /// serving), handed back when the lane opens again. Why: a fuzzer that
  /// built a manager per input paid a third of its heap allocations for it,
  /// most of them the lanes' pools (issue 13, twenty-second round).
  /// Handles from before still see NotFound (their slices stay tombstoned
  /// until they go, as after reset()); like a destroyed manager's, an old
  /// handle's id may name a new allocation once the space is taken again.
  /// Call it with the graph the manager tags still alive; clearing the
  /// graph too (ErrorGraph::clear) is the caller's choice. Never throws.
  void restart() noexcept;

  /// Exact figures (P2). Discovers releases first and merges any free space
  /// a pool parks unmerged, so largest_free_block is what merging gives.
  [[nodiscard]] MemoryStats stats();

  /// The allocation if it is live (or dropped but not yet discovered), else
  /// nullopt. Does not sweep; one table lookup.
  [[nodiscard]] std::optional<AllocationInfo> info(AllocationId allocation) const {
    const detail::LiveAllocation* entry = live_.find(allocation.raw());
    if (entry == nullptr) {
      return std::nullopt;
    }
    return describe(entry->slice);
  }

  /// Visits every live allocation, in no particular order. Does not sweep.
  template <class Fn>
  void for_each_allocation(Fn&& fn) const {
    live_.for_each([&](const detail::LiveAllocation& entry) { fn(describe(entry.slice)); });
  }

  /// Every slice's taint that holds a claim: the carriers for
  /// check_refcounts (R1). Does not sweep.
  [[nodiscard]] std::vector<const Taint*> carriers() const;
  /// The same carriers, into `into` (cleared first): a caller that checks
  /// often keeps one list, so a warm check allocates nothing — a list per
  /// full check was about 3% of the pool fuzzer's time (issue 13,
  /// thirtieth round).
  void carriers(std::vector<const Taint*>& into) const;

  /// N1: the failure that claims this manager's never-written bytes, while
  /// some allocation carries it; always nullopt under FreshBytes::Trusted.
  [[nodiscard, gnu::always_inline]] std::optional<FailureId>
  never_written_failure() const noexcept {
    return never_written_.failure(graph_);
  }

  /// The validated configuration.
  [[nodiscard]] const MemoryConfig& config() const noexcept { return config_; }
  /// The storage pages come from (the caller's, not the ObservedStorage
  /// the manager puts in front of it when config().observer is set).
  [[nodiscard]] Storage& storage() const noexcept { return storage_; }
  /// The graph every slice's taint tags (R1).
  [[nodiscard]] ErrorGraph& graph() const noexcept { return graph_; }
  /// Number of pools per lane: the sliced ladder, then the arena.
  [[nodiscard]] std::size_t pool_count() const noexcept { return config_.sliced.size() + 1; }
  /// Lanes made so far (a lane is made on its first allocation).
  [[nodiscard]] std::uint32_t lane_count() const noexcept;
  /// The id space this manager mints in (allocation_space of its ids): one
  /// no other live manager holds, the lowest free when it was built.
  [[nodiscard]] std::uint32_t id_space() const noexcept { return space_; }

  /// P1 and P2 from scratch: pages tiled exactly, every live allocation
  /// aligned and within its slice and in the id table, free slices clean,
  /// filed and (sliced pools) coalesced, tombstoned slices clean, every
  /// taint well-shaped, and the maintained stats equal to a recount. Does
  /// not sweep. Throws std::logic_error naming the first violation.
  void check_invariants() const;

 private:
  void discover_released() {
    if (detail::Slice* released = take_released()) {
      end_allocations(released);
    }
  }
  /// Inline: every launch asks, and the answer is almost always "none" (one
  /// relaxed load); a call here was a frame and a code line per launch.
  [[nodiscard]] detail::Slice* take_released() noexcept { return inbox_->take_all(); }
  /// Ends the released allocations (P1) and returns their slices to their
  /// pools. With erase_later, up to erase_later_capacity of their table
  /// entries are left for erase_ended(), which the caller must call before
  /// it returns (allocate does, on every path).
  void end_allocations(detail::Slice* released, bool erase_later = false) noexcept;
  /// Erases the table entries end_allocations left.
  void erase_ended() noexcept;
  [[nodiscard]] detail::Slice& lookup(const Binding& binding) {
    discover_released();
    return lookup_swept(binding);
  }
  [[nodiscard]] detail::Slice& lookup_swept(const Binding& binding) {
    detail::LiveAllocation* entry = live_.find(binding.allocation.raw());
    if (entry == nullptr || binding.range.end() > entry->slice->size) [[unlikely]] {
      throw_bad_binding(binding);
    }
    return *entry->slice;
  }
  [[noreturn]] void throw_bad_binding(const Binding& binding) const;
  [[noreturn]] void throw_ids_exhausted() const;
  [[noreturn]] void throw_too_big(std::uint64_t size) const;
  [[nodiscard]] std::uint32_t route(std::uint64_t size) const noexcept;
  /// The lane's pools, made on first use (cold; throws for a lane past
  /// max_lanes, or std::bad_alloc).
  [[nodiscard]] std::vector<std::unique_ptr<detail::Pool>>& open_lane(std::uint32_t lane);
  /// Called from the handler of a failed pool.reserve(extent): out of
  /// memory (StorageExhausted) gives every lane's free memory back and
  /// tries once more; what still fails becomes OutOfMemory. Cold.
  [[nodiscard]] detail::Slice* reserve_again_or_throw(detail::Pool& pool, std::uint64_t size,
                                                      std::uint64_t extent);
  /// Every lane's free memory back to storage; what went.
  [[nodiscard]] detail::Released release_free_memory();
  template <class Fn>
  void for_each_pool(Fn&& fn) const {
    for (const auto& lane : lanes_) {
      for (const auto& pool : lane) {
        fn(*pool);
      }
    }
  }
  /// Ends every live allocation (P1) onto the tombstone list and empties
  /// the table, keeping its slots.
  void tombstone_all() noexcept;
  /// Sweeps, tombstones every live allocation and gives every lane's pages
  /// back: what reset() and restart() share.
  void end_all_and_give_back_pages() noexcept;
  [[nodiscard]] static AllocationInfo describe(const detail::Slice* slice) noexcept;
  [[noreturn]] static void throw_not_found(AllocationId allocation);
  [[noreturn]] void throw_out_of_memory(std::uint64_t size, std::string_view cause,
                                        const detail::Released& released);

  Storage& storage_;
  ErrorGraph& graph_;
  MemoryConfig config_;
  /// config_.observer, or null (allocation_observer.hpp): tested once per
  /// bind and once per end, nothing else when null.
  AllocationObserver* observer_ = nullptr;
  /// What the pools take pages from: storage_ itself, or, with an
  /// observer, an ObservedStorage around it that reports every page.
  std::unique_ptr<ObservedStorage> observed_;
  detail::ReleaseInbox* inbox_ = nullptr;
  std::unique_ptr<detail::SliceCache> cache_;
  /// lanes_[lane]: the lane's pools (the ladder, then the arena); empty until
  /// the lane's first allocation.
  std::vector<std::vector<std::unique_ptr<detail::Pool>>> lanes_;
  /// closed_lanes_[lane]: the pools of a lane restart() closed, emptied,
  /// until open_lane takes them back (a fresh build's equal, without its
  /// allocations). An array, so closing a lane is a swap that cannot throw.
  std::array<std::vector<std::unique_ptr<detail::Pool>>, max_lanes> closed_lanes_;
  detail::IdTable<detail::LiveAllocation> live_;
  detail::Slice* tombstoned_ = nullptr; ///< Ended while handles remain; linked via bin links.
  /// Ids of allocations ended by this allocate() whose table entries it
  /// erases on its way out (end_allocations, erase_ended).
  static constexpr std::size_t erase_later_capacity = 8;
  /// How far ahead end_allocations fetches along a list of ended
  /// allocations: enough misses in flight to hide most of their latency.
  static constexpr std::uint32_t released_lookahead = 4;
  std::array<std::uint64_t, erase_later_capacity> erase_later_{};
  std::uint32_t erase_later_count_ = 0;
  MemoryStats stats_;
  NeverWrittenClaim never_written_;   ///< N1: the NeverWritten node (FreshBytes::NeverWritten).
  std::uint32_t space_ = 0;           ///< The id space (see above); handed back by the destructor.
  std::uint64_t next_allocation_ = 1; ///< Raw: the space in the top bits, then the number.
};

} // namespace taintpool
