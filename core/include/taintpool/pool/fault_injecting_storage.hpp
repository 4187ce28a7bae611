// FaultInjectingStorage: a Storage adaptor that fails on demand, so the
// out-of-memory paths (P3) are exercised by tests and fuzzers instead of
// trusted.
//
// Three independent triggers, any of which fails a request:
//   * fail_next(n): the next n requests fail;
//   * fail_randomly(seed, one_in): each request fails with probability
//     1/one_in, from a seeded generator (reproducible);
//   * limit_capacity(bytes): requests that would take the live total past
//     `bytes` fail, like a device with little memory.
// A failed request throws StorageExhausted and never reaches the inner
// storage; a passing one is forwarded unchanged.
#pragma once

#include <taintpool/pool/storage.hpp>

#include <cstdint>
#include <optional>

namespace taintpool {

/// Forwards to `inner` except when a trigger (see above) refuses a request.
class FaultInjectingStorage final : public Storage {
 public:
  /// `inner` must outlive this adaptor. No trigger is armed.
  explicit FaultInjectingStorage(Storage& inner) noexcept
      : inner_(inner) {}

  /// The next `requests` allocate calls fail (replacing any earlier count).
  void fail_next(std::uint64_t requests) noexcept { fail_next_ = requests; }
  /// Each later request fails with probability 1/one_in (1: every one; 0:
  /// off), drawn from a splitmix64 sequence seeded with `seed`, so a seed
  /// replays the same failures. A request fail_next already failed draws
  /// nothing.
  void fail_randomly(std::uint64_t seed, std::uint64_t one_in) noexcept;
  /// Turns fail_randomly off.
  void stop_failing_randomly() noexcept { one_in_ = 0; }
  /// Fails a request that would take live_bytes() past `bytes`; nullopt
  /// lifts the limit. Only pages allocated through this adaptor count.
  void limit_capacity(std::optional<std::uint64_t> bytes) noexcept { capacity_ = bytes; }

  /// Requests this adaptor failed on purpose.
  [[nodiscard]] std::uint64_t injected_failures() const noexcept { return injected_; }
  /// Bytes currently allocated through this adaptor.
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
  [[nodiscard]] std::string name() const override { return inner_.name() + " (fault-injecting)"; }

 private:
  [[nodiscard]] bool roll() noexcept;

  Storage& inner_;
  std::uint64_t fail_next_ = 0;
  std::uint64_t one_in_ = 0;
  std::uint64_t rng_ = 0;
  std::optional<std::uint64_t> capacity_;
  std::uint64_t live_ = 0;
  std::uint64_t injected_ = 0;
};

} // namespace taintpool
