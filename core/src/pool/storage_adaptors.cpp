#include <taintpool/pool/counting_storage.hpp>
#include <taintpool/pool/fault_injecting_storage.hpp>
#include <taintpool/pool/host_storage.hpp>

#include <algorithm>
#include <bit>
#include <new>
#include <string>

namespace taintpool {

HostStorage::HostStorage(std::uint64_t alignment)
    : alignment_(alignment) {
  if (alignment < 8 || !std::has_single_bit(alignment)) {
    throw std::invalid_argument("HostStorage: alignment " + std::to_string(alignment) +
                                " is not a power of two of at least 8");
  }
}

StorageHandle HostStorage::allocate(std::uint64_t size) {
  if (size == 0 || size > static_cast<std::uint64_t>(PTRDIFF_MAX)) {
    throw StorageExhausted("host: cannot allocate a page of " + std::to_string(size) + " bytes");
  }
  void* page =
      ::operator new (static_cast<std::size_t>(size), std::align_val_t{alignment_}, std::nothrow);
  if (page == nullptr) {
    throw StorageExhausted("host: the system refused " + std::to_string(size) + " bytes");
  }
  return StorageHandle{reinterpret_cast<std::uintptr_t>(page)};
}

void HostStorage::deallocate(StorageHandle handle, std::uint64_t /*size*/) noexcept {
  ::operator delete (resolve(handle), std::align_val_t{alignment_});
}

void* HostStorage::resolve(StorageHandle handle) const noexcept {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(handle.value));
}

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

StorageHandle FaultInjectingStorage::allocate(std::uint64_t size) {
  std::string why;
  if (fail_next_ > 0) {
    --fail_next_;
    why = "a scheduled failure";
  } else if (one_in_ != 0 && roll()) {
    why = "a random failure (1 in " + std::to_string(one_in_) + ")";
  } else if (capacity_ && size > *capacity_ - std::min(*capacity_, live_)) {
    why = "the capacity limit of " + std::to_string(*capacity_) + " bytes (" +
          std::to_string(live_) + " live)";
  }
  if (!why.empty()) {
    ++injected_;
    throw StorageExhausted(inner_.name() + ": injected fault: " + why + " refused " +
                           std::to_string(size) + " bytes");
  }
  const StorageHandle handle = inner_.allocate(size);
  live_ += size;
  return handle;
}

void FaultInjectingStorage::deallocate(StorageHandle handle, std::uint64_t size) noexcept {
  live_ -= std::min(live_, size);
  inner_.deallocate(handle, size);
}

StorageHandle CountingStorage::allocate(std::uint64_t size) {
  try {
    const StorageHandle handle = inner_.allocate(size);
    ++counts_.allocations;
    counts_.live_bytes += size;
    counts_.peak_bytes = std::max(counts_.peak_bytes, counts_.live_bytes);
    return handle;
  } catch (...) {
    ++counts_.failures;
    throw;
  }
}

void CountingStorage::deallocate(StorageHandle handle, std::uint64_t size) noexcept {
  ++counts_.deallocations;
  counts_.live_bytes -= std::min(counts_.live_bytes, size);
  inner_.deallocate(handle, size);
}

} // namespace taintpool
