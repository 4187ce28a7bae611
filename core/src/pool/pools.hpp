// Pool, SlicedPool, ArenaPool: the ways a MemoryManager carves storage into
// slices. Internal.
//
// All hand out Free slices of an exact extent (reserve) and take Free,
// clean slices back (release); none knows about allocations, handles or
// taint — the manager binds and unbinds, which keeps the P1 clear points in
// one place.
//
//   SlicedPool  pages of one size carved into many slices: reserve splits a
//               free slice (good fit from the size bins), release merges it
//               with free neighbours. For buffers much smaller than a page.
//   ArenaPool   the same carving for large buffers, best fit over every
//               free range the arena holds, but it grows instead of adding
//               pages of a fixed size: with virtual memory, by mapping the
//               next bytes of a reserved address range (one range per lane,
//               so free space never splinters across pages); without it, by
//               pages sized by the growth rule. It never gives memory back
//               on its own: only cleanup() and the out-of-memory path do.
#pragma once

#include <taintpool/pool/detail/slice.hpp>
#include <taintpool/pool/memory_config.hpp>
#include <taintpool/pool/memory_stats.hpp>
#include <taintpool/pool/storage.hpp>
#include <taintpool/pool/virtual_memory.hpp>

#include <array>
#include <cstdint>
#include <memory>

#include "hole_blame.hpp"
#include "size_bins.hpp"

namespace taintpool::detail {

/// What a give-back released: bytes of memory and storage blocks (pages or
/// mapped chunks).
struct Released {
  std::uint64_t bytes = 0;
  std::uint64_t blocks = 0;
};

class Pool {
 public:
  /// Throws std::bad_alloc (the free index's bins).
  Pool(Storage& storage, SliceCache& cache, MemoryStats& stats, std::uint64_t unit, Fit fit,
       std::uint64_t max_extent);
  virtual ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  /// A Free, clean slice of exactly `extent` bytes (a multiple of the unit),
  /// out of the free index. May ask storage for memory: throws
  /// StorageExhausted (or std::bad_alloc) with nothing changed.
  [[nodiscard]] virtual Slice* reserve(std::uint64_t extent) = 0;

  /// Takes back a slice whose allocation ended. It is Free and clean.
  virtual void release(Slice* slice) noexcept = 0;

  /// Gives every block of memory that holds no allocation back to storage
  /// and says what went. May throw std::bad_alloc (spare records) before
  /// giving anything back.
  virtual Released release_free_pages() = 0;

  /// Merges whatever free space the pool keeps unmerged for speed, so the
  /// free index alone describes its free memory (before stats and checks
  /// that speak of the largest free block).
  virtual void consolidate() noexcept {}

  /// Gives every page back. Bound slices must have been tombstoned first;
  /// they are detached (page = null), the others are recycled.
  virtual void release_all_pages() noexcept;

  /// The largest extent reserve could serve without new memory.
  [[nodiscard]] std::uint64_t largest_free() const noexcept {
    const std::uint64_t far = far_bins_ != nullptr ? far_bins_->largest() : 0;
    return far > bins_.largest() ? far : bins_.largest();
  }

  /// P2 for this pool's pages and free index; adds what it sees to `seen`
  /// (reserved bytes, pages) for the manager to compare with its stats.
  virtual void check_invariants(MemoryStats& seen) const;

  [[nodiscard]] std::uint64_t unit() const noexcept { return unit_; }

  /// This pool's place in the manager: the ladder index (the arena last) and
  /// its lane.
  [[nodiscard]] std::uint32_t index() const noexcept { return index_; }
  [[nodiscard]] std::uint32_t lane() const noexcept { return lane_; }
  void place(std::uint32_t index, std::uint32_t lane) noexcept {
    index_ = index;
    lane_ = lane;
  }

 protected:
  /// A new page of memory with one Free slice spanning it, filed in the free
  /// index. Needs one spare slice (callers ensure() it). Throws
  /// StorageExhausted.
  Slice* add_page(std::uint64_t size);
  /// Links a new page in and stamps it with this pool.
  void link_page(Page* page) noexcept;
  /// Unlinks a page from the list (its slices are the caller's business).
  void unlink_page(Page* page) noexcept;
  /// The page's only slice is Free: unfile it, recycle it, free the page.
  void drop_page(Page* page) noexcept;
  /// Gives a page's memory back to storage and deletes it; slices untouched.
  virtual void free_page(Page* page) noexcept;

  /// The free index a free slice is filed in: the far reservation's own
  /// (ArenaPool), else the pool's. Decided on the pool's own field first,
  /// so a pool without a far range (every sliced pool) never waits for the
  /// slice's page to arrive.
  [[nodiscard]] SizeBins& bins_of(const Slice* slice) noexcept {
    if (far_page_ == nullptr || slice->page != far_page_) [[likely]] {
      return bins_;
    }
    return *far_bins_;
  }

  Storage& storage_;
  SliceCache& cache_;
  MemoryStats& stats_;
  SizeBins bins_;
  std::uint64_t unit_;
  Page* pages_ = nullptr;
  std::uint32_t index_ = 0;
  std::uint32_t lane_ = 0;
  /// ArenaPool's far reservation and its free index (null elsewhere): kept
  /// apart so a best fit over one never walks the other.
  Page* far_page_ = nullptr;
  std::unique_ptr<SizeBins> far_bins_;
};

/// Why the recent list (good-fit pools only): GPU programs allocate the same shapes iteration
/// after iteration, so the common reserve asks for exactly the extent just
/// released. Merging that slice into its neighbours and splitting it out
/// again costs two bin removals, two insertions and a record swap per pair
/// for nothing. A released slice therefore waits, unmerged, in a short list
/// (the newest kept_recent); a reserve of exactly its extent takes it back
/// with no index work at all. The oldest is merged when the list is full,
/// the whole list before the pool would ask storage for memory (so parking
/// never costs memory), and before stats or cleanup look at free space.
/// A best-fit pool keeps one, for exact-size reuse only: any other request
/// merges it first, so it takes part in the best fit like any free range
/// (parking slices unmerged past the next request changes where later
/// requests land, and on real traces that costs memory).
class SlicedPool : public Pool {
 public:
  static constexpr std::uint32_t kept_recent = 8;

  /// Pages of `page_size` (0: the subclass grows otherwise, and its free
  /// blocks may be of any size). Throws std::bad_alloc.
  SlicedPool(Storage& storage, SliceCache& cache, MemoryStats& stats, std::uint64_t unit,
             std::uint64_t page_size, Fit fit = Fit::Good);

  [[nodiscard]] Slice* reserve(std::uint64_t extent) override;
  void release(Slice* slice) noexcept override;
  Released release_free_pages() override;
  void release_all_pages() noexcept override;
  void consolidate() noexcept final;
  void check_invariants(MemoryStats& seen) const override;

 protected:
  /// A Free slice of at least `extent` bytes, filed in the free index, made
  /// from new memory. Here: a new page of page_size. Throws
  /// StorageExhausted with nothing changed.
  [[nodiscard]] virtual Slice* grow(std::uint64_t extent);
  /// Spare records reserve may need: a split's remainder, and what grow uses.
  [[nodiscard]] virtual std::size_t spares_for_reserve() const noexcept { return 2; }
  /// Exactly `extent` from the recent list (marked Free), or null. Inline:
  /// the two cheap answers come without a call.
  [[nodiscard]] Slice* take_recent(std::uint64_t extent) noexcept {
    // The newest first, alone: a same-size allocate/drop pair (a training
    // step's buffers, the pool's headline case) takes back the slice it
    // just released, and one compare costs less than the sweep (callgrind:
    // 47 instructions a pair more without it).
    if (recent_count_ != 0) {
      const std::uint32_t newest = recent_slot(recent_count_ - 1);
      if (recent_extents_[newest] == extent) {
        Slice* slice = recent_[newest];
        --recent_count_;
        set_recent(newest, nullptr, 0);
        slice->state = SliceState::Free;
        return slice;
      }
    }
    // One parked slice at most (a best-fit pool always, a good-fit one
    // often) and it is not this extent: no other can be. The arena's every
    // reserve came here and paid the tag test's multiply and compares for
    // nothing (callgrind on swin_train_bf16, pool20).
    if (recent_count_ <= 1) {
      return nullptr;
    }
    // Then most requests match no parked slice, which the tag word says in
    // a few instructions. A byte of `recent_tags_` per slot: zero where
    // `extent`'s tag is (exact, no carries between bytes: the SWAR
    // zero-byte test with the top bits masked out first). No zero byte, no
    // parked slice of this extent; a zero byte may still be another extent
    // of the same tag, so the out-of-line sweep compares the extents.
    const std::uint64_t differ = recent_tags_ ^ (recent_tag(extent) * bytes_of_ones);
    const std::uint64_t low_bits_set = (differ & low_seven_bits) + low_seven_bits;
    if ((~(low_bits_set | differ) & ~low_seven_bits) == 0) {
      return nullptr;
    }
    return take_recent_matching(extent);
  }
  /// take_recent's sweep over every slot, once a tag matches (out of line:
  /// most requests never get here).
  [[nodiscard]] Slice* take_recent_matching(std::uint64_t extent) noexcept;
  /// Takes the Free slice `slice` (at least `extent` bytes) out of the free
  /// index and splits off what `extent` does not need (one spare record).
  Slice* split(Slice* slice, std::uint64_t extent) noexcept;
  /// Cuts `slice` after its first `keep` bytes (0 < keep < its extent):
  /// the rest becomes a fresh record right after it on the page, returned.
  /// Files neither part. Needs a spare record (cache_.ensure).
  Slice* cut(Slice* slice, std::uint64_t keep) noexcept;
  /// Merges `right` into `left` (both Free or both Unmapped, neighbours): the
  /// merged slice starts clean, the absorbed one is recycled (P1).
  void absorb(Slice* left, Slice* right) noexcept;
  /// Merges a free slice with its free neighbours, files it, and returns it.
  Slice* merge(Slice* slice) noexcept;
  /// Drops every page that holds only one free slice.
  Released drop_free_pages() noexcept;

  std::uint64_t page_size_;
  /// Where cut and absorb write the right neighbour's back link when there
  /// is none (the page's last slice): selected, not branched on — which
  /// slice ends a page is a coin toss to the predictor (size_bins.hpp).
  Slice* link_sink_ = nullptr;

 private:
  static_assert((kept_recent & (kept_recent - 1)) == 0, "the recent list is a ring of 2^k slots");
  static constexpr std::uint32_t recent_slot_mask = kept_recent - 1;

  static constexpr std::uint64_t bytes_of_ones = 0x0101010101010101ull;
  static constexpr std::uint64_t low_seven_bits = 0x7F7F7F7F7F7F7F7Full;
  static_assert(kept_recent <= 8, "the recent list's tags fill one 64-bit word, a byte a slot");

  /// A parked extent's tag: seven bits of a multiplicative hash (every bit
  /// of the extent counts, whatever the unit), with the top bit set so no
  /// tag is 0, an empty slot's byte. 128 tags: a request matches a parked
  /// slice of another extent in about 8 of 128 requests with the list full.
  [[nodiscard]] static std::uint64_t recent_tag(std::uint64_t extent) noexcept {
    return 0x80u | ((extent * 0x9E3779B97F4A7C15ull) >> 57);
  }
  /// Parks `slice` (null: empties the slot) in `slot`: its pointer, its
  /// extent and its tag.
  void set_recent(std::uint32_t slot, Slice* slice, std::uint64_t extent) noexcept {
    recent_[slot] = slice;
    recent_extents_[slot] = extent;
    const std::uint64_t tag = extent == 0 ? 0 : recent_tag(extent);
    recent_tags_ = (recent_tags_ & ~(std::uint64_t{0xFF} << (8 * slot))) | (tag << (8 * slot));
  }
  /// Empties every slot (the count and the oldest are the caller's).
  void clear_recent() noexcept {
    recent_extents_.fill(0);
    recent_tags_ = 0;
  }

  /// The slot of the recent list's `age`-th oldest slice.
  [[nodiscard]] std::uint32_t recent_slot(std::uint32_t age) const noexcept {
    return (recent_oldest_ + age) & recent_slot_mask;
  }

  std::uint32_t kept_; ///< Slices the recent list holds at most: kept_recent, 1 or 0.
  /// The recent list, a ring: the oldest in slot recent_oldest_, the newer
  /// ones after it. A ring, so parking a slice when the list is full (most
  /// releases) shifts nothing.
  std::array<Slice*, kept_recent> recent_{};
  /// Each slot's slice's extent, 0 for an empty slot (no slice has extent
  /// 0): take_recent compares all of them at once from this one line,
  /// without reading the parked records or stopping early. Beside a
  /// request that matches none of them (most requests) this walk was 60 of
  /// the ~740 instructions a pair cost (issue 12 item 4).
  std::array<std::uint64_t, kept_recent> recent_extents_{};
  /// Each slot's extent's tag (recent_tag) in byte `slot`, 0 for an empty
  /// slot: take_recent rules out a request that matches no parked extent
  /// (most requests) with one word's compare. The sweep over the eight
  /// extents it replaces on that path was 37 of the ~858 instructions a
  /// pair of the random workload cost (callgrind, issue 12 item 4).
  std::uint64_t recent_tags_ = 0;
  std::uint32_t recent_oldest_ = 0;
  std::uint32_t recent_count_ = 0;
};

/// The large-buffer arena (see the top of this file). Best fit over every
/// free range of every page (the size bins in Fit::Best), free neighbours
/// merged at once; growth only when nothing fits, so a warm arena makes no
/// storage call. Best fit is what keeps real training and inference traces
/// close to their peak in use: a good fit that takes any block of the
/// first large-enough bin leaves splinters that cost up to 10% more memory.
///
/// With virtual memory, requests whose freed blocks stranded a hole that a
/// growth could not use (HoleBlame, hole_blame.hpp) are set apart in a
/// second reservation, the far one (the free block a growth joins
/// stranded nothing, so its maker is not blamed): such a request takes the
/// best free range there, else — while the arena is tight — new memory
/// mapped there, else the best fit anywhere. Every other request takes the best fit
/// outside the far reservation first, then inside it, then grows where the
/// least new memory makes room (the far hole a set-apart block left, next
/// to unmapped space, is that place for the request the hole blocked).
/// A set-apart request that finds no far room while the arena is tight
/// first takes the top of a near free block that borders unmapped space,
/// when that block is roomy (HoleBlame::edge_factor): no new memory, and
/// its hole borders unmapped space all the same.
/// Steady state repeats the placement of the step before, so it maps
/// nothing.
///
/// The edge comes last. A request that is not set apart takes a free
/// block that borders unmapped space (the edge, where growth maps) only
/// when no other near block fits, or when it fits exactly. Why (issue 12):
/// in the first step the edge block holds only what the last growth mapped
/// beyond its request, in a later step everything above the step's last
/// block, so a best fit that counts it as one more block chooses
/// differently in the two, and a later step can need more than the first
/// mapped. Kept last, the edge block's size decides nothing: a step that
/// starts from the same free space lays its blocks out as the first did
/// (measured: the warm replays of deeplabv3_train and opt_generate place
/// every block where the first replay did; with the edge last only for
/// requests of 1.25 MiB or more, roberta_train's warm replay maps again).
/// Blocks that fit a hole between live ones fill it instead of the edge,
/// which lowers two peaks: deeplabv3_train 1.0651x to 1.0358x and
/// fasterrcnn_train 1.0516x to 1.0372x peak reserved over peak in use.
/// What it costs: opt_generate 1.0955x to 1.1111x and one growth in its
/// second half (a 1 MiB block it never frees lands between its key/value
/// blocks, not on the edge), swin_train_bf16 1.0177x to 1.0340x
/// (bench/RESULTS.md, pool10). Like every rule here it only chooses among
/// free ranges: P2 holds as before.
///
/// A settled arena gives back what its holes hold whole. At a growth for a
/// request of at least 1/12 of the arena (HoleBlame::blame_divisor: one
/// that blame looks at), when some context is already set apart and this
/// growth's blame sets apart no new one, every mapped chunk that lies
/// wholly in free space is unmapped before the arena grows (the reservation
/// keeps the address range). Why (issue 12): what bart_train (1.0564x peak
/// reserved over peak in use) and whisper_train (1.0635x) held beyond
/// their peak in use was mapped memory no placement reached (bench/
/// RESULTS.md, pool9); each gives back one whole chunk at such a growth
/// before the middle of its trace (590 and 152 MiB) and peaks at 1.0114x
/// and 1.0200x.
/// Why the guard: unmapping at every large growth, or at the growth that
/// blames a hole, changes the layout the next step learns from, and later
/// steps map again (tests/pool/arena_holes_test.cpp's six-step loop made
/// calls in steps 3 to 6 and its peak climbed; RESULTS.md, pool9 and
/// pool11). A growth that learns nothing comes once the set-apart blocks
/// are placed as they will be in the steps that repeat it, so what is
/// wholly free then is not what those steps need — measured, not proven:
/// that loop and the 23 traces make no storage call after it. Cold: growths
/// only; P2 holds (the chunks are Free, and an unmapped range is a slice of
/// the reservation like its unmapped top).
///
/// An arena that holds no allocation parks nothing: the release that
/// empties it merges the recent slice at once (unless that slice starts
/// a near page: taking it back is then where a fresh start would put the
/// request anyway). Why (issue 12): a program
/// that frees everything and starts over (pool_replay's warm replays, a
/// server between requests) would otherwise have its first request take
/// the parked slice back wherever it lay and lay the whole step out from
/// there, not from the bottom as the first step did (efficientnet_train
/// mapped again in a warm replay, 1.0024x to 1.0181x).
class ArenaPool final : public SlicedPool {
 public:
  /// Throws std::bad_alloc.
  ArenaPool(Storage& storage, SliceCache& cache, MemoryStats& stats, std::uint64_t unit,
            const MemoryConfig& config);

  [[nodiscard]] Slice* reserve(std::uint64_t extent) override;
  void release(Slice* slice) noexcept override;
  Released release_free_pages() override;
  void release_all_pages() noexcept override;
  void check_invariants(MemoryStats& seen) const override;

 protected:
  [[nodiscard]] Slice* grow(std::uint64_t extent) override;
  [[nodiscard]] std::size_t spares_for_reserve() const noexcept override { return 3; }
  void free_page(Page* page) noexcept override;

 private:
  /// A set-apart request (see the class comment).
  [[nodiscard]] Slice* reserve_apart(std::uint64_t extent);
  /// Any other request (with virtual memory and the set-apart rule).
  [[nodiscard]] Slice* reserve_beside_apart(std::uint64_t extent);
  /// The best Free slice of the far reservation for `extent`, or null.
  [[nodiscard]] Slice* best_fit_far(std::uint64_t extent) const noexcept;
  /// The best fit outside the far reservation, else inside it, or null.
  [[nodiscard]] Slice* best_fit_near_first(std::uint64_t extent) noexcept;
  /// The best fit outside the far reservation, or null; a block that
  /// borders unmapped space only when it fits exactly or no other fits.
  [[nodiscard]] Slice* best_fit_near(std::uint64_t extent) noexcept;
  /// The smallest Free slice of at least `at_least` bytes outside the far
  /// reservation whose right neighbour is Unmapped, or null. Cold (only a
  /// set-apart request in a tight arena asks): walks the unmapped lists.
  [[nodiscard]] Slice* free_block_before_unmapped(std::uint64_t at_least) const noexcept;
  /// Takes the Free slice `slice` (at least `extent` bytes) out of the free
  /// index and returns its top `extent` bytes; the rest stays free and
  /// filed. Needs one spare record.
  Slice* split_off_top(Slice* slice, std::uint64_t extent) noexcept;
  /// HoleBlame::blame for a growth of `extent` bytes (cold: walks slices);
  /// whether it set apart a context that was not before. The free ranges
  /// the growth will join are not holes (HoleBlame's class comment).
  bool blame_holes(std::uint64_t extent, std::uint64_t granule) noexcept;
  /// Where a growth for `extent` bytes maps: the Unmapped slice whose
  /// mapping makes room with the least new memory (free bytes before it
  /// count, and after it when it is mapped whole), or null; `need` gets the
  /// bytes that takes. Only the far reservation while grow_far_. Cold.
  [[nodiscard]] Slice* growth_site(std::uint64_t extent, std::uint64_t granule,
                                   std::uint64_t& need) const noexcept;
  /// Mapped chunks over every page: what an unmapping walk may carve.
  [[nodiscard]] std::size_t mapped_chunks() const noexcept;
  /// Unmaps every mapped chunk that lies wholly in a free slice, keeping
  /// the reservations (the settled give-back, see the class comment).
  /// Throws std::bad_alloc (before anything changes).
  void give_back_free_chunks();
  /// The storage's virtual memory, asked once (the answer may not change).
  [[nodiscard]] VirtualMemory* virtual_memory() noexcept;
  /// How much to grow by when `need` bytes are missing: the growth rule
  /// (MemoryConfig: 1/divisor of what it holds, the minimum, and the ramp).
  [[nodiscard]] std::uint64_t growth(std::uint64_t need, std::uint64_t granule) const noexcept;
  [[nodiscard]] Slice* grow_mapped(VirtualMemory& memory, std::uint64_t extent);
  [[nodiscard]] Slice* grow_pages(std::uint64_t extent);
  /// A new reservation of at least `size` bytes, tiled by one Unmapped slice.
  [[nodiscard]] Slice* add_reservation(VirtualMemory& memory, std::uint64_t size);
  /// Unmaps the chunks of `page` that lie wholly in free slices.
  void unmap_free_chunks(Page* page, Released& released) noexcept;
  /// Turns [offset, offset + size) of the Free slice `slice` into an Unmapped
  /// slice (merged with Unmapped neighbours). Needs two spare records.
  void carve_unmapped(Slice* slice, std::uint64_t offset, std::uint64_t size) noexcept;
  /// Files an Unmapped slice in its page's unmapped list, by offset.
  static void link_unmapped(Slice* hole) noexcept;
  /// Takes an Unmapped slice out of its page's unmapped list.
  static void unlink_unmapped(Slice* hole) noexcept;

  std::uint64_t address_space_;
  std::uint64_t growth_divisor_;
  std::uint64_t min_growth_;
  std::uint64_t ramp_growth_;
  std::uint64_t held_ = 0; ///< Bytes of memory this arena holds.
  /// Slices reserve handed out that release has not taken back (P2: as
  /// many as the arena's Bound slices).
  std::uint64_t live_ = 0;
  HoleBlame blame_;
  bool grow_far_ = false; ///< The growth under way is for a set-apart request.
  bool learns_holes_;     ///< MemoryConfig::arena_sets_hole_makers_apart.
  VirtualMemory* memory_ = nullptr;
  bool memory_asked_ = false;
};

} // namespace taintpool::detail
