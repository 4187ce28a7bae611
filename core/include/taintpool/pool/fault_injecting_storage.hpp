// FaultInjectingStorage: a Storage adaptor that fails on demand, so the
// out-of-memory paths (P3) are exercised by tests and fuzzers instead of
// trusted.
//
// Three independent triggers, any of which fails a request:
//   * fail_next(n): the next n requests fail;
//   * fail_randomly(seed, one_in): each request fails with probability
//     1/one_in, from a seeded generator (reproducible);
//   * limit_capacity(bytes): requests for memory that would take the live
//     total past `bytes` fail, like a device with little memory.
// A request is a page (allocate) or, when the inner storage has virtual
// memory, an address-space reservation (reserve: the first two triggers
// only, it holds no memory) or a chunk of memory (map: all three). A failed
// request throws StorageExhausted and never reaches the inner storage; a
// passing one is forwarded unchanged.
#pragma once

#include <taintpool/pool/storage.hpp>
#include <taintpool/pool/virtual_memory.hpp>

#include <cstdint>
#include <optional>

namespace taintpool {

/// Forwards to `inner` except when a trigger (see above) refuses a request.
class FaultInjectingStorage final : public Storage, public VirtualMemory {
 public:
  /// `inner` must outlive this adaptor. No trigger is armed.
  explicit FaultInjectingStorage(Storage& inner) noexcept
      : inner_(inner) {}

  /// The next `requests` requests fail (replacing any earlier count).
  void fail_next(std::uint64_t requests) noexcept { fail_next_ = requests; }
  /// Each later request fails with probability 1/one_in (1: every one; 0:
  /// off), drawn from a splitmix64 sequence seeded with `seed`, so a seed
  /// replays the same failures. A request fail_next already failed draws
  /// nothing.
  void fail_randomly(std::uint64_t seed, std::uint64_t one_in) noexcept;
  /// Turns fail_randomly off.
  void stop_failing_randomly() noexcept { one_in_ = 0; }
  /// Fails a page or map that would take live_bytes() past `bytes`; nullopt
  /// lifts the limit. Only memory obtained through this adaptor counts.
  void limit_capacity(std::optional<std::uint64_t> bytes) noexcept { capacity_ = bytes; }

  /// Requests this adaptor failed on purpose.
  [[nodiscard]] std::uint64_t injected_failures() const noexcept { return injected_; }
  /// Bytes currently allocated or mapped through this adaptor.
  [[nodiscard]] std::uint64_t live_bytes() const noexcept { return live_; }

  /// Storage. allocate applies the triggers in the order above — a refused
  /// request throws StorageExhausted and never reaches `inner` — then
  /// forwards; the rest forward unchanged, and name() adds
  /// "(fault-injecting)".
  [[nodiscard]] std::uint64_t alignment() const noexcept override { return inner_.alignment(); }
  [[nodiscard]] StorageHandle allocate(std::uint64_t size) override;
  void deallocate(StorageHandle handle, std::uint64_t size) noexcept override;
  [[nodiscard]] void* resolve(StorageHandle handle) const noexcept override {
    return inner_.resolve(handle);
  }
  [[nodiscard]] std::string name() const override {
    std::string text;
    append_name(text);
    return text;
  }
  void append_name(std::string& text) const override {
    inner_.append_name(text);
    text += " (fault-injecting)";
  }
  /// This adaptor when `inner` has virtual memory, else null.
  [[nodiscard]] VirtualMemory* virtual_memory() noexcept override;

  /// VirtualMemory: reserve and map apply the triggers as above, then
  /// forward; the rest forward unchanged.
  [[nodiscard]] std::uint64_t granularity() const noexcept override;
  [[nodiscard]] StorageHandle reserve(std::uint64_t size) override;
  void unreserve(StorageHandle reservation, std::uint64_t size) noexcept override;
  [[nodiscard]] StorageHandle map(StorageHandle reservation, std::uint64_t offset,
                                  std::uint64_t size) override;
  void unmap(StorageHandle reservation, std::uint64_t offset, std::uint64_t size,
             StorageHandle chunk) noexcept override;

 private:
  [[nodiscard]] bool roll() noexcept;
  /// Throws StorageExhausted when a trigger refuses a request of `size`
  /// bytes (`memory`: whether it would hold memory, so capacity applies).
  void admit(const char* what, std::uint64_t size, bool memory);

  Storage& inner_;
  std::uint64_t fail_next_ = 0;
  std::uint64_t one_in_ = 0;
  std::uint64_t rng_ = 0;
  std::optional<std::uint64_t> capacity_;
  std::uint64_t live_ = 0;
  std::uint64_t injected_ = 0;
};

} // namespace taintpool
