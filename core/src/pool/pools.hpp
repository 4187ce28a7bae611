// Pool, SlicedPool, ExclusivePool: the two ways a MemoryManager carves
// storage pages into slices. Internal.
//
// Both hand out Free slices of an exact extent (reserve) and take Free,
// clean slices back (release); neither knows about allocations, handles or
// taint — the manager binds and unbinds, which keeps the P1 clear points in
// one place.
//
//   SlicedPool     many slices per page: reserve splits a free slice, release
//                  merges it with free neighbours. For buffers much smaller
//                  than a page.
//   ExclusivePool  one slice per page: reserve reuses a free page of about
//                  the right size or asks storage for a new one. Free pages
//                  age out: one still free after `release_after` reserves is
//                  given back, so a burst of big buffers does not pin memory
//                  forever. No scan: free pages wait in an oldest-first list
//                  and only its head is checked.
#pragma once

#include <taintpool/pool/detail/slice.hpp>
#include <taintpool/pool/memory_stats.hpp>
#include <taintpool/pool/storage.hpp>

#include <array>
#include <cstdint>

#include "size_bins.hpp"

namespace taintpool::detail {

class Pool {
 public:
  Pool(Storage& storage, SliceCache& cache, MemoryStats& stats, std::uint64_t unit) noexcept;
  virtual ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  /// A Free, clean slice of exactly `extent` bytes (a multiple of the unit),
  /// out of the free index. May ask storage for a page: throws
  /// StorageExhausted (or std::bad_alloc) with nothing changed.
  [[nodiscard]] virtual Slice* reserve(std::uint64_t extent) = 0;

  /// Takes back a slice whose allocation ended. It is Free and clean.
  virtual void release(Slice* slice) noexcept = 0;

  /// Gives every page that holds no allocation back to storage.
  virtual void release_free_pages() noexcept = 0;

  /// Merges whatever free space the pool keeps unmerged for speed, so the
  /// free index alone describes its free memory (before stats and checks
  /// that speak of the largest free block).
  virtual void consolidate() noexcept {}

  /// Gives every page back. Bound slices must have been tombstoned first;
  /// they are detached (page = null), free slices are recycled.
  virtual void release_all_pages() noexcept;

  /// The largest extent reserve could serve without a new page.
  [[nodiscard]] std::uint64_t largest_free() const noexcept { return bins_.largest(); }

  /// P2 for this pool's pages and free index; adds what it sees to `seen`
  /// (reserved bytes, pages) for the manager to compare with its stats.
  virtual void check_invariants(MemoryStats& seen) const;

  [[nodiscard]] std::uint64_t unit() const noexcept { return unit_; }

  /// This pool's place in the manager: the ladder index, the exclusive pool last.
  [[nodiscard]] std::uint32_t index() const noexcept { return index_; }
  void set_index(std::uint32_t index) noexcept { index_ = index; }
  /// The manager's lane this pool serves (its pages say so).
  [[nodiscard]] std::uint32_t lane() const noexcept { return lane_; }
  void set_lane(std::uint32_t lane) noexcept { lane_ = lane; }

 protected:
  /// A new page with one Free slice spanning it, filed in the free index.
  /// Needs one spare slice (callers ensure() it). Throws StorageExhausted.
  Slice* add_page(std::uint64_t size);
  /// The page's only slice is Free: unfile it, recycle it, free the page.
  void drop_page(Page* page) noexcept;

  Storage& storage_;
  SliceCache& cache_;
  MemoryStats& stats_;
  SizeBins bins_;
  std::uint64_t unit_;
  Page* pages_ = nullptr;
  std::uint32_t index_ = 0;
  std::uint32_t lane_ = 0;
};

/// Why the recent list: GPU programs allocate the same shapes iteration
/// after iteration, so the common reserve asks for exactly the extent just
/// released. Merging that slice into its neighbours and splitting it out
/// again costs two bin removals, two insertions and a record swap per pair
/// for nothing. A released slice therefore waits, unmerged, in a short list
/// (the newest kept_recent); a reserve of exactly its extent takes it back
/// with no index work at all. The oldest is merged when the list is full,
/// the whole list before the pool would ask storage for a page (so parking
/// never costs memory), and before stats or cleanup look at free space.
class SlicedPool final : public Pool {
 public:
  static constexpr std::uint32_t kept_recent = 8;

  SlicedPool(Storage& storage, SliceCache& cache, MemoryStats& stats, std::uint64_t unit,
             std::uint64_t page_size) noexcept;

  [[nodiscard]] Slice* reserve(std::uint64_t extent) override;
  void release(Slice* slice) noexcept override;
  void release_free_pages() noexcept override;
  void release_all_pages() noexcept override;
  void consolidate() noexcept override;
  void check_invariants(MemoryStats& seen) const override;

 private:
  /// Merges `right` into `left` (both Free, neighbours): the merged slice
  /// starts clean, the absorbed one is recycled (P1).
  void absorb(Slice* left, Slice* right) noexcept;
  /// Merges a free slice with its free neighbours and files it.
  void merge(Slice* slice) noexcept;

  std::uint64_t page_size_;
  std::array<Slice*, kept_recent> recent_{}; ///< Oldest first.
  std::uint32_t recent_count_ = 0;
};

class ExclusivePool final : public Pool {
 public:
  ExclusivePool(Storage& storage, SliceCache& cache, MemoryStats& stats, std::uint64_t unit,
                std::uint64_t reuse_slack_eighths, std::uint64_t release_after) noexcept;

  [[nodiscard]] Slice* reserve(std::uint64_t extent) override;
  void release(Slice* slice) noexcept override;
  void release_free_pages() noexcept override;
  void release_all_pages() noexcept override;
  void check_invariants(MemoryStats& seen) const override;

 private:
  void unlink_idle(Page* page) noexcept;
  void age() noexcept;

  std::uint64_t reuse_slack_eighths_;
  std::uint64_t release_after_;
  std::uint64_t served_ = 0;
  Page* idle_oldest_ = nullptr;
  Page* idle_newest_ = nullptr;
};

} // namespace taintpool::detail
