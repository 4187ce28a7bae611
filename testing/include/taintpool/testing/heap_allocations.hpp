// The global operator new/delete of every binary that links
// taintpool::testing_replace_new (testing/src/replace_new.cpp): the fuzzers
// and their replays, the allocation-counting tests, and the benchmarks. One
// replacement serves all three, because a program may hold only one:
//   * every allocation counts once (a relaxed atomic add), so a test or a
//     benchmark can pin "this path allocates nothing" (G10, T6) as a
//     deterministic number rather than a timing;
//   * an allocation fails when alloc_faults.hpp armed it (one thread-local
//     compare while disarmed), so a fuzzer or a test can check that a failed
//     operation changes nothing.
// Then each defers to malloc/free (aligned_alloc for the over-aligned
// forms). MemorySanitizer builds leave the file out: MSan's runtime owns the
// global operator new (fuzz/CMakeLists.txt).
//
// Counts are atomic, so a helper thread of the test framework cannot tear
// them, but a test should read them around a region that makes no other
// calls (no EXPECT inside the measured region).
#pragma once

#include <cstdint>
#include <optional>

namespace taintpool::testing {

/// Calls of any global operator new since the process started, every
/// thread together.
[[nodiscard]] std::uint64_t heap_allocations() noexcept;

/// Calls of any global operator delete on a non-null pointer since the
/// process started, every thread together. With heap_allocations(), a test
/// pins that a removal hands memory back when it happens, not whenever a
/// later owner of the same slot overwrites it.
[[nodiscard]] std::uint64_t heap_frees() noexcept;

/// The calls among heap_allocations() that gave no block: an armed fault
/// (alloc_faults.hpp) or malloc's null, each thrown as std::bad_alloc (or
/// null from a nothrow form). heap_allocations() - heap_refusals() counts
/// the blocks handed out, which is what libFuzzer's malloc hooks count (a
/// refused call never reaches malloc, or gets null from it) and what
/// fuzz/replay_main.cpp's -balance compares with heap_frees(): counted as
/// an allocation, a refusal would make every input whose injected fault
/// fires look like one that keeps a block (fuzz/ROUNDS.md, round 54).
[[nodiscard]] std::uint64_t heap_refusals() noexcept;

/// Allocations made while running `fn`.
template <class Fn>
[[nodiscard]] std::uint64_t allocations_during(Fn&& fn) {
  const std::uint64_t before = heap_allocations();
  fn();
  return heap_allocations() - before;
}

/// Frees made while running `fn`.
template <class Fn>
[[nodiscard]] std::uint64_t frees_during(Fn&& fn) {
  const std::uint64_t before = heap_frees();
  fn();
  return heap_frees() - before;
}

/// Allocations made while `fn` runs and throws an E, which is caught here:
/// what one refusal costs (issue 13: the fuzzers refuse on purpose several
/// times an input). The exception object itself comes from the C++
/// runtime's own allocator (__cxa_allocate_exception), not operator new, so
/// it is not counted. nullopt when `fn` returned without throwing an E, so
/// a test tells "refused, cheaply" from "not refused at all".
template <class E, class Fn>
[[nodiscard]] std::optional<std::uint64_t> allocations_refusing(Fn&& fn) {
  const std::uint64_t before = heap_allocations();
  try {
    fn();
  } catch (const E&) {
    return heap_allocations() - before;
  }
  return std::nullopt;
}

} // namespace taintpool::testing
