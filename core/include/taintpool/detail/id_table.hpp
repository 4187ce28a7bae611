// IdTable<Node>: an open-addressing table of nodes keyed by a nonzero 64-bit
// id. Internal. The error graph keeps its older failures in one; the pool
// finds a binding's slice by allocation id in another.
//
// Both key spaces are ids that count up from 1 and are never reused, looked
// up far more often than inserted, with a live set that is small and churns.
// So: linear probing over a power-of-two array of nodes stored inline (no
// node-per-insert allocation), Fibonacci hashing so consecutive ids spread
// out, load at most one half, and backward-shift deletion instead of
// tombstones so lookups never degrade under churn and the table needs no
// rehash to recover. It grows by doubling and never shrinks: after warm-up,
// insert and erase allocate nothing (G10).
//
// Node must have a public `std::uint64_t id` (0 = vacant), a default
// constructor that makes it vacant, a noexcept move constructor and move
// assignment that leave the source vacant, and `void vacate() noexcept`.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace taintpool::detail {

/// An open-addressing table of Node keyed by a nonzero id (see above).
/// Move-only; single-threaded.
template <class Node, bool Sequential = false>
class IdTable {
 public:
  /// Empty; allocates nothing until the first insert.
  IdTable() noexcept = default;
  IdTable(const IdTable&) = delete;
  IdTable& operator=(const IdTable&) = delete;
  /// A moved-from table is empty and usable: its count goes with its slots.
  IdTable(IdTable&& other) noexcept
      : slots_(std::move(other.slots_))
      , size_(std::exchange(other.size_, 0))
      , shift_(std::exchange(other.shift_, 64u)) {
    other.slots_.clear();
  }
  /// As the move constructor; this table's nodes are destroyed.
  IdTable& operator=(IdTable&& other) noexcept {
    if (this != &other) {
      slots_ = std::move(other.slots_);
      size_ = std::exchange(other.size_, 0);
      shift_ = std::exchange(other.shift_, 64u);
      other.slots_.clear();
    }
    return *this;
  }
  ~IdTable() = default;

  /// Live nodes.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// The node with this id, or null. Probes start at the id's home slot and
  /// stop at the first vacant one. O(1) expected at load <= 1/2; never
  /// allocates.
  [[nodiscard]] Node* find(std::uint64_t id) noexcept {
    if (size_ == 0) {
      return nullptr;
    }
    for (std::size_t at = home(id);; at = (at + 1) & mask()) {
      Node& slot = slots_[at];
      if (slot.id == id) {
        return &slot;
      }
      if (slot.id == 0) {
        return nullptr;
      }
    }
  }
  [[nodiscard]] const Node* find(std::uint64_t id) const noexcept {
    return const_cast<IdTable*>(this)->find(id);
  }

  /// Starts loading the home slot of `id` into the cache, so a find, insert
  /// or erase that follows other work does not wait for memory. A hint:
  /// changes nothing.
  void prefetch(std::uint64_t id) const noexcept {
    if (!slots_.empty()) {
      __builtin_prefetch(&slots_[home(id)], 1);
    }
  }

  /// Moves `node` in and returns where it landed; its id must not be present.
  /// May grow, which allocates; if that throws, nothing changed. The pointer
  /// is valid until the next insert or erase.
  Node* insert(Node&& node) {
    if ((size_ + 1) * 2 > slots_.size()) {
      grow();
    }
    std::size_t at = home(node.id);
    while (slots_[at].id != 0) {
      at = (at + 1) & mask();
    }
    slots_[at] = std::move(node);
    ++size_;
    return &slots_[at];
  }

  /// Grows now if one more insert would, so that insert cannot throw. Lets
  /// a caller do every fallible step before it changes anything.
  void reserve_one() {
    if ((size_ + 1) * 2 > slots_.size()) {
      grow();
    }
  }

  /// Removes the node `slot` points at (a pointer find() or insert() gave).
  void erase(Node* slot) noexcept {
    // Backward shift: walk the cluster after the hole and pull back every
    // node whose home is not cyclically in (hole, where it sits], so a probe
    // from any home still meets no vacant slot before its node.
    std::size_t hole = static_cast<std::size_t>(slot - slots_.data());
    slots_[hole].vacate();
    --size_;
    for (std::size_t next = (hole + 1) & mask(); slots_[next].id != 0; next = (next + 1) & mask()) {
      const std::size_t want = home(slots_[next].id);
      const bool stays =
          hole <= next ? (hole < want && want <= next) : (hole < want || want <= next);
      if (!stays) {
        slots_[hole] = std::move(slots_[next]);
        hole = next;
      }
    }
  }

  /// Removes every node but keeps the slots: afterwards the table answers
  /// every call as a freshly constructed one does (size 0, no id found,
  /// check_invariants passes, any id may be inserted), except that it
  /// still has its capacity, so refilling it to its old size allocates
  /// nothing. For an owner that empties and refills a table many times (a
  /// fuzzer's graph per input, issue 13). Each live node is destroyed and
  /// default-constructed again; vacant slots are left as they are, as
  /// erase() left them, holding whatever the node's vacate() keeps (for
  /// FailureNode: nothing). O(capacity) with live nodes;
  /// O(1) on an empty table, the common case (every node erased first).
  /// Never allocates.
  void clear() noexcept {
    if (size_ != 0) {
      for (Node& slot : slots_) {
        if (slot.id != 0) {
          std::destroy_at(&slot);
          std::construct_at(&slot);
        }
      }
    }
    size_ = 0;
  }

  /// The number of slots (live or vacant): 0 until the first insert, then a
  /// power of two that only grows. For tests of clear() and growth.
  [[nodiscard]] std::size_t capacity() const noexcept { return slots_.size(); }

  /// Visits every live node, in slot order.
  template <class Fn>
  void for_each(Fn&& fn) const {
    if (size_ == 0) {
      return;
    }
    for (const Node& slot : slots_) {
      if (slot.id != 0) {
        fn(slot);
      }
    }
  }

  /// Throws std::logic_error if a live id is unreachable from its home slot,
  /// present twice, the count is off, or the load passed one half.
  void check_invariants(const char* owner) const {
    std::size_t live = 0;
    for (std::size_t at = 0; at < slots_.size(); ++at) {
      const std::uint64_t id = slots_[at].id;
      if (id == 0) {
        continue;
      }
      ++live;
      for (std::size_t probe = home(id); probe != at; probe = (probe + 1) & mask()) {
        if (slots_[probe].id == 0) {
          fail(owner, "id " + std::to_string(id) + " is unreachable from its home slot");
        }
        if (slots_[probe].id == id) {
          fail(owner, "id " + std::to_string(id) + " is present twice");
        }
      }
    }
    if (live != size_) {
      fail(owner, "counts " + std::to_string(size_) + " nodes, holds " + std::to_string(live));
    }
    if (size_ * 2 > slots_.size() && size_ != 0) {
      fail(owner, "load above one half");
    }
  }

 private:
  [[nodiscard]] std::size_t mask() const noexcept { return slots_.size() - 1; }
  [[nodiscard]] std::size_t home(std::uint64_t id) const noexcept {
    if constexpr (Sequential) {
      return static_cast<std::size_t>(id) & mask();
    } else {
      return static_cast<std::size_t>((id * 0x9E3779B97F4A7C15ull) >> shift_);
    }
  }

  void grow() {
    const std::size_t capacity = slots_.empty() ? 8 : slots_.size() * 2;
    std::vector<Node> old(capacity);
    old.swap(slots_);
    shift_ = 64u - static_cast<unsigned>(std::countr_zero(capacity));
    for (Node& node : old) {
      if (node.id != 0) {
        std::size_t at = home(node.id);
        while (slots_[at].id != 0) {
          at = (at + 1) & mask();
        }
        slots_[at] = std::move(node);
      }
    }
  }

  [[noreturn]] static void fail(const char* owner, const std::string& what) {
    throw std::logic_error(std::string(owner) + ": " + what);
  }

  std::vector<Node> slots_;
  std::size_t size_ = 0;
  unsigned shift_ = 64;
};

} // namespace taintpool::detail
