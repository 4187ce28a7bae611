// MemoryStats: what a MemoryManager holds, exactly (P2).
//
// Every figure is maintained incrementally on the paths that change it and
// recomputed from scratch by check_invariants(), so "exact" is tested, not
// hoped.
#pragma once

#include <cstdint>

namespace taintpool {

struct MemoryStats {
  std::uint64_t in_use = 0;             ///< Bytes live allocations asked for.
  std::uint64_t padding = 0;            ///< Bytes live allocations occupy beyond that (alignment).
  std::uint64_t reserved = 0;           ///< Bytes of pages held from storage.
  std::uint64_t allocations = 0;        ///< Live allocations.
  std::uint64_t pages = 0;              ///< Pages held from storage.
  std::uint64_t largest_free_block = 0; ///< Largest single request that fits without a new page.
  std::uint64_t peak_in_use = 0;
  std::uint64_t peak_reserved = 0;

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
