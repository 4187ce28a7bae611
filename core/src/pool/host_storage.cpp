#include <taintpool/pool/host_storage.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>

#if __has_include(<sys/mman.h>) && __has_include(<unistd.h>)
#include <sys/mman.h>
#include <unistd.h>
#define TAINTPOOL_HOST_HAS_MMAP 1 // NOLINT(cppcoreguidelines-macro-usage): tested by #if
#else
#define TAINTPOOL_HOST_HAS_MMAP 0 // NOLINT(cppcoreguidelines-macro-usage): tested by #if
#endif

namespace taintpool {

namespace {

std::uint64_t system_page_size() noexcept {
#if TAINTPOOL_HOST_HAS_MMAP
  const long size = ::sysconf(_SC_PAGESIZE);
  return size > 0 ? static_cast<std::uint64_t>(size) : 4096;
#else
  return 4096;
#endif
}

} // namespace

HostStorage::HostStorage(std::uint64_t alignment)
    : HostStorage(HostStorageOptions{alignment, true, std::uint64_t{2} << 20}) {
}

HostStorage::HostStorage(HostStorageOptions options)
    : options_(options) {
  if (options_.alignment < 8 || !std::has_single_bit(options_.alignment)) {
    throw std::invalid_argument("HostStorage: alignment " + std::to_string(options_.alignment) +
                                " is not a power of two of at least 8");
  }
  if (!std::has_single_bit(options_.granularity) ||
      options_.granularity % system_page_size() != 0 || options_.granularity < options_.alignment) {
    throw std::invalid_argument("HostStorage: granularity " + std::to_string(options_.granularity) +
                                " is not a power of two, a multiple of the system page size " +
                                std::to_string(system_page_size()) + " and at least the alignment");
  }
}

#if TAINTPOOL_HOST_HAS_MMAP

namespace {

/// An anonymous mapping of `size` bytes aligned to `alignment`, or null.
/// Where the alignment exceeds what mmap gives, more is mapped and the
/// unaligned head and the tail are trimmed.
void* map_aligned(std::uint64_t size, std::uint64_t alignment, int protection, int flags) {
  const std::uint64_t slack = alignment > system_page_size() ? alignment : std::uint64_t{0};
  if (size == 0 || size > static_cast<std::uint64_t>(PTRDIFF_MAX) - slack) {
    return nullptr;
  }
  void* raw = ::mmap(nullptr, static_cast<std::size_t>(size + slack), protection,
                     MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
  if (raw == MAP_FAILED) {
    return nullptr;
  }
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t base =
      slack == 0 ? start : (start + slack - 1) & ~(static_cast<std::uintptr_t>(slack) - 1);
  if (slack != 0) {
    if (base > start) {
      ::munmap(raw, base - start);
    }
    const std::uintptr_t end = start + size + slack;
    if (end > base + size) {
      ::munmap(reinterpret_cast<void*>(base + size), end - (base + size));
    }
  }
  return reinterpret_cast<void*>(base);
}

} // namespace

StorageHandle HostStorage::allocate(std::uint64_t size) {
  // One mapping per page: the system commits it as it is touched, and a
  // page given back is unmapped at once (a stray access faults), with no
  // allocator or sanitizer bookkeeping over bytes the pool carves itself.
  void* page = map_aligned(size, options_.alignment, PROT_READ | PROT_WRITE, 0);
  if (page == nullptr) {
    throw StorageExhausted("host: the system refused a page of " + std::to_string(size) + " bytes");
  }
  return StorageHandle{reinterpret_cast<std::uintptr_t>(page)};
}

void HostStorage::deallocate(StorageHandle handle, std::uint64_t size) noexcept {
  ::munmap(resolve(handle), static_cast<std::size_t>(size));
}

#else

StorageHandle HostStorage::allocate(std::uint64_t size) {
  if (size == 0 || size > static_cast<std::uint64_t>(PTRDIFF_MAX)) {
    throw StorageExhausted("host: cannot allocate a page of " + std::to_string(size) + " bytes");
  }
  void* page = ::operator new (static_cast<std::size_t>(size), std::align_val_t{options_.alignment},
                               std::nothrow);
  if (page == nullptr) {
    throw StorageExhausted("host: the system refused " + std::to_string(size) + " bytes");
  }
  return StorageHandle{reinterpret_cast<std::uintptr_t>(page)};
}

void HostStorage::deallocate(StorageHandle handle, std::uint64_t /*size*/) noexcept {
  ::operator delete (resolve(handle), std::align_val_t{options_.alignment});
}

#endif

void* HostStorage::resolve(StorageHandle handle) const noexcept {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(handle.value));
}

VirtualMemory* HostStorage::virtual_memory() noexcept {
  return options_.virtual_memory && TAINTPOOL_HOST_HAS_MMAP != 0 ? this : nullptr;
}

void HostStorage::check_granular(const char* call, std::uint64_t value) const {
  if (value % options_.granularity != 0) {
    throw std::invalid_argument(std::string("HostStorage::") + call + ": " + std::to_string(value) +
                                " is not a multiple of the granularity " +
                                std::to_string(options_.granularity));
  }
}

void HostStorage::check_mappable(StorageHandle reservation, std::uint64_t offset,
                                 std::uint64_t size) const {
  // MAP_FIXED replaces whatever the address holds. A range outside the
  // reservations this storage holds would put fresh memory over memory the
  // process is using: a null base makes the offset an absolute address, an
  // offset past the end (or one that wraps) lands on a neighbour, and a
  // reservation given back may since hold someone else's mapping (review1).
  if (!reservation) {
    throw std::invalid_argument("HostStorage::map: no reservation (a null handle) for offset " +
                                std::to_string(offset));
  }
  const std::uint64_t reserved = reserved_size(reservation);
  if (reserved == 0) {
    throw std::invalid_argument("HostStorage::map: " + std::to_string(reservation.value) +
                                " is not a live reservation of this storage");
  }
  if (!lies_inside(reserved, offset, size)) {
    throw std::invalid_argument("HostStorage::map: offset " + std::to_string(offset) + " size " +
                                std::to_string(size) + " runs past the end of the reservation at " +
                                std::to_string(reservation.value) + " of " +
                                std::to_string(reserved) + " bytes");
  }
}

bool HostStorage::lies_inside(std::uint64_t reserved, std::uint64_t offset,
                              std::uint64_t size) noexcept {
  return offset <= reserved && size <= reserved - offset; // No sum: it could wrap.
}

std::uint64_t HostStorage::reserved_size(StorageHandle reservation) const {
  const std::lock_guard<std::mutex> lock(reservations_mutex_);
  const auto found = reservations_.find(reservation.value);
  return found != reservations_.end() ? found->second : 0;
}

#if TAINTPOOL_HOST_HAS_MMAP

StorageHandle HostStorage::reserve(std::uint64_t size) {
  check_granular("reserve", size);
  void* base = map_aligned(size, options_.alignment, PROT_NONE, MAP_NORESERVE);
  if (base == nullptr) {
    throw StorageExhausted("host: the system refused to reserve " + std::to_string(size) +
                           " bytes of address space");
  }
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  try {
    const std::lock_guard<std::mutex> lock(reservations_mutex_);
    reservations_.emplace(address, size);
  } catch (...) {
    ::munmap(base, static_cast<std::size_t>(size)); // Nothing reserved after all.
    throw;
  }
  return StorageHandle{address};
}

void HostStorage::unreserve(StorageHandle reservation, std::uint64_t size) noexcept {
  {
    const std::lock_guard<std::mutex> lock(reservations_mutex_);
    const auto found = reservations_.find(reservation.value);
    if (found == reservations_.end() || found->second != size) {
      return; // Not a reservation of ours as named: leave the memory alone (see the header).
    }
    reservations_.erase(found);
  }
  ::munmap(resolve(reservation), static_cast<std::size_t>(size));
}

StorageHandle HostStorage::map(StorageHandle reservation, std::uint64_t offset,
                               std::uint64_t size) {
  check_granular("map", offset);
  check_granular("map", size);
  check_mappable(reservation, offset, size);
  auto* at = static_cast<std::byte*>(resolve(reservation)) + offset;
  // MAP_FIXED over our own reservation: fresh zeroed memory, committed by
  // the system as it is touched.
  void* mapped = ::mmap(at, static_cast<std::size_t>(size), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (mapped == MAP_FAILED) {
    throw StorageExhausted("host: the system refused to map " + std::to_string(size) + " bytes");
  }
  return StorageHandle{reinterpret_cast<std::uintptr_t>(at)};
}

void HostStorage::unmap(StorageHandle reservation, std::uint64_t offset, std::uint64_t size,
                        StorageHandle /*chunk*/) noexcept {
  if (!lies_inside(reserved_size(reservation), offset, size)) {
    return; // Not ours to take: leave whatever lives there alone (see the header).
  }
  auto* at = static_cast<std::byte*>(resolve(reservation)) + offset;
  // Back to an inaccessible, unbacked part of the reservation: the memory
  // goes back to the system.
  if (::mmap(at, static_cast<std::size_t>(size), PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED) {
    // Cannot remap (out of mappings): at least drop the pages' contents, so
    // the memory still goes back; the range stays accessible, unused.
    static_cast<void>(::madvise(at, static_cast<std::size_t>(size), MADV_DONTNEED));
  }
}

#else

StorageHandle HostStorage::reserve(std::uint64_t size) {
  throw StorageExhausted("host: no virtual memory on this system (" + std::to_string(size) +
                         " bytes)");
}
void HostStorage::unreserve(StorageHandle, std::uint64_t) noexcept {
}
StorageHandle HostStorage::map(StorageHandle, std::uint64_t, std::uint64_t size) {
  throw StorageExhausted("host: no virtual memory on this system (" + std::to_string(size) +
                         " bytes)");
}
void HostStorage::unmap(StorageHandle, std::uint64_t, std::uint64_t, StorageHandle) noexcept {
}

#endif

} // namespace taintpool
