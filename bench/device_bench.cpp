// Benchmarks of the device's write scope (DESIGN.md §5: "a whole successful
// launch scope with a few bindings: 0 allocations in steady state, tens of
// nanoseconds"), in one binary with the engine cycle it is built on, so the
// ratio between them comes from one machine and one run:
//
//   Launch_2R2W      a whole successful Device::launch on the host backend
//                    with 2 read and 2 write bindings and an empty body:
//                    sweep, resolve 4 bindings, check 2 reads (S1), mint the
//                    provisional failure, claim 2 outputs, run the body,
//                    release 2 outputs, prune — the per-launch overhead
//                    taintpool adds to a kernel launch.
//   Submit_2R2W      the same through Device::submit(), whose answer is a
//                    one-pointer LaunchVerdict instead of a LaunchResult
//                    (issue 11, item 7): the difference is what building
//                    and destroying the LaunchResult costs.
//   Launch_Skip      the skip path: 2 reads, one of them stale, 2 writes —
//                    tainted with the root, a skip record kept (S1, S4, G7).
//   EngineCycle_2W   the pool-free engine cycle for the same 2 outputs on
//                    bare Taints: insert TornDown, taint each, written each,
//                    prune. What Launch_2R2W costs beyond it is the device:
//                    handle lookup, binding checks, the read check, the body
//                    call through the backend.
//
// Counters: allocs_per_cycle is global operator new calls per launch after a
// warm-up (testing/src/bench_allocations.cpp): it must read 0 for Launch_2R2W,
// Submit_2R2W and EngineCycle_2W (G10). Build Release.
#include <taintpool/device/device.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/taint.hpp>
#include <taintpool/testing/bench_allocations.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>

namespace taintpool::bench {
namespace {

constexpr std::uint64_t kBuffer = 4096; // bytes per binding

/// The body: does nothing but look at its first output, so the figure is
/// taintpool's overhead and not a kernel's work.
constexpr auto empty_body = [](const KernelContext& context) {
  benchmark::DoNotOptimize(context.write(0).data());
  return LaunchOutcome::success();
};

// Two reads, two writes, every binding clean: the plain path through either
// entry point — launch() answering a LaunchResult, submit() a LaunchVerdict
// (issue 11, item 7). Same Device, same bindings, same check after.
template <bool Submit>
void PlainLaunch_2R2W(benchmark::State& state) {
  HostBackend host;
  Device device(host);
  const Allocation a = device.create_buffer(kBuffer);
  const Allocation b = device.create_buffer(kBuffer);
  const Allocation c = device.create_buffer(kBuffer);
  const Allocation d = device.create_buffer(kBuffer);
  const std::array<Binding, 2> reads = {a.whole(), b.whole()};
  const std::array<Binding, 2> writes = {c.whole(), d.whole()};
  const auto once = [&] {
    if constexpr (Submit) {
      (void)device.submit("kernel", reads, writes, empty_body);
    } else {
      (void)device.launch("kernel", reads, writes, empty_body);
    }
  };
  for (int warm = 0; warm < 16; ++warm) {
    once();
  }
  run_counted(state, once, &device);
  if (!device.graph().empty()) {
    state.SkipWithError("a successful launch left a failure behind (G5)");
  }
}
void Launch_2R2W(benchmark::State& state) {
  PlainLaunch_2R2W<false>(state);
}
BENCHMARK(Launch_2R2W);
void Submit_2R2W(benchmark::State& state) {
  PlainLaunch_2R2W<true>(state);
}
BENCHMARK(Submit_2R2W);

void Launch_Skip(benchmark::State& state) {
  HostBackend host;
  Device device(host);
  const Allocation a = device.create_buffer(kBuffer);
  const Allocation b = device.create_buffer(kBuffer);
  const Allocation c = device.create_buffer(kBuffer);
  const Allocation d = device.create_buffer(kBuffer);
  (void)device.launch("load", {}, {b.bind(0, 64)}, [](const KernelContext&) {
    return LaunchOutcome::failure(Error::launch("bad"));
  });
  const std::array<Binding, 2> reads = {a.whole(), b.whole()};
  const std::array<Binding, 2> writes = {c.whole(), d.whole()};
  for (int warm = 0; warm < 32; ++warm) {
    (void)device.launch("kernel", reads, writes, empty_body);
  }
  const std::uint64_t next = device.graph().next_id().raw();
  run_counted(
      state, [&] { (void)device.launch("kernel", reads, writes, empty_body); }, &device);
  if (device.graph().next_id().raw() != next) {
    state.SkipWithError("a skip minted a failure (S4)");
  }
}
BENCHMARK(Launch_Skip);

void EngineCycle_2W(benchmark::State& state) {
  const ByteRange whole = ByteRange::sized(0, kBuffer);
  ErrorGraph graph;
  std::array<Taint, 2> taints;
  const auto cycle = [&] {
    const FailureId provisional = graph.insert(Error::torn_down());
    for (Taint& taint : taints) {
      taint.taint(whole, provisional, graph);
    }
    for (Taint& taint : taints) {
      taint.written(whole, graph);
    }
    graph.prune(provisional);
  };
  cycle(); // warm-up
  run_counted(state, cycle, taints.data());
  if (!graph.empty()) {
    state.SkipWithError("the cycle left a failure behind (G5)");
  }
}
BENCHMARK(EngineCycle_2W);

} // namespace
} // namespace taintpool::bench

BENCHMARK_MAIN();
