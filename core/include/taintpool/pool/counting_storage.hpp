// CountingStorage: a Storage adaptor that counts what passes through it —
// requests, pages and bytes live, peaks — so benchmarks and tests can show
// that a workload reached the storage only as often as it should (the pool's
// steady state: never).
#pragma once

#include <taintpool/pool/storage.hpp>

#include <cstdint>

namespace taintpool {

/// What a CountingStorage has seen since it was built.
struct StorageCounts {
  std::uint64_t allocations = 0;   ///< Successful allocate calls.
  std::uint64_t deallocations = 0; ///< deallocate calls.
  std::uint64_t failures = 0;      ///< allocate calls that threw.
  std::uint64_t live_bytes = 0;    ///< Bytes allocated and not yet deallocated.
  std::uint64_t peak_bytes = 0;    ///< Highest live_bytes ever seen.
};

/// Forwards every call to `inner` and counts it; adds no behaviour.
class CountingStorage final : public Storage {
 public:
  /// `inner` must outlive this adaptor.
  explicit CountingStorage(Storage& inner) noexcept
      : inner_(inner) {}

  /// The totals so far.
  [[nodiscard]] const StorageCounts& counts() const noexcept { return counts_; }

  /// Storage, forwarded unchanged. allocate and deallocate also count: a
  /// throwing allocate counts as a failure and rethrows.
  [[nodiscard]] std::uint64_t alignment() const noexcept override { return inner_.alignment(); }
  [[nodiscard]] StorageHandle allocate(std::uint64_t size) override;
  void deallocate(StorageHandle handle, std::uint64_t size) noexcept override;
  [[nodiscard]] void* resolve(StorageHandle handle) const noexcept override {
    return inner_.resolve(handle);
  }
  [[nodiscard]] std::string name() const override { return inner_.name(); }

 private:
  Storage& inner_;
  StorageCounts counts_;
};

} // namespace taintpool
