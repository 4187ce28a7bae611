// PoolModel: the reference model of a MemoryManager's observable behaviour
// (§3.4, P1–P3, R4), written to be obviously right.
//
// A pool is free to place allocations wherever it likes, so the model does
// not predict addresses; it takes each placement core reports and checks it
// against what any correct pool must satisfy:
//   * P2 — a live allocation is aligned, does not overlap another live one
//     (checked against every live allocation, pairwise), and occupies an
//     extent the routing allows (exactly the aligned size on a sliced pool,
//     at most the reuse slack above it on the exclusive pool);
//   * P3 — which sizes are BufferTooBig, which bindings are NotFound or
//     InvalidBinding; what is live, and usage figures recounted from the
//     live set;
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
#include <vector>

namespace taintpool::model {

class PoolModel {
 public:
  explicit PoolModel(MemoryConfig config);

  // ---------------------------------------------------------------- routing

  /// P3: a size above max_allocation can never be held.
  [[nodiscard]] bool too_big(std::uint64_t size) const;
  /// The pool a size goes to: the first sliced pool that fits, else the
  /// exclusive pool (index = number of sliced pools).
  [[nodiscard]] std::uint32_t pool_for(std::uint64_t size) const;
  /// The aligned extent (one alignment unit for size 0).
  [[nodiscard]] std::uint64_t aligned_extent(std::uint64_t size) const;

  // ---------------------------------------------------------------- lifecycle

  /// Core returned a new allocation; checks P2 for it against every live
  /// allocation and records it with one handle. Throws std::logic_error
  /// naming the violated rule.
  void allocated(AllocationId id, std::uint64_t size, std::uint64_t address, std::uint64_t extent,
                 std::uint32_t pool);
  /// As allocated(), for a caller that checks placement itself (a stateful
  /// test whose model cannot see core): the allocation is recorded with the
  /// aligned extent and no address, and takes no part in overlap checks.
  void allocated_unplaced(AllocationId id, std::uint64_t size);

  /// The id the next successful allocation gets: one more than the last.
  [[nodiscard]] AllocationId next_id() const;

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

  /// The failures' side: insert, prune, liveness, tags (recounted).
  [[nodiscard]] EngineModel& engine() { return engine_; }
  [[nodiscard]] const EngineModel& engine() const { return engine_; }

  // ---------------------------------------------------------------- figures

  [[nodiscard]] bool live(AllocationId id) const;
  [[nodiscard]] std::vector<AllocationId> live_allocations() const;
  /// Allocations live or pending (what core still counts before discovery).
  [[nodiscard]] std::uint64_t allocations() const;
  [[nodiscard]] std::uint64_t in_use() const;
  [[nodiscard]] std::uint64_t padding() const;
  [[nodiscard]] std::uint64_t handles(AllocationId id) const;

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
  };

  [[nodiscard]] Record* find(AllocationId id);
  [[nodiscard]] const Record* find(AllocationId id) const;
  void end(Record& record);

  MemoryConfig config_;
  EngineModel engine_;
  std::vector<Record> records_; ///< Every allocation ever made, in id order.
};

} // namespace taintpool::model
