// ObservedStorage: a Storage adaptor that reports every storage call that
// succeeded to a PoolModel's storage mirror (pool_model.hpp), so the model
// knows exactly which bytes are memory without knowing the pool's policy.
//
// It forwards everything to `inner` and, after a call succeeds, tells the
// model what changed: a page (allocate/deallocate), a reservation
// (reserve/unreserve), a mapped chunk (map/unmap), by address. A call that
// throws reports nothing. It offers virtual memory exactly when `inner`
// does. Model side: it uses only the public Storage and VirtualMemory
// interfaces.
//
// The caller must bring the model up to date with the manager before a
// manager call that may reach the storage (PoolModel::manager_called, or
// reset), since the manager discovers released allocations before it
// gives memory back.
#pragma once

#include <taintpool/model/pool_model.hpp>
#include <taintpool/pool/storage.hpp>
#include <taintpool/pool/virtual_memory.hpp>

#include <cstdint>
#include <string>

namespace taintpool::model {

class ObservedStorage final : public Storage, public VirtualMemory {
 public:
  /// Both must outlive the adaptor.
  ObservedStorage(Storage& inner, PoolModel& model) noexcept
      : inner_(inner)
      , model_(&model) {}

  /// Reports to another model from now on (a harness that starts over).
  void observe(PoolModel& model) noexcept { model_ = &model; }

  [[nodiscard]] std::uint64_t alignment() const noexcept override { return inner_.alignment(); }
  [[nodiscard]] StorageHandle allocate(std::uint64_t size) override;
  void deallocate(StorageHandle handle, std::uint64_t size) noexcept override;
  [[nodiscard]] void* resolve(StorageHandle handle) const noexcept override {
    return inner_.resolve(handle);
  }
  [[nodiscard]] std::string name() const override { return inner_.name(); }
  void append_name(std::string& text) const override { inner_.append_name(text); }
  [[nodiscard]] VirtualMemory* virtual_memory() noexcept override {
    return inner_.virtual_memory() != nullptr ? this : nullptr;
  }

  [[nodiscard]] std::uint64_t granularity() const noexcept override {
    return inner_.virtual_memory()->granularity();
  }
  [[nodiscard]] StorageHandle reserve(std::uint64_t size) override;
  void unreserve(StorageHandle reservation, std::uint64_t size) noexcept override;
  [[nodiscard]] StorageHandle map(StorageHandle reservation, std::uint64_t offset,
                                  std::uint64_t size) override;
  void unmap(StorageHandle reservation, std::uint64_t offset, std::uint64_t size,
             StorageHandle chunk) noexcept override;

 private:
  [[nodiscard]] std::uint64_t address(StorageHandle handle) const noexcept {
    return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(inner_.resolve(handle)));
  }

  Storage& inner_;
  PoolModel* model_;
};

} // namespace taintpool::model
