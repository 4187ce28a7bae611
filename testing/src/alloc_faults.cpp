// The countdown behind alloc_faults.hpp: which allocation of this thread is
// the one to fail. The global operator new/delete that consult it live in
// replace_new.cpp, a separate translation unit, because MemorySanitizer's
// runtime defines those operators itself: MSan builds link this file alone,
// so an armed fault never fires there — the call completes — and a fuzzer
// compares that outcome as usual (testing/CMakeLists.txt: the two object
// libraries).
#include <taintpool/testing/alloc_faults.hpp>

namespace {

/// Allocations still to go before the fault; -1 when disarmed.
thread_local std::int64_t countdown = -1;

} // namespace

namespace taintpool::testing {

void arm_allocation_fault(std::uint64_t n) noexcept {
  countdown = static_cast<std::int64_t>(n);
}

std::int64_t disarm_allocation_fault() noexcept {
  const std::int64_t left = countdown;
  countdown = -1;
  return left;
}

bool allocation_fault_now() noexcept {
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

} // namespace taintpool::testing
