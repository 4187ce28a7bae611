// MemoryStats: what a MemoryManager holds, exactly (P2).
//
// The byte and count figures are maintained incrementally on the paths that
// change them and recomputed from scratch by check_invariants(), so "exact"
// is tested, not hoped. largest_free_block is the exception: it is measured
// when MemoryManager::stats() is called.
#pragma once

#include <cstdint>

namespace taintpool {

/// A snapshot of one manager's memory, from MemoryManager::stats().
struct MemoryStats {
  std::uint64_t in_use = 0;      ///< Bytes live allocations asked for.
  std::uint64_t padding = 0;     ///< Bytes live allocations occupy beyond that (alignment).
  std::uint64_t reserved = 0;    ///< Bytes of pages held from storage.
  std::uint64_t allocations = 0; ///< Live allocations.
  std::uint64_t pages = 0;       ///< Pages held from storage.
  /// The largest free extent in any one pool, after merging. An upper bound
  /// on a request served without a new page: a request goes to the pool its
  /// size routes to, which may hold less.
  std::uint64_t largest_free_block = 0;
  std::uint64_t peak_in_use = 0;   ///< Highest in_use since the manager was built.
  std::uint64_t peak_reserved = 0; ///< Highest reserved since the manager was built.

  /// Reserved bytes no live allocation occupies.
  [[nodiscard]] std::uint64_t free() const noexcept { return reserved - in_use - padding; }

  /// 1 − largest free block / total free: 0 when free memory is one block
  /// (or none), towards 1 as it shatters.
  [[nodiscard]] double fragmentation() const noexcept {
    const std::uint64_t total = free();
    return total == 0 ? 0.0
                      : 1.0 - static_cast<double>(largest_free_block) / static_cast<double>(total);
  }

  /// Peak reserved over peak in use: what the pool costs at its worst.
  [[nodiscard]] double peak_overhead() const noexcept {
    return peak_in_use == 0 ? 0.0
                            : static_cast<double>(peak_reserved) / static_cast<double>(peak_in_use);
  }
};

} // namespace taintpool
