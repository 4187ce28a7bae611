// ProbeStorage: a HostStorage that remembers what the pool asked of it —
// every page, reservation and mapped chunk, with the trace event that asked
// — so a trace tool can read the arena's layout and its storage calls
// without asking the pool anything that would move it (stats() merges the
// arena's parked slice). Shared by arena_probe and physical_units.
// Header-only; bench tools only, never the library.
#pragma once

#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/storage.hpp>
#include <taintpool/pool/virtual_memory.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace taintpool::replay {

/// Forwards to a HostStorage and remembers what is mapped where, and which
/// event asked for it.
class ProbeStorage final : public Storage, public VirtualMemory {
 public:
  struct Call {
    std::size_t event;
    const char* kind;
    std::uint64_t bytes;
  };

  explicit ProbeStorage(HostStorage& inner) noexcept
      : inner_(inner) {}

  std::size_t event = 0;
  std::vector<Call> calls;
  /// Mapped memory by address: base -> size (chunks and pages).
  std::map<std::uintptr_t, std::uint64_t> mapped;
  /// Pages (the sliced pools', and the arena's without virtual memory):
  /// bytes held.
  std::uint64_t page_bytes = 0;
  /// Reservations by base address: base -> size.
  std::map<std::uintptr_t, std::uint64_t> reservations;

  /// The base of the reservation `address` lies in (the arena's, when the
  /// pool has virtual memory; the sliced pools take pages), or 0 if none.
  [[nodiscard]] std::uintptr_t reservation_base(std::uintptr_t address) const {
    auto above = reservations.upper_bound(address);
    if (above == reservations.begin()) {
      return 0;
    }
    --above;
    return address < above->first + above->second ? above->first : 0;
  }
  /// The bytes of every chunk mapped now.
  [[nodiscard]] std::uint64_t mapped_bytes() const {
    std::uint64_t bytes = 0;
    for (const auto& [base, size] : mapped) {
      bytes += size;
    }
    return bytes;
  }

  [[nodiscard]] std::uint64_t alignment() const noexcept override { return inner_.alignment(); }
  [[nodiscard]] StorageHandle allocate(std::uint64_t size) override {
    const StorageHandle handle = inner_.allocate(size);
    page_bytes += size;
    calls.push_back({event, "page", size});
    return handle;
  }
  void deallocate(StorageHandle handle, std::uint64_t size) noexcept override {
    page_bytes -= size;
    calls.push_back({event, "unpage", size});
    inner_.deallocate(handle, size);
  }
  [[nodiscard]] void* resolve(StorageHandle handle) const noexcept override {
    return inner_.resolve(handle);
  }
  [[nodiscard]] std::string name() const override { return "probe"; }
  [[nodiscard]] VirtualMemory* virtual_memory() noexcept override { return this; }
  [[nodiscard]] std::uint64_t granularity() const noexcept override { return inner_.granularity(); }
  [[nodiscard]] StorageHandle reserve(std::uint64_t size) override {
    const StorageHandle handle = inner_.reserve(size);
    reservations[address(handle)] = size;
    calls.push_back({event, "reserve", size});
    return handle;
  }
  void unreserve(StorageHandle reservation, std::uint64_t size) noexcept override {
    reservations.erase(address(reservation));
    calls.push_back({event, "unreserve", size});
    inner_.unreserve(reservation, size);
  }
  [[nodiscard]] StorageHandle map(StorageHandle reservation, std::uint64_t offset,
                                  std::uint64_t size) override {
    const StorageHandle chunk = inner_.map(reservation, offset, size);
    mapped[address(reservation) + offset] = size;
    calls.push_back({event, "map", size});
    return chunk;
  }
  void unmap(StorageHandle reservation, std::uint64_t offset, std::uint64_t size,
             StorageHandle chunk) noexcept override {
    mapped.erase(address(reservation) + offset);
    calls.push_back({event, "unmap", size});
    inner_.unmap(reservation, offset, size, chunk);
  }

 private:
  std::uintptr_t address(StorageHandle handle) const noexcept {
    return reinterpret_cast<std::uintptr_t>(inner_.resolve(handle));
  }
  HostStorage& inner_;
};

} // namespace taintpool::replay
