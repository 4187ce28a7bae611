// A process-wide count of heap allocations, for tests that pin "this path
// allocates nothing" (G10, T6) as a deterministic number rather than a timing.
//
// Link counting_new.cpp into the one test executable that needs it: it
// replaces the global operator new/delete (every form) with versions that
// count, then defer to malloc/free. Counts are atomic, so a helper thread of
// the test framework cannot tear them, but a test should read them around a
// region that makes no other calls (no EXPECT inside the measured region).
#pragma once

#include <cstdint>

namespace taintpool::testing {

/// Calls of any global operator new since the process started.
[[nodiscard]] std::uint64_t heap_allocations() noexcept;

/// Allocations made while running `fn`.
template <class Fn>
[[nodiscard]] std::uint64_t allocations_during(Fn&& fn) {
  const std::uint64_t before = heap_allocations();
  fn();
  return heap_allocations() - before;
}

} // namespace taintpool::testing
