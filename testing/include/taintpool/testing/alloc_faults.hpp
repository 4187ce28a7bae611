// Allocation fault injection: make the n-th heap allocation of this thread
// throw std::bad_alloc, so a fuzzer or a test can check the engine's promise
// that an operation which throws — out of memory included — leaves every
// object as it was (taint.hpp "Contract"; DESIGN.md §3.3 G10 makes
// allocation rare, not impossible).
//
// How: replace_new.cpp replaces the global operator new/delete (every
// replaceable form) with thin wrappers over malloc/free that ask
// alloc_faults.cpp's countdown. A binary links both (testing/CMakeLists.txt:
// taintpool::testing_replace_new); unarmed, it costs one thread-local compare
// per allocation. Only the thread that armed it counts, so libFuzzer's own
// threads, or a test framework's, never see a fault. Under AddressSanitizer
// the wrappers' malloc and free are still checked (only new/delete mismatch
// reports are lost). MemorySanitizer owns the global operator new itself, so
// its builds link alloc_faults.cpp alone (taintpool::testing_alloc_faults)
// and an armed fault never fires.
#pragma once

#include <cstdint>

namespace taintpool::testing {

/// From now on, allocation number `n` (0 = the next one) by this thread
/// throws std::bad_alloc (or returns null, for the nothrow forms). One-shot:
/// disarmed once it fires.
void arm_allocation_fault(std::uint64_t n) noexcept;

/// Stops counting. Returns how many allocations were still to go before the
/// fault, or -1 if it fired (or was never armed).
std::int64_t disarm_allocation_fault() noexcept;

/// Counts one allocation by this thread; true when it is the one to fail
/// (and disarms). Called by the replaced operator new (replace_new.cpp).
bool allocation_fault_now() noexcept;

} // namespace taintpool::testing
