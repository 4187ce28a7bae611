// bench_allocations.hpp over the replaced global operator new that the
// fuzzers and tests share (replace_new.cpp): a program holds one
// replacement, so there is one, and it counts.
#include <taintpool/testing/bench_allocations.hpp>

namespace taintpool::bench {

void report_allocations(benchmark::State& state, std::uint64_t before, double cycles) {
  const auto allocations = static_cast<double>(heap_allocations() - before);
  state.counters["allocs_per_cycle"] = benchmark::Counter(cycles > 0 ? allocations / cycles : 0);
}

} // namespace taintpool::bench
