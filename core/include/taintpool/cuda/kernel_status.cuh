// Device-side helpers for checked kernels: mark a tile finished, report a
// failure (§3.6; the slot's layout and guarantees are in kernel_status.hpp).
//
// Include from .cu files only. Every helper is a no-op on a KernelStatus
// with no slot (an unchecked launch), so one kernel serves both.
//
// Cost: one atomicOr per finished tile, one atomicCAS plus one atomicAdd
// per reported failure — nothing on the path of a thread that does neither.
//
// Ordering: the host reads the slot only after the stream has finished the
// kernel, so every write of the kernel is visible by then; no fence is
// needed. What *is* needed is that a tile is marked only after all of its
// bytes are written — block_finished_tile does the __syncthreads() for a
// block that writes one tile; a kernel whose tiles span blocks must mark
// from the last block to finish (e.g. after a grid-wide counter).
#pragma once

#include <taintpool/cuda/kernel_status.hpp>

namespace taintpool::cuda {

/// Tile `tile` of output `output` is finished: all its bytes are written.
/// A mark outside that output's tiles is counted and ignored (so the tile it
/// meant stays unwritten, and the launch fails when the host reads the slot).
__device__ inline void mark_tile_done(const KernelStatus& status, std::uint32_t output,
                                      std::uint32_t tile) {
  if (status.words == nullptr) {
    return;
  }
  if (output >= kMaxCheckedOutputs ||
      tile >= status.first_tile[output + 1] - status.first_tile[output]) {
    atomicAdd(&status.words[1], 1u);
    return;
  }
  const std::uint32_t bit = status.first_tile[output] + tile;
  atomicOr(&status.words[kStatusHeaderWords + bit / 32], 1u << (bit % 32));
}

/// mark_tile_done for a block that wrote the tile cooperatively: waits for
/// every thread of the block, then one thread marks. Every thread of the
/// block must call it (it contains __syncthreads()).
__device__ inline void block_finished_tile(const KernelStatus& status, std::uint32_t output,
                                           std::uint32_t tile) {
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    mark_tile_done(status, output, tile);
  }
}

/// The kernel failed: `code` (nonzero; 0 becomes kUnspecifiedFailure) is
/// what the launch's failure will name. The first code reported wins; later
/// ones are ignored. Tiles marked done still count as written (S2).
__device__ inline void report_failure(const KernelStatus& status, std::uint32_t code) {
  if (status.words == nullptr) {
    return;
  }
  atomicCAS(&status.words[0], 0u, code == 0 ? kUnspecifiedFailure : code);
}

/// Whether some thread of this launch has reported failure already (a hint
/// for stopping early; it may lag behind other blocks' reports).
__device__ inline bool failure_reported(const KernelStatus& status) {
  return status.words != nullptr && *static_cast<volatile std::uint32_t*>(status.words) != 0;
}

} // namespace taintpool::cuda
