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
};

class CudaStorage final : public Storage {
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

  /// options.device.
  [[nodiscard]] int device() const noexcept { return options_.device; }
  /// Whether pages come from cudaMallocAsync on stream().
  [[nodiscard]] bool stream_ordered() const noexcept { return options_.stream_ordered; }
  /// options.stream (null: the legacy default stream).
  [[nodiscard]] Stream stream() const noexcept { return options_.stream; }
  /// Pages currently held, and their bytes (as requested).
  [[nodiscard]] std::uint64_t pages() const noexcept { return pages_; }
  [[nodiscard]] std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  [[nodiscard]] void* raw_allocate(std::uint64_t size, const char*& call);
  void raw_free(void* pointer) noexcept;

  CudaStorageOptions options_;
  std::uint64_t pages_ = 0;
  std::uint64_t bytes_ = 0;
  /// (aligned address, address the driver returned) for over-allocated pages.
  std::vector<std::pair<std::uint64_t, void*>> shifted_;
};

} // namespace taintpool::cuda
