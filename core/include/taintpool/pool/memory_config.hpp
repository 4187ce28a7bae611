// MemoryConfig: how a MemoryManager routes sizes to pools (§3.4).
//
// A ladder of sliced pools, each with a page size and the largest slice it
// serves, then one exclusive pool for everything bigger, up to a cap. A
// request goes to the first sliced pool whose largest slice fits it, else to
// the exclusive pool, else it is BufferTooBig (P3).
//
// Why a ladder: small buffers want big pages carved finely (few storage
// calls, little waste per buffer); mid-size buffers want pages big enough
// to hold several; large buffers want a page each, so freeing one returns
// its memory whole. The defaults suit a GPU: 256-byte alignment, small
// buffers on 2 MiB pages, mid-size up to 32 MiB on 128 MiB pages.
#pragma once

#include <cstdint>
#include <vector>

namespace taintpool {

/// One sliced pool of the ladder.
struct SlicedPoolConfig {
  std::uint64_t page_size; ///< Bytes per page requested from storage.
  std::uint64_t max_slice; ///< Largest request this pool serves (≤ page_size).
};

/// A manager's pool ladder and limits; validated once, when the manager is
/// built, so a bad one fails there and never mid-run.
struct MemoryConfig {
  /// Every allocation's address is a multiple of this power of two; every
  /// slice's extent too. Must not exceed the storage's page alignment.
  std::uint64_t alignment = 256;

  /// Strictly ascending by max_slice; each page size a positive multiple of
  /// the alignment.
  std::vector<SlicedPoolConfig> sliced = {
      {std::uint64_t{2} << 20, std::uint64_t{64} << 10},
      {std::uint64_t{128} << 20, std::uint64_t{32} << 20},
  };

  /// Requests above the last sliced pool, up to this, get a page each;
  /// larger ones are BufferTooBig. At least the last max_slice, and at most
  /// 2^63 so that rounding a size up to the alignment cannot overflow (P2).
  std::uint64_t max_allocation = std::uint64_t{1} << 40;

  /// A free exclusive page is reused for a request only if the page is at
  /// most this many 1/8ths above it (bounding the waste reuse can cause).
  std::uint64_t exclusive_reuse_slack_eighths = 1;

  /// A free exclusive page is given back to storage once this many
  /// allocations have been served since it became free.
  std::uint64_t exclusive_release_after = 64;

  /// Throws std::invalid_argument naming the first inconsistency among the
  /// constraints above, checked against the storage's page alignment.
  void validate(std::uint64_t storage_alignment) const;
};

} // namespace taintpool
