// FailureNode and FailureTable: the storage behind ErrorGraph. Internal.
//
// The graph keeps the newest node in a dedicated slot and every older live
// node here. Nodes only land in this table when a failure outlives the next
// insert — a real failure still carried by a stale buffer — so the table
// holds "failures a program has not yet cleaned up", typically a handful.
//
// Shape: open addressing with linear probing over a power-of-two array of
// nodes, keyed by the raw id (0 marks a vacant slot: ids are never 0).
// Deletion shifts the following cluster back instead of leaving tombstones,
// so lookups never degrade under churn and the table needs no rehash to
// recover. Load is kept at or below one half. It grows by doubling and never
// shrinks: after warm-up, insert and erase allocate nothing (G10).
//
// Why not std::unordered_map: one heap node per insert, which is exactly the
// per-failure allocation G10 rules out. Why not a sorted vector: ids arrive in
// increasing order but leave in any order, so erasing would shift.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <taintpool/error.hpp>
#include <taintpool/report.hpp>

namespace taintpool::detail {

/// The skip records of one root failure (G7): the newest `capacity` records
/// in a ring, and the count of all of them. Allocated on the first skip only,
/// so a failure that never stops a launch costs one null pointer.
struct SkipLog {
  std::vector<SkipRecord> ring; ///< At most the graph's kept_skip_records entries.
  std::uint64_t recorded = 0;   ///< Every record ever added, kept or dropped.
};

/// One failure's node (§3.3).
struct FailureNode {
  std::uint64_t id = 0;   ///< Raw FailureId; 0 = vacant slot.
  std::uint64_t tags = 0; ///< Carriers holding a claim of this failure (R1).
  Error error = Error::torn_down();
  SkipLog* skips = nullptr; ///< Owned; null until the first skip.

  FailureNode() noexcept = default;
  FailureNode(FailureNode&& other) noexcept;
  FailureNode& operator=(FailureNode&& other) noexcept;
  FailureNode(const FailureNode&) = delete;
  FailureNode& operator=(const FailureNode&) = delete;
  ~FailureNode() { delete skips; }

  /// Back to vacant; frees the message and skip log, if any.
  void vacate() noexcept;
};

class FailureTable {
 public:
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// The node with this raw id, or null. Inline: probes start at the id's
  /// home slot and stop at the first vacant one.
  [[nodiscard]] FailureNode* find(std::uint64_t id) noexcept {
    if (size_ == 0) {
      return nullptr;
    }
    for (std::size_t at = home(id);; at = (at + 1) & mask()) {
      FailureNode& slot = slots_[at];
      if (slot.id == id) {
        return &slot;
      }
      if (slot.id == 0) {
        return nullptr;
      }
    }
  }
  [[nodiscard]] const FailureNode* find(std::uint64_t id) const noexcept {
    return const_cast<FailureTable*>(this)->find(id);
  }

  /// Moves `node` in; its id must not be present. May grow (allocates).
  void insert(FailureNode&& node);

  /// Removes the node `slot` points at (a pointer find() returned).
  void erase(FailureNode* slot) noexcept;

  /// Visits every live node, in slot order.
  template <class Fn>
  void for_each(Fn&& fn) const {
    if (size_ == 0) {
      return;
    }
    for (const FailureNode& slot : slots_) {
      if (slot.id != 0) {
        fn(slot);
      }
    }
  }

  /// Throws std::logic_error if a live id is unreachable from its home slot,
  /// the count is off, or the load passed one half.
  void check_invariants() const;

 private:
  [[nodiscard]] std::size_t mask() const noexcept { return slots_.size() - 1; }
  [[nodiscard]] std::size_t home(std::uint64_t id) const noexcept {
    // Fibonacci hashing: consecutive ids land far apart, so a run of
    // failures minted close together does not form one long cluster.
    return static_cast<std::size_t>((id * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow();

  std::vector<FailureNode> slots_;
  std::size_t size_ = 0;
  unsigned shift_ = 64;
};

} // namespace taintpool::detail
