// VirtualMemory: the optional capability of a Storage to reserve address
// space first and back parts of it with memory later (§3.4).
//
// Why: a pool that can only ask for whole pages must either give every large
// buffer a page of its own (idle pages of the wrong size pin memory) or carve
// large buffers out of a few big pages (free space splinters across pages,
// so a request can fail to fit although enough is free). With address space
// reserved up front, the pool's large-buffer arena is one contiguous range
// per lane that grows by backing its next bytes with memory: free
// neighbours always merge, and nothing is reserved that was not needed. It
// is what CUDA's virtual memory management offers (cuMemAddressReserve,
// cuMemCreate + cuMemMap + cuMemSetAccess) and what c10's expandable
// segments use; on the host it is mmap with PROT_NONE, committed on demand.
//
// Shape: a capability, not a Storage subclass, so adaptors stay adaptors. A
// Storage that has it returns it from Storage::virtual_memory(); one that
// has not returns null and the pool falls back to pages. Counting and fault
// injection wrap it as they wrap the storage (CountingStorage,
// FaultInjectingStorage), so a refused map is tested like a refused page.
//
// Costs: every call is a cold-path system or driver call. The pool maps in
// chunks of at least the granularity and keeps what it mapped until
// cleanup() or the out-of-memory path gives free chunks back; a warm pool
// calls none of this.
//
// Threading: like Storage, one thread (the manager's) calls it.
#pragma once

#include <taintpool/pool/storage.hpp>

#include <cstdint>

namespace taintpool {

/// Reserve address space, back ranges of it with memory (see above).
class VirtualMemory {
 public:
  virtual ~VirtualMemory() = default;

  /// Reservation sizes, map offsets and map sizes are multiples of this power
  /// of two (CUDA: the allocation granularity, 2 MiB on current GPUs). At
  /// least the storage's alignment().
  [[nodiscard]] virtual std::uint64_t granularity() const noexcept = 0;

  /// Reserves `size` bytes of address space (a positive multiple of the
  /// granularity) with nothing behind it. Storage::resolve() of the handle is
  /// its base address, aligned to the storage's alignment(). Throws
  /// StorageExhausted when the space cannot be had; nothing is reserved then.
  [[nodiscard]] virtual StorageHandle reserve(std::uint64_t size) = 0;

  /// Gives back address space reserve() gave (with the size it was asked
  /// for). Nothing in it may still be mapped.
  virtual void unreserve(StorageHandle reservation, std::uint64_t size) noexcept = 0;

  /// Backs [offset, offset + size) of the reservation with new memory,
  /// readable and writable, as one chunk. The range must lie in the
  /// reservation, be granularity-aligned and not be mapped. Returns the
  /// chunk's handle (nonzero). Throws StorageExhausted when the memory cannot
  /// be had; nothing is mapped then.
  [[nodiscard]] virtual StorageHandle map(StorageHandle reservation, std::uint64_t offset,
                                          std::uint64_t size) = 0;

  /// Unmaps one chunk exactly as map() made it and frees its memory. Work
  /// that may still use it must be finished (CudaStorage waits for the
  /// device first).
  virtual void unmap(StorageHandle reservation, std::uint64_t offset, std::uint64_t size,
                     StorageHandle chunk) noexcept = 0;

 protected:
  VirtualMemory() = default;
  VirtualMemory(const VirtualMemory&) = default;
  VirtualMemory& operator=(const VirtualMemory&) = default;
  VirtualMemory(VirtualMemory&&) = default;
  VirtualMemory& operator=(VirtualMemory&&) = default;
};

} // namespace taintpool
