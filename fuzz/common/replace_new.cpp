// The replaceable global allocation functions, failing the allocation that
// alloc_faults.cpp's countdown names (see alloc_faults.hpp for why).
//
// Replacing them is allowed by [replacement.functions]; they must not be
// inline, so they live in this one translation unit, linked into every fuzz
// binary except MemorySanitizer builds (whose runtime owns them). The
// aligned forms are left to the runtime: nothing in the engine over-aligns,
// and their delete forms pair with their own new.
#include <cstdlib>
#include <new>

#include "alloc_faults.hpp"

namespace {

void* allocate(std::size_t size) {
  if (taintpool::fuzz::allocation_fault_now()) {
    throw std::bad_alloc();
  }
  if (void* memory = std::malloc(size == 0 ? 1 : size)) {
    return memory;
  }
  throw std::bad_alloc();
}

void* allocate_nothrow(std::size_t size) noexcept {
  if (taintpool::fuzz::allocation_fault_now()) {
    return nullptr;
  }
  return std::malloc(size == 0 ? 1 : size);
}

} // namespace

void* operator new(std::size_t size) {
  return allocate(size);
}
void* operator new[](std::size_t size) {
  return allocate(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return allocate_nothrow(size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return allocate_nothrow(size);
}
void operator delete(void* memory) noexcept {
  std::free(memory);
}
void operator delete[](void* memory) noexcept {
  std::free(memory);
}
void operator delete(void* memory, std::size_t) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, std::size_t) noexcept {
  std::free(memory);
}
void operator delete(void* memory, const std::nothrow_t&) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, const std::nothrow_t&) noexcept {
  std::free(memory);
}
