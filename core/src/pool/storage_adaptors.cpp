#include <taintpool/pool/counting_storage.hpp>
#include <taintpool/pool/fault_injecting_storage.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <string>
#include <utility>

namespace taintpool {

// ------------------------------------------------------------ fault injection

void FaultInjectingStorage::fail_randomly(std::uint64_t seed, std::uint64_t one_in) noexcept {
  rng_ = seed;
  one_in_ = one_in;
}

bool FaultInjectingStorage::roll() noexcept {
  // splitmix64: tiny, seedable, good enough to schedule failures.
  rng_ += 0x9E3779B97F4A7C15ull;
  std::uint64_t z = rng_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z % one_in_ == 0;
}

void FaultInjectingStorage::admit(const char* what, std::uint64_t size, bool memory) {
  // Which trigger refuses, if any; the message is built only then, in one
  // buffer reserved once (an operator+ chain reallocated it as it grew:
  // tests and fuzzers refuse on purpose, issue 13).
  enum class Why { None, Scheduled, Random, Capacity } why = Why::None;
  if (fail_next_ > 0) {
    --fail_next_;
    why = Why::Scheduled;
  } else if (one_in_ != 0 && roll()) {
    why = Why::Random;
  } else if (memory && capacity_ && size > *capacity_ - std::min(*capacity_, live_)) {
    why = Why::Capacity;
  }
  if (why == Why::None) {
    return;
  }
  ++injected_;
  std::string text;
  text.reserve(224); // 64 bytes of it for the inner storage's name
  const auto number = [&text](std::uint64_t value) {
    std::array<char, 24> digits{};
    text.append(digits.data(),
                std::to_chars(digits.data(), digits.data() + digits.size(), value).ptr);
  };
  inner_.append_name(text);
  text += ": injected fault: ";
  switch (why) {
  case Why::Scheduled:
    text += "a scheduled failure";
    break;
  case Why::Random:
    text += "a random failure (1 in ";
    number(one_in_);
    text += ")";
    break;
  case Why::Capacity:
  case Why::None: // Not reached: returned above.
    text += "the capacity limit of ";
    number(*capacity_);
    text += " bytes (";
    number(live_);
    text += " live)";
    break;
  }
  text += " refused ";
  text += what;
  text += " of ";
  number(size);
  text += " bytes";
  throw StorageExhausted(std::move(text));
}

StorageHandle FaultInjectingStorage::allocate(std::uint64_t size) {
  admit("a page", size, true);
  const StorageHandle handle = inner_.allocate(size);
  live_ += size;
  return handle;
}

void FaultInjectingStorage::deallocate(StorageHandle handle, std::uint64_t size) noexcept {
  live_ -= std::min(live_, size);
  inner_.deallocate(handle, size);
}

VirtualMemory* FaultInjectingStorage::virtual_memory() noexcept {
  return inner_.virtual_memory() != nullptr ? this : nullptr;
}

std::uint64_t FaultInjectingStorage::granularity() const noexcept {
  return inner_.virtual_memory()->granularity();
}

StorageHandle FaultInjectingStorage::reserve(std::uint64_t size) {
  admit("a reservation", size, false);
  return inner_.virtual_memory()->reserve(size);
}

void FaultInjectingStorage::unreserve(StorageHandle reservation, std::uint64_t size) noexcept {
  inner_.virtual_memory()->unreserve(reservation, size);
}

StorageHandle FaultInjectingStorage::map(StorageHandle reservation, std::uint64_t offset,
                                         std::uint64_t size) {
  admit("a map", size, true);
  const StorageHandle chunk = inner_.virtual_memory()->map(reservation, offset, size);
  live_ += size;
  return chunk;
}

void FaultInjectingStorage::unmap(StorageHandle reservation, std::uint64_t offset,
                                  std::uint64_t size, StorageHandle chunk) noexcept {
  live_ -= std::min(live_, size);
  inner_.virtual_memory()->unmap(reservation, offset, size, chunk);
}

// ------------------------------------------------------------ counting

void CountingStorage::gained(std::uint64_t size) noexcept {
  counts_.live_bytes += size;
  counts_.peak_bytes = std::max(counts_.peak_bytes, counts_.live_bytes);
}

void CountingStorage::lost(std::uint64_t size) noexcept {
  counts_.live_bytes -= std::min(counts_.live_bytes, size);
}

StorageHandle CountingStorage::allocate(std::uint64_t size) {
  try {
    const StorageHandle handle = inner_.allocate(size);
    ++counts_.allocations;
    gained(size);
    return handle;
  } catch (...) {
    ++counts_.failures;
    throw;
  }
}

void CountingStorage::deallocate(StorageHandle handle, std::uint64_t size) noexcept {
  ++counts_.deallocations;
  lost(size);
  inner_.deallocate(handle, size);
}

VirtualMemory* CountingStorage::virtual_memory() noexcept {
  return inner_.virtual_memory() != nullptr ? this : nullptr;
}

std::uint64_t CountingStorage::granularity() const noexcept {
  return inner_.virtual_memory()->granularity();
}

StorageHandle CountingStorage::reserve(std::uint64_t size) {
  try {
    const StorageHandle reservation = inner_.virtual_memory()->reserve(size);
    ++counts_.reserves;
    return reservation;
  } catch (...) {
    ++counts_.failures;
    throw;
  }
}

void CountingStorage::unreserve(StorageHandle reservation, std::uint64_t size) noexcept {
  ++counts_.unreserves;
  inner_.virtual_memory()->unreserve(reservation, size);
}

StorageHandle CountingStorage::map(StorageHandle reservation, std::uint64_t offset,
                                   std::uint64_t size) {
  try {
    const StorageHandle chunk = inner_.virtual_memory()->map(reservation, offset, size);
    ++counts_.maps;
    gained(size);
    return chunk;
  } catch (...) {
    ++counts_.failures;
    throw;
  }
}

void CountingStorage::unmap(StorageHandle reservation, std::uint64_t offset, std::uint64_t size,
                            StorageHandle chunk) noexcept {
  ++counts_.unmaps;
  lost(size);
  inner_.virtual_memory()->unmap(reservation, offset, size, chunk);
}

} // namespace taintpool
