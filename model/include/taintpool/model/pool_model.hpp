// PoolModel: the reference model of a MemoryManager's observable behaviour
// (§3.4, P1–P4, R4), written to be obviously right.
//
// A pool is free to place allocations wherever its policy likes, so the
// model does not predict addresses; it takes each placement core reports
// and checks it against what any correct pool must satisfy, and it predicts
// every usage figure exactly without knowing the policy:
//   * storage mirror — the caller reports every storage call that succeeded
//     (ObservedStorage does it for a fuzzer or test): pages, reservations,
//     mapped chunks. So the model knows exactly which bytes are memory, and
//     predicts reserved (their sum), pages (pages + chunks held), and — from
//     the live allocations' extents — the largest free block: the longest
//     run of memory in one page or reservation that no allocation occupies;
//   * P2 — a live allocation is aligned, lies in memory the storage gave,
//     does not overlap another live one (checked pairwise), and occupies
//     exactly its aligned size (every pool splits exactly); in use, padding
//     and the peak in use are recounted from the live set;
//   * P3 — which sizes are BufferTooBig, which bindings are NotFound or
//     InvalidBinding;
//   * P4 (lane-ordered reuse) — bytes an allocation of lane L released are
//     handed only to allocations of lane L until the storage takes them back
//     (a page freed, a chunk unmapped): the model remembers, per released
//     range, its lane, and forgets it when the storage takes the memory;
//   * P1 — an allocation's taint lives exactly until it ends: when the
//     manager discovers its last handle gone (at the manager's next call),
//     or when reset() ends everything. Its claims are kept in an
//     EngineModel (one OwnerMap per allocation, tags recounted), so when
//     an allocation ends, its failures die exactly when their last carrier
//     goes — and with every handle dropped and a sweep, no failure the
//     caller does not hold remains (R4).
//
// Handles are counted per allocation, as the caller copies and drops them;
// an allocation whose count reaches zero is *pending* until the next
// manager call discovers it (the only moment core may clear it).
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/model/engine_model.hpp>
#include <taintpool/pool/allocation.hpp>
#include <taintpool/pool/memory_config.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace taintpool::model {

class PoolModel {
 public:
  /// `first`: the id the first allocation gets — 1 for a manager in id
  /// space 0 (the only one alive), else its space's first
  /// (MemoryManager::id_space; failure_id.hpp): a harness that keeps
  /// several managers alive at once has each mint in its own space.
  explicit PoolModel(MemoryConfig config, AllocationId first = AllocationId::from_raw(1));

  /// Back to what PoolModel(config) builds — no allocation, no storage, no
  /// failure ever minted, both peaks 0 — keeping every buffer's capacity and
  /// the engine's per-allocation maps as spares (EngineModel::restart),
  /// which new allocations take again. A fuzzer that runs millions of inputs through one model
  /// then grows none of it again once warm (issue 13, eighteenth round).
  void restart(const MemoryConfig& config, AllocationId first = AllocationId::from_raw(1));

  // ---------------------------------------------------------------- routing

  /// P3: a size above max_allocation can never be held.
  [[nodiscard]] bool too_big(std::uint64_t size) const;
  /// The pool a size goes to: the first sliced pool that fits, else the
  /// arena (index = number of sliced pools).
  [[nodiscard]] std::uint32_t pool_for(std::uint64_t size) const;
  /// The aligned extent (one alignment unit for size 0).
  [[nodiscard]] std::uint64_t aligned_extent(std::uint64_t size) const;

  // ---------------------------------------------------------------- storage mirror

  /// The storage gave a page of memory at [address, address + size).
  void page_allocated(std::uint64_t address, std::uint64_t size);
  /// The page at `address` went back.
  void page_freed(std::uint64_t address);
  /// The storage reserved address space (no memory) at [address, + size).
  void space_reserved(std::uint64_t address, std::uint64_t size);
  /// The reservation at `address` went back (nothing may be mapped in it).
  void space_unreserved(std::uint64_t address);
  /// A chunk of memory was mapped at [address, address + size) of a reservation.
  void chunk_mapped(std::uint64_t address, std::uint64_t size);
  /// The chunk mapped at `address` went back.
  void chunk_unmapped(std::uint64_t address);

  // ---------------------------------------------------------------- lifecycle

  /// Core returned a new allocation on `lane`; checks P2 and P4 for it
  /// (against every live allocation, the storage mirror and the released
  /// ranges) and records it with one handle. Throws std::logic_error naming
  /// the violated rule.
  void allocated(AllocationId id, std::uint64_t size, std::uint64_t address, std::uint64_t extent,
                 std::uint32_t pool, std::uint32_t lane = 0);
  /// As allocated(), for a caller that checks placement itself (a stateful
  /// test whose model cannot see core): the allocation is recorded with the
  /// aligned extent and no address, and takes no part in placement checks.
  void allocated_unplaced(AllocationId id, std::uint64_t size, std::uint32_t lane = 0);

  /// The id the next successful allocation gets: one more than the last
  /// (the first: as built or restarted).
  [[nodiscard]] AllocationId next_id() const;
  /// The id the first allocation got or gets (as built or restarted).
  [[nodiscard]] AllocationId first_id() const noexcept { return first_; }

  /// The caller copied / dropped a handle of `id` (live or not).
  void handle_copied(AllocationId id);
  void handle_dropped(AllocationId id);
  /// Any manager call: every pending allocation ends now (P1).
  void manager_called();
  /// reset(): every live allocation ends (tombstoned); handles may remain.
  void reset();

  // ---------------------------------------------------------------- taint

  /// What a binding should do: nothing wrong, NotFound, or InvalidBinding.
  enum class BindingCheck { Ok, NotFound, InvalidBinding };
  /// Assumes the manager call that checks it has discovered releases.
  [[nodiscard]] BindingCheck check(const Binding& binding) const;

  /// T1/T2 on a live allocation's bytes (the caller checked the binding).
  void taint(const Binding& binding, FailureId failure);
  void written(const Binding& binding);
  [[nodiscard]] std::vector<FailureId> failures(const Binding& binding) const;
  /// The allocation's claims, ascending; empty once it ended.
  [[nodiscard]] std::vector<std::pair<FailureId, ByteRange>> claims(AllocationId id) const;
  /// The same claims in place, as the model's OwnerMap holds them (raw
  /// owner ids, maximal runs, ascending; empty once the allocation ended or
  /// when it was never made): what a fuzzer compares with core after every
  /// op without copying them into a fresh vector, as claims() does (issue
  /// 13, eighteenth round). Valid until the next change to the model.
  [[nodiscard]] std::span<const OwnedRun> runs(AllocationId id) const;

  /// N1 (MemoryConfig::fresh_bytes == NeverWritten): the NeverWritten
  /// failure that owns the never-written bytes, while some byte does. A new
  /// allocation (size > 0) is owned by it wholly, minting it if none lives.
  [[nodiscard]] std::optional<FailureId> never_written_failure() const;

  /// The failures' side: insert, prune, liveness, tags (recounted).
  [[nodiscard]] EngineModel& engine() { return engine_; }
  [[nodiscard]] const EngineModel& engine() const { return engine_; }

  // ---------------------------------------------------------------- figures (exact, P2)

  [[nodiscard]] bool live(AllocationId id) const;
  [[nodiscard]] std::vector<AllocationId> live_allocations() const;
  /// Allocations live or pending (what core still counts before discovery).
  [[nodiscard]] std::uint64_t allocations() const;
  [[nodiscard]] std::uint64_t in_use() const;
  [[nodiscard]] std::uint64_t padding() const;
  /// The highest in_use() ever.
  [[nodiscard]] std::uint64_t peak_in_use() const { return peak_in_use_; }
  [[nodiscard]] std::uint64_t handles(AllocationId id) const;
  /// The lane an allocation was made on.
  [[nodiscard]] std::uint32_t lane_of(AllocationId id) const;

  /// Bytes of memory the storage gave and still holds: pages and chunks.
  [[nodiscard]] std::uint64_t reserved() const;
  /// The highest reserved() ever.
  [[nodiscard]] std::uint64_t peak_reserved() const { return peak_reserved_; }
  /// Pages plus mapped chunks held.
  [[nodiscard]] std::uint64_t pages() const;
  /// The longest run of memory, within one page or reservation, that no
  /// live or pending allocation occupies (0 when none). Works in two lists
  /// the model keeps (so, like every call here, one thread at a time).
  [[nodiscard]] std::uint64_t largest_free_block() const;

 private:
  enum class State { Live, Pending, Ended };
  struct Record {
    AllocationId id;
    std::uint64_t size;
    std::uint64_t address;
    std::uint64_t extent;
    std::uint64_t handles;
    State state;
    std::size_t carrier; ///< Its allocation index in engine_.
    bool placed;         ///< address and extent came from core.
    std::uint32_t lane;
  };
  /// A page (all memory) or a reservation (memory = its chunks).
  struct Block {
    std::uint64_t address;
    std::uint64_t size;
    bool reservation;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> chunks; ///< (address, size).
  };
  /// Bytes [begin, end) an allocation of `lane` released, not yet taken back.
  struct Released {
    std::uint64_t begin;
    std::uint64_t end;
    std::uint32_t lane;
  };

  [[nodiscard]] Record* find(AllocationId id);
  [[nodiscard]] const Record* find(AllocationId id) const;
  void end(Record& record);
  /// Forgets every released byte in [begin, end) (P4 bookkeeping). Most
  /// calls (a page or chunk the storage gives or takes, a new allocation's
  /// extent) meet no released range: they return at once, changing nothing.
  void forget_released(std::uint64_t begin, std::uint64_t end);
  /// Whether [begin, end) lies wholly in memory the storage gave.
  [[nodiscard]] bool in_memory(std::uint64_t begin, std::uint64_t end) const;
  void track_peaks();
  /// N1 on a new record.
  void claim_never_written(const Record& record);

  MemoryConfig config_;
  AllocationId first_; ///< The first allocation's id (the manager's id space).
  EngineModel engine_;
  std::vector<Record> records_; ///< Every allocation ever made, in id order.
  std::vector<Block> blocks_;   ///< What the storage holds for the manager now.
  std::vector<Released> released_;
  /// forget_released()'s rebuild, swapped with released_: empty between
  /// calls, its capacity kept, so a cut allocates nothing once it has grown.
  std::vector<Released> kept_;
  /// largest_free_block()'s scratch, [begin, end) each: one block's memory
  /// as merged runs and its occupied extents. Meaningless between calls;
  /// kept only for their capacity, so a warm model asks without allocating.
  using Span = std::pair<std::uint64_t, std::uint64_t>;
  mutable std::vector<Span> free_runs_;
  mutable std::vector<Span> used_runs_;
  std::uint64_t peak_in_use_ = 0;
  std::uint64_t peak_reserved_ = 0;
  std::uint64_t never_written_ = 0; ///< The NeverWritten failure last minted (N1).
};

} // namespace taintpool::model
