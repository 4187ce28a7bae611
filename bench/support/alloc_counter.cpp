// alloc_counter.hpp over the replaced global operator new that the fuzzers
// and tests share (fuzz/common/replace_new.cpp, linked into this library):
// a program holds one replacement, so there is one, and it counts.
#include "alloc_counter.hpp"

#include "common/replace_new.hpp"

namespace taintpool::bench {

std::uint64_t heap_allocations() noexcept {
  return fuzz::heap_allocations();
}

void report_allocations(benchmark::State& state, std::uint64_t before, double cycles) {
  const auto allocations = static_cast<double>(heap_allocations() - before);
  state.counters["allocs_per_cycle"] = benchmark::Counter(cycles > 0 ? allocations / cycles : 0);
}

} // namespace taintpool::bench
