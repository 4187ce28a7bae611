// HostStorage: pages of aligned host memory — the embedded default backend,
// and the storage every CPU test, fuzzer and benchmark runs on.
//
// A page is one aligned operator new; its handle is its address. Nothing is
// cached here: pooling is the pool's job, and a storage that also cached
// would hide the pool's own reuse from the benchmarks.
#pragma once

#include <taintpool/pool/storage.hpp>

namespace taintpool {

/// Aligned host pages (see above); one operator new per page, no cache.
class HostStorage final : public Storage {
 public:
  /// Pages aligned to `alignment` (a power of two, at least 8). 256 matches
  /// what CUDA guarantees for device allocations. Throws
  /// std::invalid_argument otherwise.
  explicit HostStorage(std::uint64_t alignment = 256);

  /// The constructor's alignment.
  [[nodiscard]] std::uint64_t alignment() const noexcept override { return alignment_; }
  /// One aligned, nothrow operator new. Throws StorageExhausted for size 0,
  /// a size beyond PTRDIFF_MAX, or a refusal by the system.
  [[nodiscard]] StorageHandle allocate(std::uint64_t size) override;
  /// The matching aligned operator delete.
  void deallocate(StorageHandle handle, std::uint64_t size) noexcept override;
  /// The handle is the address: no lookup.
  [[nodiscard]] void* resolve(StorageHandle handle) const noexcept override;
  /// "host".
  [[nodiscard]] std::string name() const override { return "host"; }

 private:
  std::uint64_t alignment_;
};

} // namespace taintpool
