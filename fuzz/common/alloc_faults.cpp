// The replaceable global allocation functions, counting down to an injected
// std::bad_alloc while armed (see alloc_faults.hpp for why).
//
// Replacing them is allowed by [replacement.functions]; they must not be
// inline, so they live in this one translation unit, linked into every fuzz
// binary. The aligned forms are left to the runtime: nothing in the engine
// over-aligns, and their delete forms pair with their own new.
#include "alloc_faults.hpp"

#include <cstdlib>
#include <new>

namespace {

/// Allocations still to go before the fault; -1 when disarmed.
thread_local std::int64_t countdown = -1;

/// True when this allocation is the one to fail.
bool fault_now() noexcept {
  if (countdown < 0) {
    return false;
  }
  if (countdown == 0) {
    countdown = -1;
    return true;
  }
  --countdown;
  return false;
}

void* allocate(std::size_t size) {
  if (fault_now()) {
    throw std::bad_alloc();
  }
  if (void* memory = std::malloc(size == 0 ? 1 : size)) {
    return memory;
  }
  throw std::bad_alloc();
}

void* allocate_nothrow(std::size_t size) noexcept {
  if (fault_now()) {
    return nullptr;
  }
  return std::malloc(size == 0 ? 1 : size);
}

} // namespace

namespace taintpool::fuzz {

void arm_allocation_fault(std::uint64_t n) noexcept {
  countdown = static_cast<std::int64_t>(n);
}

std::int64_t disarm_allocation_fault() noexcept {
  const std::int64_t left = countdown;
  countdown = -1;
  return left;
}

} // namespace taintpool::fuzz

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
