// The global operator new/delete of every binary that links replace_new.cpp:
// the fuzzers and their replays, the allocation-counting tests, and the
// benchmarks. One replacement serves all three, because a program may hold
// only one:
//   * every allocation counts once (a relaxed atomic add), so a test or a
//     benchmark can pin "this path allocates nothing" (G10, T6) as a number;
//   * an allocation fails when alloc_faults.hpp armed it (one thread-local
//     compare while disarmed), so a fuzzer can check that a failed operation
//     changes nothing.
// Then each defers to malloc/free (aligned_alloc for the over-aligned
// forms). MemorySanitizer builds leave the file out: MSan's runtime owns the
// global operator new (fuzz/CMakeLists.txt).
#pragma once

#include <cstdint>

namespace taintpool::fuzz {

/// Calls of any global operator new since the process started, every
/// thread together.
[[nodiscard]] std::uint64_t heap_allocations() noexcept;

} // namespace taintpool::fuzz
