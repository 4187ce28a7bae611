// Heap allocations as a benchmark counter.
//
// The benchmark binary's global operator new/delete (every form) count each
// allocation, then defer to malloc/free: testing/src/replace_new.cpp, the
// replacement the fuzzers and tests use too (heap_allocations.hpp).
// A benchmark reads the count before and after its timed loop and reports the
// difference per cycle with report_allocations(): the success-path cycle of
// the engine must read 0 (DESIGN.md §5), and the naive layouts show what they
// pay instead. Counting is one relaxed atomic increment per allocation, the
// same for every layout measured, so it does not tilt the comparison.
#pragma once

#include <taintpool/testing/heap_allocations.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>

namespace taintpool::bench {

using testing::heap_allocations;

/// Sets state.counters["allocs_per_cycle"] to the allocations since `before`
/// divided by `cycles` (a cycle is one iteration unless said otherwise).
void report_allocations(benchmark::State& state, std::uint64_t before, double cycles);

/// The timed loop of every allocation-counting benchmark: `cycle` once per
/// iteration, `keep` (the state the cycle works on) kept observable so the
/// work is not optimised away, then allocs_per_cycle. Warm up first: the
/// count starts here.
template <class Cycle>
void run_counted(benchmark::State& state, Cycle&& cycle, const void* keep) {
  const std::uint64_t before = heap_allocations();
  for (auto _ : state) {
    cycle();
    benchmark::DoNotOptimize(keep);
    benchmark::ClobberMemory();
  }
  report_allocations(state, before, static_cast<double>(state.iterations()));
}

} // namespace taintpool::bench
