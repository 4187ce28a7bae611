// CudaStorage: pages of GPU memory for the pool (§3.4, P3).
//
// Two ways to get a page, chosen once per storage:
//   * synchronous — cudaMalloc / cudaFree: a page exists as soon as
//     allocate returns; cudaFree waits for the device. The default.
//   * stream-ordered — cudaMallocAsync / cudaFreeAsync on one stream (the
//     CudaBackend's): allocation and release are ordered with the work on
//     that stream, from the device's default memory pool. Work on *other*
//     streams must not touch a page before the stream has reached its
//     allocation (the backend launches everything on its one stream, so its
//     users get this for free).
//
// Virtual memory (virtual_memory.hpp), on by default for synchronous pages
// where the device supports it: the CUDA driver's cuMemAddressReserve
// reserves address space, cuMemCreate + cuMemMap + cuMemSetAccess back a
// range of it with a new physical chunk (read-write for this device), and
// cuMemUnmap + cuMemRelease give the chunk back — after the device has
// finished its work (cuCtxSynchronize, as cudaFree would wait). With it the
// pool's arena is one growing range per lane, like c10's expandable
// segments. Support is asked once, on first use (the constructor still makes
// no CUDA call); a device without it gets plain pages.
//
// Why so small: it is a Storage (storage.hpp) and nothing else. The pool
// asks it for large pages rarely and carves slices itself, so each call may
// cost a driver round trip; fault injection and counting are the generic
// adaptors (FaultInjectingStorage, CountingStorage) wrapped around it.
//
// Errors (P3): a page the driver will not give — out of memory, or any other
// driver error — throws StorageExhausted naming the device, the call, the
// size and the driver's error name and text ("cudaErrorMemoryAllocation (out
// of memory)"); MemoryManager turns that into OutOfMemory with its own
// breakdown. The runtime's per-thread last error is cleared on the way out,
// so the next launch is not blamed for it.
//
// Alignment: 256 (what cudaMalloc guarantees) or 512. A page the driver
// returns less aligned than asked is given back and requested again with
// room to align it; the few such pages are remembered so they are freed by
// their real address.
//
// Threading: like every Storage, one thread (the manager's) calls it. It
// makes its device current around each call and restores the caller's.
#pragma once

#include <taintpool/pool/storage.hpp>
#include <taintpool/pool/virtual_memory.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

struct CUstream_st; // cudaStream_t is CUstream_st*; named here so no CUDA header is needed.

namespace taintpool::cuda {

/// A CUDA stream, as the runtime's cudaStream_t (the same type).
using Stream = CUstream_st*;

/// How a CudaStorage gets its pages; checked by its constructor.
struct CudaStorageOptions {
  int device = 0;                ///< The CUDA device the pages live on.
  std::uint64_t alignment = 256; ///< Page alignment: 256 or 512.
  bool stream_ordered = false;   ///< cudaMallocAsync/cudaFreeAsync on `stream`.
  Stream stream = nullptr;       ///< For stream-ordered pages (null: the legacy default stream).
  /// Offer virtual memory where the device supports it (not with
  /// stream-ordered pages, whose pool the driver manages).
  bool virtual_memory = true;
};

class CudaStorage final : public Storage, public VirtualMemory {
 public:
  /// Makes no CUDA call: constructing one never fails for want of a GPU.
  /// Throws std::invalid_argument for an alignment other than 256 or 512.
  explicit CudaStorage(CudaStorageOptions options = {});
  /// Pages still held are given back (errors ignored: the context may be gone).
  ~CudaStorage() override;
  CudaStorage(const CudaStorage&) = delete;
  CudaStorage& operator=(const CudaStorage&) = delete;

  /// options.alignment: 256 or 512.
  [[nodiscard]] std::uint64_t alignment() const noexcept override { return options_.alignment; }
  /// One cudaMalloc (or cudaMallocAsync) with the device made current: a
  /// driver round trip. Throws StorageExhausted on any driver error (P3).
  [[nodiscard]] StorageHandle allocate(std::uint64_t size) override;
  /// cudaFree (waits for the device) or cudaFreeAsync on the stream; errors
  /// are cleared, not reported.
  void deallocate(StorageHandle handle, std::uint64_t size) noexcept override;
  /// The handle is the device address: no lookup, no CUDA call.
  [[nodiscard]] void* resolve(StorageHandle handle) const noexcept override {
    return reinterpret_cast<void*>(handle.value);
  }
  /// "cuda device 0" or "cuda device 0 (stream-ordered)".
  [[nodiscard]] std::string name() const override;
  /// This storage when options.virtual_memory was asked for, pages are not
  /// stream-ordered and the device supports virtual memory management
  /// (asked once, on the first call: one driver query); else null.
  [[nodiscard]] VirtualMemory* virtual_memory() noexcept override;

  /// VirtualMemory through the CUDA driver (see above). granularity() is the
  /// device's minimum allocation granularity (2 MiB on current GPUs). map()
  /// throws StorageExhausted naming the driver call and error; unmap() waits
  /// for the device first.
  [[nodiscard]] std::uint64_t granularity() const noexcept override { return granularity_; }
  [[nodiscard]] StorageHandle reserve(std::uint64_t size) override;
  void unreserve(StorageHandle reservation, std::uint64_t size) noexcept override;
  [[nodiscard]] StorageHandle map(StorageHandle reservation, std::uint64_t offset,
                                  std::uint64_t size) override;
  void unmap(StorageHandle reservation, std::uint64_t offset, std::uint64_t size,
             StorageHandle chunk) noexcept override;

  /// options.device.
  [[nodiscard]] int device() const noexcept { return options_.device; }
  /// Whether pages come from cudaMallocAsync on stream().
  [[nodiscard]] bool stream_ordered() const noexcept { return options_.stream_ordered; }
  /// options.stream (null: the legacy default stream).
  [[nodiscard]] Stream stream() const noexcept { return options_.stream; }
  /// Pages and mapped chunks currently held, and their bytes (as requested).
  [[nodiscard]] std::uint64_t pages() const noexcept { return pages_; }
  [[nodiscard]] std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  [[nodiscard]] void* raw_allocate(std::uint64_t size, const char*& call);
  void raw_free(void* pointer) noexcept;

  CudaStorageOptions options_;
  bool virtual_memory_asked_ = false;
  bool virtual_memory_supported_ = false;
  std::uint64_t granularity_ = std::uint64_t{2} << 20;
  std::uint64_t pages_ = 0;
  std::uint64_t bytes_ = 0;
  /// (aligned address, address the driver returned) for over-allocated pages.
  std::vector<std::pair<std::uint64_t, void*>> shifted_;
};

} // namespace taintpool::cuda
