// CountingStorage: a Storage adaptor that counts what passes through it —
// requests, pages, mapped chunks and bytes live, peaks — so benchmarks and
// tests can show that a workload reached the storage only as often as it
// should (the pool's steady state: never).
#pragma once

#include <taintpool/pool/storage.hpp>
#include <taintpool/pool/virtual_memory.hpp>

#include <cstdint>

namespace taintpool {

/// What a CountingStorage has seen since it was built.
struct StorageCounts {
  std::uint64_t allocations = 0;   ///< Successful allocate calls.
  std::uint64_t deallocations = 0; ///< deallocate calls.
  std::uint64_t failures = 0;      ///< allocate, reserve and map calls that threw.
  std::uint64_t reserves = 0;      ///< Successful reserve calls (address space only).
  std::uint64_t unreserves = 0;    ///< unreserve calls.
  std::uint64_t maps = 0;          ///< Successful map calls.
  std::uint64_t unmaps = 0;        ///< unmap calls.
  std::uint64_t live_bytes = 0;    ///< Bytes allocated or mapped and not yet given back.
  std::uint64_t peak_bytes = 0;    ///< Highest live_bytes ever seen.

  /// Every call that reached the storage and succeeded or gave memory back:
  /// what "no storage call in steady state" counts.
  [[nodiscard]] std::uint64_t calls() const noexcept {
    return allocations + deallocations + reserves + unreserves + maps + unmaps;
  }
};

/// Forwards every call to `inner` and counts it; adds no behaviour. Offers
/// virtual memory exactly when `inner` does, counted the same way.
class CountingStorage final : public Storage, public VirtualMemory {
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
  void append_name(std::string& text) const override { inner_.append_name(text); }
  /// This adaptor when `inner` has virtual memory, else null.
  [[nodiscard]] VirtualMemory* virtual_memory() noexcept override;

  /// VirtualMemory, forwarded to inner's and counted as above.
  [[nodiscard]] std::uint64_t granularity() const noexcept override;
  [[nodiscard]] StorageHandle reserve(std::uint64_t size) override;
  void unreserve(StorageHandle reservation, std::uint64_t size) noexcept override;
  [[nodiscard]] StorageHandle map(StorageHandle reservation, std::uint64_t offset,
                                  std::uint64_t size) override;
  void unmap(StorageHandle reservation, std::uint64_t offset, std::uint64_t size,
             StorageHandle chunk) noexcept override;

 private:
  void gained(std::uint64_t size) noexcept;
  void lost(std::uint64_t size) noexcept;

  Storage& inner_;
  StorageCounts counts_;
};

} // namespace taintpool
