#include <taintpool/model/observed_storage.hpp>

namespace taintpool::model {

StorageHandle ObservedStorage::allocate(std::uint64_t size) {
  const StorageHandle handle = inner_.allocate(size);
  model_->page_allocated(address(handle), size);
  return handle;
}

void ObservedStorage::deallocate(StorageHandle handle, std::uint64_t size) noexcept {
  const std::uint64_t at = address(handle);
  inner_.deallocate(handle, size);
  // noexcept: a model violation here must still abort the run loudly.
  model_->page_freed(at);
}

StorageHandle ObservedStorage::reserve(std::uint64_t size) {
  const StorageHandle reservation = inner_.virtual_memory()->reserve(size);
  model_->space_reserved(address(reservation), size);
  return reservation;
}

void ObservedStorage::unreserve(StorageHandle reservation, std::uint64_t size) noexcept {
  const std::uint64_t at = address(reservation);
  inner_.virtual_memory()->unreserve(reservation, size);
  model_->space_unreserved(at);
}

StorageHandle ObservedStorage::map(StorageHandle reservation, std::uint64_t offset,
                                   std::uint64_t size) {
  const StorageHandle chunk = inner_.virtual_memory()->map(reservation, offset, size);
  model_->chunk_mapped(address(reservation) + offset, size);
  return chunk;
}

void ObservedStorage::unmap(StorageHandle reservation, std::uint64_t offset, std::uint64_t size,
                            StorageHandle chunk) noexcept {
  const std::uint64_t at = address(reservation) + offset;
  inner_.virtual_memory()->unmap(reservation, offset, size, chunk);
  model_->chunk_unmapped(at);
}

} // namespace taintpool::model
