// ObservedStorage: a Storage adaptor that tells an AllocationObserver of
// every range of memory passing through it (allocation_observer.hpp).
//
// Why an adaptor: the pool takes pages in a few places (sliced pages, arena
// pages, arena chunks mapped into a reservation) and gives them back in a
// few more. All of them go through the storage, so the one place that sees
// every page is a storage wrapped around the real one. MemoryManager puts
// one between its pools and the storage when MemoryConfig::observer is set;
// the pools do not know it is there.
//
// What it reports: a page from allocate() and a chunk from map() as added
// (after the inner storage succeeded), the same before deallocate() and
// unmap() as removed. Reservations are address space without memory: not
// reported. Offers virtual memory exactly when the inner storage does and
// the observer accepts mapped chunks.
//
// Costs: one virtual call per page event, which is rare (the pool's steady
// state makes no storage call).
#pragma once

#include <taintpool/pool/allocation_observer.hpp>
#include <taintpool/pool/storage.hpp>
#include <taintpool/pool/virtual_memory.hpp>

#include <cstdint>
#include <string>

namespace taintpool {

/// Forwards to `inner` and reports pages and chunks to `observer` (see
/// above); adds no other behaviour.
class ObservedStorage final : public Storage, public VirtualMemory {
 public:
  /// Both must outlive this adaptor.
  ObservedStorage(Storage& inner, AllocationObserver& observer) noexcept
      : inner_(inner)
      , observer_(observer) {}

  [[nodiscard]] std::uint64_t alignment() const noexcept override { return inner_.alignment(); }
  /// inner.allocate, then on_page_added; if the observer throws, the page
  /// is given back and the exception goes on.
  [[nodiscard]] StorageHandle allocate(std::uint64_t size) override;
  /// on_page_removed, then inner.deallocate.
  void deallocate(StorageHandle handle, std::uint64_t size) noexcept override;
  [[nodiscard]] void* resolve(StorageHandle handle) const noexcept override {
    return inner_.resolve(handle);
  }
  [[nodiscard]] std::string name() const override { return inner_.name(); }
  void append_name(std::string& text) const override { inner_.append_name(text); }
  /// This adaptor when `inner` has virtual memory and the observer accepts
  /// mapped chunks (AllocationObserver::accepts_mapped_chunks), else null.
  [[nodiscard]] VirtualMemory* virtual_memory() noexcept override;

  /// VirtualMemory, forwarded; map and unmap report the chunk as allocate
  /// and deallocate report a page.
  [[nodiscard]] std::uint64_t granularity() const noexcept override;
  [[nodiscard]] StorageHandle reserve(std::uint64_t size) override;
  void unreserve(StorageHandle reservation, std::uint64_t size) noexcept override;
  [[nodiscard]] StorageHandle map(StorageHandle reservation, std::uint64_t offset,
                                  std::uint64_t size) override;
  void unmap(StorageHandle reservation, std::uint64_t offset, std::uint64_t size,
             StorageHandle chunk) noexcept override;

 private:
  [[nodiscard]] const std::byte* chunk_base(StorageHandle reservation,
                                            std::uint64_t offset) const noexcept {
    return static_cast<const std::byte*>(inner_.resolve(reservation)) + offset;
  }

  Storage& inner_;
  AllocationObserver& observer_;
};

} // namespace taintpool
