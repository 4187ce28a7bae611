#include <taintpool/exception.hpp>
#include <taintpool/pool/allocation.hpp>
#include <taintpool/pool/detail/slice.hpp>

#include <new>
#include <utility>

namespace taintpool {

namespace detail {

Slice::Slice(ReleaseInbox& owner_inbox) noexcept
    : inbox(&owner_inbox) {
  inbox->retain();
}

Slice::~Slice() = default;

/// One block of records: this header, padded to a record's size, then the
/// records. Made by SliceCache::grow, freed by ~ReleaseInbox.
struct SliceSlab {
  SliceSlab* next = nullptr; ///< The inbox's next (older) slab.
  std::size_t records = 0;
};

namespace {

// A record's two lines are one aligned 128-byte block, so the hardware's
// adjacent-line prefetch brings the second line with the first.
constexpr std::size_t slab_header = 128;
static_assert(sizeof(SliceSlab) <= slab_header && sizeof(Slice) == slab_header);

std::size_t slab_bytes(std::size_t records) noexcept {
  return slab_header + records * sizeof(Slice);
}

/// Where the slab's record `at` goes.
void* slab_record(SliceSlab* slab, std::size_t at) noexcept {
  return reinterpret_cast<std::byte*>(slab) + slab_header + at * sizeof(Slice);
}

} // namespace

void destroy(Slice* slice) noexcept {
  // The inbox goes last, after every member's destructor: releasing it may
  // free the slab under the record.
  ReleaseInbox* owner = slice->inbox;
  slice->~Slice();
  owner->release();
}

ReleaseInbox::~ReleaseInbox() {
  while (slabs != nullptr) {
    SliceSlab* slab = std::exchange(slabs, slabs->next);
    slab->~SliceSlab();
    // Unsized: clang does not enable sized deallocation by default.
    ::operator delete (static_cast<void*>(slab), std::align_val_t{slab_header});
  }
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
    // slice): the last handle ends the record.
    destroy(slice);
  }
}

SliceCache::~SliceCache() {
  while (spares_ != nullptr) {
    Slice* next = spares_->page_next;
    destroy(spares_);
    spares_ = next;
  }
}

void SliceCache::grow(std::size_t count) {
  while (count_ < count) {
    // Double what was made, within the slab bounds, and at least the need.
    std::size_t records = made_ < first_slab ? first_slab : made_;
    records = records < largest_slab ? records : largest_slab;
    records = records < count - count_ ? count - count_ : records;
    void* memory = ::operator new (slab_bytes(records), std::align_val_t{slab_header});
    auto* slab = new (memory) SliceSlab{inbox_.slabs, records};
    inbox_.slabs = slab;
    made_ += records;
    // Linked so take() hands them out in address order: neighbours made by
    // consecutive splits sit side by side.
    for (std::size_t at = records; at-- > 0;) {
      auto* slice = new (slab_record(slab, at)) Slice(inbox_);
      slice->page_next = spares_;
      spares_ = slice;
      ++count_;
    }
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
