#include <taintpool/exception.hpp>
#include <taintpool/pool/allocation.hpp>
#include <taintpool/pool/detail/slice.hpp>

#include <new>

namespace taintpool {

namespace detail {

Slice::Slice(ReleaseInbox& owner_inbox) noexcept
    : inbox(&owner_inbox) {
  inbox->retain();
}

Slice::~Slice() {
  inbox->release();
}

void retain(Slice* slice) noexcept {
  slice->refs.fetch_add(1, std::memory_order_relaxed);
}

void release(Slice* slice) noexcept {
  const std::uint64_t before = slice->refs.fetch_sub(1, std::memory_order_acq_rel);
  if (before == 2) {
    // Only the manager's reference is left: tell it the allocation ended.
    // Its first line (state, page, neighbours) is what the manager reads
    // first when it discovers the end; with 10^5 live allocations it is a
    // cache miss there, so ask for it now (a hint: no access, no race).
    __builtin_prefetch(slice, 1);
    slice->inbox->push(slice);
  } else if (before == 1) {
    // The manager is gone (it dropped its reference when it tombstoned this
    // slice): the last handle frees the record.
    delete slice;
  }
}

SliceCache::~SliceCache() {
  while (spares_ != nullptr) {
    Slice* next = spares_->page_next;
    delete spares_;
    spares_ = next;
  }
}

void SliceCache::grow(std::size_t count) {
  while (count_ < count) {
    auto* slice = new Slice(inbox_);
    slice->page_next = spares_;
    spares_ = slice;
    ++count_;
  }
}

} // namespace detail

AllocationId Allocation::id() const {
  if (slice_ == nullptr) {
    throw std::logic_error("Allocation::id: the handle is empty (default-constructed, moved "
                           "from, or reset)");
  }
  return AllocationId::from_raw(id_);
}

Binding Allocation::bind(ByteRange range) const {
  const AllocationId allocation = id();
  if (range.end() > size_) {
    throw Exception(Error::invalid_binding("bytes " + to_string(range) + " reach past the end of " +
                                           to_string(allocation) + " (size " +
                                           std::to_string(size_) + ")"));
  }
  return Binding{allocation, range};
}

} // namespace taintpool
