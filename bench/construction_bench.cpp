// What a new Device costs (issue 13): construct + destroy, in the
// configurations the fuzzers build per input and the default one, with
// allocs_per_cycle (global operator new calls per construction and
// destruction, testing/bench_allocations.hpp). Bytes are not counted here
// (the shared counter counts calls); fuzz/ROUNDS.md's thirty-first round
// gives them from -trace_malloc.
//
// Shapes:
//   Default         Device on a HostBackend with its default MemoryConfig.
//   Deferred        DeferredHostBackend + Device, the fuzzers' config
//                   (device_fuzzer, stream_fuzzer build this per input).
//   DeferredStream  one stream created and destroyed on a warm Device.
//   Rank            one collective_fuzzer rank: DeferredHostBackend,
//                   CollectiveBackend, Device, Collectives on a world.
//   World/N         a LoopbackWorld of N ranks alone.
//   FirstLaunch     Deferred plus one buffer and one launch: the lanes,
//                   pools and pages a Device makes on first use.
#include <taintpool/collective/collective_backend.hpp>
#include <taintpool/collective/collectives.hpp>
#include <taintpool/collective/loopback.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/testing/bench_allocations.hpp>
#include <taintpool/testing/many_slices_config.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <optional>

namespace taintpool {
namespace {

using bench::run_counted;

/// The fuzzers' pools (testing/many_slices_config.hpp).
using testing::many_slices_config;

/// A Device's options on `config` (the fuzzers' pools, built once per
/// benchmark): copied into the default options' lists, whose capacity it
/// reuses.
DeviceOptions options_on(const MemoryConfig& config) {
  DeviceOptions options;
  options.memory = config;
  return options;
}

void Construct_Default(benchmark::State& state) {
  HostBackend backend;
  { const Device warm(backend); }
  run_counted(
      state, [&] { const Device device(backend); }, &backend);
}
BENCHMARK(Construct_Default);

void Construct_Deferred(benchmark::State& state) {
  HostStorage pages(256);
  const MemoryConfig config = many_slices_config();
  const auto cycle = [&] {
    DeferredHostBackend backend(pages, config);
    const Device device(backend, options_on(config));
  };
  cycle();
  run_counted(state, cycle, &pages);
}
BENCHMARK(Construct_Deferred);

void Construct_DeferredStream(benchmark::State& state) {
  DeferredHostBackend backend;
  Device device(backend);
  device.destroy_stream(device.create_stream());
  run_counted(
      state, [&] { device.destroy_stream(device.create_stream()); }, &device);
}
BENCHMARK(Construct_DeferredStream);

void Construct_Rank(benchmark::State& state) {
  HostStorage pages(256);
  const MemoryConfig config = many_slices_config();
  LoopbackWorld world(2);
  const auto cycle = [&] {
    DeferredHostBackend backend(pages, config);
    CollectiveBackend adaptor(backend);
    Device device(adaptor, options_on(config));
    const Collectives collectives(device, world.rank(0));
  };
  cycle();
  run_counted(state, cycle, &world);
}
BENCHMARK(Construct_Rank);

void Construct_World(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  { const LoopbackWorld warm(ranks); }
  run_counted(
      state, [&] { const LoopbackWorld world(ranks); }, &ranks);
}
BENCHMARK(Construct_World)->ArgName("N")->Arg(2)->Arg(4);

void Construct_FirstLaunch(benchmark::State& state) {
  HostStorage pages(256);
  const MemoryConfig config = many_slices_config();
  const auto cycle = [&] {
    DeferredHostBackend backend(pages, config);
    Device device(backend, options_on(config));
    const Allocation in = device.create_buffer(64);
    const Allocation out = device.create_buffer(64);
    (void)device.launch("k", {in.whole()}, {out.whole()},
                        [](const KernelContext&) { return LaunchOutcome::success(); });
    device.synchronize();
  };
  cycle();
  run_counted(state, cycle, &pages);
}
BENCHMARK(Construct_FirstLaunch);

} // namespace
} // namespace taintpool

BENCHMARK_MAIN();
