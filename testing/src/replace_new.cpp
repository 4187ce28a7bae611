// The replaceable global allocation functions behind heap_allocations.hpp:
// count, fail the allocation alloc_faults.cpp's countdown names, else malloc.
//
// Replacing them is allowed by [replacement.functions]; they must not be
// inline, so they live in this one translation unit, which every user links
// as an object (taintpool::testing_replace_new is an object library: a
// static library would only pull it in when something named one of its
// symbols, and a fuzzer names none).
#include <taintpool/testing/alloc_faults.hpp>
#include <taintpool/testing/heap_allocations.hpp>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

std::atomic<std::uint64_t> allocations{0};
std::atomic<std::uint64_t> frees{0};
std::atomic<std::uint64_t> refusals{0};

/// Counts a call that gives no block (heap_refusals()) and throws, as
/// operator new must.
[[noreturn]] void refuse() {
  refusals.fetch_add(1, std::memory_order_relaxed);
  throw std::bad_alloc();
}

void release(void* memory) noexcept {
  if (memory != nullptr) {
    frees.fetch_add(1, std::memory_order_relaxed);
  }
  std::free(memory);
}

void* allocate(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (taintpool::testing::allocation_fault_now()) {
    refuse();
  }
  if (void* memory = std::malloc(size == 0 ? 1 : size)) {
    return memory;
  }
  refuse();
}

void* allocate_aligned(std::size_t size, std::align_val_t alignment) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (taintpool::testing::allocation_fault_now()) {
    refuse();
  }
  const auto align = static_cast<std::size_t>(alignment);
  // aligned_alloc wants a size that is a multiple of the alignment.
  const std::size_t rounded = ((size == 0 ? 1 : size) + align - 1) / align * align;
  if (void* memory = std::aligned_alloc(align, rounded)) {
    return memory;
  }
  refuse();
}

template <class Allocate>
void* or_null(Allocate&& allocate_or_throw) noexcept {
  try {
    return allocate_or_throw();
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

} // namespace

namespace taintpool::testing {

std::uint64_t heap_allocations() noexcept {
  return allocations.load(std::memory_order_relaxed);
}

std::uint64_t heap_frees() noexcept {
  return frees.load(std::memory_order_relaxed);
}

std::uint64_t heap_refusals() noexcept {
  return refusals.load(std::memory_order_relaxed);
}

} // namespace taintpool::testing

void* operator new(std::size_t size) {
  return allocate(size);
}
void* operator new[](std::size_t size) {
  return allocate(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return or_null([&] { return allocate(size); });
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return or_null([&] { return allocate(size); });
}
void* operator new(std::size_t size, std::align_val_t alignment) {
  return allocate_aligned(size, alignment);
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
  return allocate_aligned(size, alignment);
}
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return or_null([&] { return allocate_aligned(size, alignment); });
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return or_null([&] { return allocate_aligned(size, alignment); });
}

void operator delete(void* memory) noexcept {
  release(memory);
}
void operator delete[](void* memory) noexcept {
  release(memory);
}
void operator delete(void* memory, std::size_t) noexcept {
  release(memory);
}
void operator delete[](void* memory, std::size_t) noexcept {
  release(memory);
}
void operator delete(void* memory, const std::nothrow_t&) noexcept {
  release(memory);
}
void operator delete[](void* memory, const std::nothrow_t&) noexcept {
  release(memory);
}
void operator delete(void* memory, std::align_val_t) noexcept {
  release(memory);
}
void operator delete[](void* memory, std::align_val_t) noexcept {
  release(memory);
}
void operator delete(void* memory, std::size_t, std::align_val_t) noexcept {
  release(memory);
}
void operator delete[](void* memory, std::size_t, std::align_val_t) noexcept {
  release(memory);
}
void operator delete(void* memory, std::align_val_t, const std::nothrow_t&) noexcept {
  release(memory);
}
void operator delete[](void* memory, std::align_val_t, const std::nothrow_t&) noexcept {
  release(memory);
}
