// A process-wide count of heap allocations, for tests that pin "this path
// allocates nothing" (G10, T6) as a deterministic number rather than a timing.
//
// The count comes from the replaced global operator new of
// fuzz/common/replace_new.cpp (shared with the fuzzers and benchmarks: a
// program holds one replacement); link it, with fuzz/common/alloc_faults.cpp,
// into the test executable that includes this header. Counts are atomic, so a
// helper thread of the test framework cannot tear them, but a test should
// read them around a region that makes no other calls (no EXPECT inside the
// measured region).
#pragma once

#include <cstdint>

#include "common/replace_new.hpp"

namespace taintpool::testing {

/// Calls of any global operator new since the process started.
[[nodiscard]] inline std::uint64_t heap_allocations() noexcept {
  return fuzz::heap_allocations();
}

/// Allocations made while running `fn`.
template <class Fn>
[[nodiscard]] std::uint64_t allocations_during(Fn&& fn) {
  const std::uint64_t before = heap_allocations();
  fn();
  return heap_allocations() - before;
}

} // namespace taintpool::testing
