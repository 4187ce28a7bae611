// KernelStatus: how a checked CUDA kernel tells the backend it failed, and
// which tiles of its outputs it did finish (§3.6; S2 on an asynchronous
// device).
//
// Why this shape. A kernel cannot return an error: whatever it decides is
// known to the host only after the stream has run it. So a checked launch
// gets a few words of device memory — a *status slot* — that its threads
// write with atomics, and the backend reads every slot at the next
// synchronisation (CudaBackend::synchronize), turning a reported failure
// into a LateFailure the Device attributes to the launch's write set and to
// everything that consumed it since.
//
// The slot is passed to the kernel *by value*: this struct is 48 bytes of
// kernel parameters — a device pointer, the tile count and each output's
// first tile — so marking a tile is one atomicOr with no extra load, and no
// per-launch host-to-device copy is needed to describe the layout.
//
// What it guarantees. A tile counts as written iff some thread marked it
// (kernel_status.cuh: mark_tile_done / block_finished_tile). A launch is
// confirmed good iff no failure was reported and every tile was marked;
// anything else is a failure whose written ranges are exactly the marked
// tiles. So an early return, a too-small grid or a forgotten mark can only
// make the backend taint *more* bytes, never release bytes nobody wrote
// (D1). Marks outside an output's tiles are counted and ignored.
//
// Layout of a slot in device memory (32-bit words):
//   [0] failure code: 0 = none; the first nonzero code reported wins;
//   [1] marks that named a tile outside its output (a kernel bug), counted;
//   [2 …] one bit per tile, outputs' tiles numbered one after another.
//
// Plain C++ (no CUDA types), so host code can hold and pass it; the
// __device__ helpers live in kernel_status.cuh.
#pragma once

#include <cstdint>

namespace taintpool::cuda {

/// Most outputs one checked launch can describe. Fixed so the struct stays a
/// small by-value kernel parameter; a launch with more outputs splits them,
/// or is checked as fewer (wider) outputs.
inline constexpr std::uint32_t kMaxCheckedOutputs = 8;

/// Words of a slot before its tile bitmap.
inline constexpr std::uint32_t kStatusHeaderWords = 2;

/// The failure code used when a kernel reports failure with code 0.
inline constexpr std::uint32_t kUnspecifiedFailure = 0xFFFF'FFFFu;

/// One checked launch's status slot and tile layout, passed to its kernel by
/// value (48 bytes; see above). Default: no slot, which every helper ignores.
struct KernelStatus {
  /// The slot in device memory (see the layout above); null for an
  /// unchecked launch, which every helper then ignores.
  std::uint32_t* words = nullptr;
  /// Tiles over all outputs.
  std::uint32_t tiles = 0;
  /// Output o owns tiles [first_tile[o], first_tile[o + 1]); outputs past
  /// the launch's count own none.
  std::uint32_t first_tile[kMaxCheckedOutputs + 1] = {};
};

} // namespace taintpool::cuda
