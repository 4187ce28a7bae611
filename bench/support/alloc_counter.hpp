// Heap allocations as a benchmark counter.
//
// alloc_counter.cpp replaces the global operator new/delete (every form) of
// the benchmark binary with versions that count, then defer to malloc/free.
// A benchmark reads the count before and after its timed loop and reports the
// difference per cycle with report_allocations(): the success-path cycle of
// the engine must read 0 (DESIGN.md §5), and the naive layouts show what they
// pay instead. Counting is one relaxed atomic increment per allocation, the
// same for every layout measured, so it does not tilt the comparison.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>

namespace taintpool::bench {

/// Calls of any global operator new since the process started.
[[nodiscard]] std::uint64_t heap_allocations() noexcept;

/// Sets state.counters["allocs_per_cycle"] to the allocations since `before`
/// divided by `cycles` (a cycle is one iteration unless said otherwise).
void report_allocations(benchmark::State& state, std::uint64_t before, double cycles);

} // namespace taintpool::bench
