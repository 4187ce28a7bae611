// MemoryConfig: how a MemoryManager routes sizes to pools (§3.4).
//
// A ladder of sliced pools, each with a page size and the largest slice it
// serves, then one arena for everything bigger, up to a cap. A request goes
// to the first sliced pool whose largest slice fits it, else to the arena,
// else it is BufferTooBig (P3).
//
// Why a ladder and an arena: small buffers want big pages carved finely (few
// storage calls, little waste per buffer, exact-size reuse for free). Large
// buffers are where memory goes, and real training and inference allocate
// them in ever-changing mixes of sizes, so they share one best-fit arena per
// lane: a free range serves any request it fits (split, the rest stays
// free), free neighbours merge at once, and the arena grows only when no
// free range fits. Where the storage offers virtual memory
// (virtual_memory.hpp) the arena is one reserved address range that grows
// by mapping its next bytes, so free space never splinters across pages;
// elsewhere it grows by pages sized by the same rule. The defaults suit a
// GPU: 256-byte alignment, buffers up to 64 KiB on 2 MiB pages, everything
// larger in the arena.
#pragma once

#include <taintpool/pool/fresh_bytes.hpp>

#include <cstdint>
#include <vector>

namespace taintpool {

class AllocationObserver;

/// One sliced pool of the ladder.
struct SlicedPoolConfig {
  std::uint64_t page_size; ///< Bytes per page requested from storage.
  std::uint64_t max_slice; ///< Largest request this pool serves (≤ page_size).
};

/// A manager's pool ladder, arena and limits; validated once, when the
/// manager is built, so a bad one fails there and never mid-run.
struct MemoryConfig {
  /// Every allocation's address is a multiple of this power of two; every
  /// slice's extent too. Must not exceed the storage's page alignment.
  std::uint64_t alignment = 256;

  /// Strictly ascending by max_slice; each page size a positive multiple of
  /// the alignment.
  std::vector<SlicedPoolConfig> sliced = {
      {std::uint64_t{2} << 20, std::uint64_t{64} << 10},
  };

  /// Requests above the last sliced pool, up to this, go to the arena;
  /// larger ones are BufferTooBig. At least the last max_slice, and below
  /// 2^63 (validate refuses 2^63 itself) so that rounding a size up cannot
  /// overflow (P2). The arena knobs below are bounded the same way.
  std::uint64_t max_allocation = std::uint64_t{1} << 40;

  /// Address space the arena reserves at a time, per lane, when the storage
  /// has virtual memory (a request larger than this gets a reservation of
  /// its own size). Address space costs no memory: more than the device
  /// holds, so one reservation is all a lane needs. Positive.
  std::uint64_t arena_address_space = std::uint64_t{256} << 30;

  /// When the arena must grow, it grows by at least 1/divisor of what it
  /// holds already (0: by exactly what the request needs), and at least
  /// arena_min_growth; rounded up to the storage's granularity. Growing in
  /// steps that scale with the arena keeps cold start to a few dozen storage
  /// calls; 1/64 bounds what the last step can overshoot to 1.6%.
  std::uint64_t arena_growth_divisor = 64;

  /// The smallest step the arena grows by (see above): a positive multiple
  /// of the alignment. Without virtual memory, the smallest page it asks for.
  std::uint64_t arena_min_growth = std::uint64_t{2} << 20;

  /// While the arena is young it grows by at least what it holds already,
  /// up to this many bytes a step (0: off): 2, 4, 8, 16, then 16 MiB steps
  /// until 1/divisor takes over at 1 GiB. Why: every growth is a storage
  /// call (on CUDA a cuMemCreate + cuMemMap + cuMemSetAccess, tens of
  /// microseconds), and a fresh manager filling a few hundred MiB would
  /// otherwise make one per 2 MiB — 64 calls to reach 128 MiB, where this
  /// makes 11. What it costs: at most this much mapped and not yet used
  /// when the arena stops growing, which is under 4% from 0.4 GiB on (the
  /// step is at most what the arena holds, so a small arena at most
  /// doubles). A multiple of the alignment.
  std::uint64_t arena_ramp_growth = std::uint64_t{16} << 20;

  /// Where the storage has virtual memory: the arena learns which requests'
  /// freed blocks left holes a later growth could not use (the loss
  /// computation of a training step: X, Y, 2X, X freed, 2X) and gives their
  /// blocks a reserved range of their own, where the hole joins the next
  /// growth. What it buys: peak reserve within 1-3% of the peak in use on
  /// bert_train and llama_train_bf16 (6.5% and 7.9% without), still with
  /// no storage call after the first step. What it costs: a hash per arena
  /// request, one more reservation of address space. Off: the plain best
  /// fit.
  bool arena_sets_hole_makers_apart = true;
  /// Told of every page and every allocation (allocation_observer.hpp), or
  /// null: none, the default, which costs nothing. Borrowed: it must
  /// outlive the manager. cuda::NvtxRegions is one (CudaBackend sets it
  /// under compute-sanitizer).
  AllocationObserver* observer = nullptr;

  /// What a fresh allocation's bytes count as (N1, fresh_bytes.hpp):
  /// Trusted (written, as D1 has always said; the default) or NeverWritten
  /// (claimed by the manager's NeverWritten failure until written).
  FreshBytes fresh_bytes = FreshBytes::Trusted;

  /// Throws std::invalid_argument naming the first inconsistency among the
  /// constraints above, checked against the storage's page alignment.
  void validate(std::uint64_t storage_alignment) const;
};

} // namespace taintpool
