#include <taintpool/cuda/cuda_storage.hpp>

#include <algorithm>
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>

#include "cuda_error.hpp"

namespace taintpool::cuda {

namespace {

cudaStream_t as_stream(Stream stream) noexcept {
  return stream;
}

} // namespace

CudaStorage::CudaStorage(CudaStorageOptions options)
    : options_(options) {
  if (options_.alignment != 256 && options_.alignment != 512) {
    throw std::invalid_argument("CudaStorage: alignment " + std::to_string(options_.alignment) +
                                " is not 256 or 512");
  }
}

// The pool gives every page back before its storage goes; anything left is
// a page whose owner outlived us, and nothing can be done for it here.
CudaStorage::~CudaStorage() = default;

std::string CudaStorage::name() const {
  std::string text = "cuda device " + std::to_string(options_.device);
  if (options_.stream_ordered) {
    text += " (stream-ordered)";
  }
  return text;
}

// Not const, though no member changes: it hands out the storage's device memory.
// NOLINTNEXTLINE(readability-make-member-function-const)
void* CudaStorage::raw_allocate(std::uint64_t size, const char*& call) {
  void* pointer = nullptr;
  cudaError_t error = cudaSuccess;
  if (options_.stream_ordered) {
    call = "cudaMallocAsync";
    error = cudaMallocAsync(&pointer, static_cast<std::size_t>(size), as_stream(options_.stream));
  } else {
    call = "cudaMalloc";
    error = cudaMalloc(&pointer, static_cast<std::size_t>(size));
  }
  if (error != cudaSuccess) {
    // Clear the per-thread last error: a failed page is reported here, as
    // StorageExhausted, and must not also fail the next launch.
    static_cast<void>(cudaGetLastError());
    throw StorageExhausted(name() + ": " + call + " of " + std::to_string(size) +
                           " bytes failed: " + detail::describe(error));
  }
  return pointer;
}

// Not const, though no member changes: it takes back the storage's device memory.
// NOLINTNEXTLINE(readability-make-member-function-const)
void CudaStorage::raw_free(void* pointer) noexcept {
  const cudaError_t error = options_.stream_ordered
                                ? cudaFreeAsync(pointer, as_stream(options_.stream))
                                : cudaFree(pointer);
  if (error != cudaSuccess) {
    // A poisoned context refuses even frees; the memory goes with it.
    static_cast<void>(cudaGetLastError());
  }
}

StorageHandle CudaStorage::allocate(std::uint64_t size) {
  if (size == 0 || size > static_cast<std::uint64_t>(PTRDIFF_MAX)) {
    throw StorageExhausted(name() + ": cannot allocate a page of " + std::to_string(size) +
                           " bytes");
  }
  const detail::DeviceGuard guard(options_.device);
  if (guard.error() != cudaSuccess) {
    throw StorageExhausted(name() +
                           ": cannot make the device current: " + detail::describe(guard.error()));
  }
  const char* call = "";
  void* pointer = raw_allocate(size, call);
  auto address = reinterpret_cast<std::uintptr_t>(pointer);
  if (address % options_.alignment != 0) {
    // Only possible for 512: the driver promises 256. Ask again with room to
    // align, and remember the real address for the free.
    raw_free(pointer);
    const std::uint64_t padded = size + options_.alignment;
    pointer = raw_allocate(padded, call);
    address = reinterpret_cast<std::uintptr_t>(pointer);
    const std::uint64_t aligned =
        (address + options_.alignment - 1) / options_.alignment * options_.alignment;
    try {
      shifted_.emplace_back(aligned, pointer);
    } catch (...) {
      raw_free(pointer);
      throw StorageExhausted(name() + ": out of host memory recording an aligned page");
    }
    address = static_cast<std::uintptr_t>(aligned);
  }
  ++pages_;
  bytes_ += size;
  return StorageHandle{static_cast<std::uint64_t>(address)};
}

void CudaStorage::deallocate(StorageHandle handle, std::uint64_t size) noexcept {
  if (!handle) {
    return;
  }
  const detail::DeviceGuard guard(options_.device);
  void* pointer = resolve(handle);
  const auto shifted = std::find_if(
      shifted_.begin(), shifted_.end(),
      [&](const std::pair<std::uint64_t, void*>& page) { return page.first == handle.value; });
  if (shifted != shifted_.end()) {
    pointer = shifted->second;
    shifted_.erase(shifted);
  }
  raw_free(pointer);
  --pages_;
  bytes_ -= size;
}

} // namespace taintpool::cuda
