#include <taintpool/pool/observed_storage.hpp>

namespace taintpool {

StorageHandle ObservedStorage::allocate(std::uint64_t size) {
  const StorageHandle handle = inner_.allocate(size);
  try {
    observer_.on_page_added(static_cast<const std::byte*>(inner_.resolve(handle)), size);
  } catch (...) {
    inner_.deallocate(handle, size); // Nothing is allocated when allocate throws.
    throw;
  }
  return handle;
}

void ObservedStorage::deallocate(StorageHandle handle, std::uint64_t size) noexcept {
  observer_.on_page_removed(static_cast<const std::byte*>(inner_.resolve(handle)), size);
  inner_.deallocate(handle, size);
}

VirtualMemory* ObservedStorage::virtual_memory() noexcept {
  // An observer that cannot describe mapped chunks gets none: the arena
  // then grows by pages (allocation_observer.hpp, accepts_mapped_chunks).
  return observer_.accepts_mapped_chunks() && inner_.virtual_memory() != nullptr ? this : nullptr;
}

std::uint64_t ObservedStorage::granularity() const noexcept {
  return inner_.virtual_memory()->granularity();
}

StorageHandle ObservedStorage::reserve(std::uint64_t size) {
  return inner_.virtual_memory()->reserve(size);
}

void ObservedStorage::unreserve(StorageHandle reservation, std::uint64_t size) noexcept {
  inner_.virtual_memory()->unreserve(reservation, size);
}

StorageHandle ObservedStorage::map(StorageHandle reservation, std::uint64_t offset,
                                   std::uint64_t size) {
  VirtualMemory& memory = *inner_.virtual_memory();
  const StorageHandle chunk = memory.map(reservation, offset, size);
  try {
    observer_.on_page_added(chunk_base(reservation, offset), size);
  } catch (...) {
    memory.unmap(reservation, offset, size, chunk); // Nothing is mapped when map throws.
    throw;
  }
  return chunk;
}

void ObservedStorage::unmap(StorageHandle reservation, std::uint64_t offset, std::uint64_t size,
                            StorageHandle chunk) noexcept {
  observer_.on_page_removed(chunk_base(reservation, offset), size);
  inner_.virtual_memory()->unmap(reservation, offset, size, chunk);
}

} // namespace taintpool
