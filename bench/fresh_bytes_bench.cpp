// The never-written mode's price (issue 15, N1): allocate plus the first
// full write, under FreshBytes::Trusted and FreshBytes::NeverWritten, in one
// binary so the two figures come from one run.
//
// The contract: with the mode on, the cycle costs at most ~10 ns more than
// trusted mode and allocates nothing (allocs_per_cycle 0): the claim is the
// inline one (T6) and the first write takes the launch's fast path.
//
//   FreshBytes_Manager  MemoryManager::allocate + written(whole) + drop.
//   FreshBytes_Device   Device::create_buffer + a launch that writes the whole
//                       buffer (empty body) + drop.
//   FreshBytes_DevicePaired  the Device cycle in both modes at once: blocks
//                       of 256 cycles alternate between a trusted and a
//                       never-written Device, each block timed by thread
//                       CPU time, so drift of a noisy machine (clock, a
//                       neighbour) lands on both sides alike; counters give
//                       ns per cycle of each and their difference.
// Args: mode (0 Trusted, 1 NeverWritten), and whether another never-written
// buffer stays alive throughout (1: the node lives on and, on the Device,
// sits in the graph's table behind the launches' provisional failures — a
// hash probe per tag; 0: each cycle's buffer is the only carrier, so the
// node is minted and dies every cycle).
#include <taintpool/device/device.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>
#include <taintpool/testing/bench_allocations.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <ctime>

namespace taintpool::bench {
namespace {

constexpr std::uint64_t kBuffer = 4096;

MemoryConfig config_for(std::int64_t mode) {
  MemoryConfig config;
  config.fresh_bytes = mode == 0 ? FreshBytes::Trusted : FreshBytes::NeverWritten;
  return config;
}

const char* label_for(std::int64_t mode, std::int64_t keep) {
  if (mode == 0) {
    return keep == 0 ? "trusted" : "trusted, another buffer alive";
  }
  return keep == 0 ? "never-written, sole carrier" : "never-written, node kept alive";
}

void FreshBytes_Manager(benchmark::State& state) {
  HostStorage storage;
  ErrorGraph graph;
  {
    MemoryManager memory(storage, graph, config_for(state.range(0)));
    const Allocation kept = memory.allocate(state.range(1) != 0 ? 64 : 0);
    auto cycle = [&] {
      Allocation buffer = memory.allocate(kBuffer);
      memory.written(buffer.whole());
      benchmark::DoNotOptimize(buffer);
    };
    for (int warm = 0; warm < 64; ++warm) {
      cycle();
    }
    run_counted(state, cycle, &memory);
    memory.sweep();
    if (graph.size() != (state.range(0) != 0 && state.range(1) != 0 ? 1u : 0u)) {
      state.SkipWithError("a written buffer left a failure behind (N1, G3)");
    }
  }
  state.SetLabel(label_for(state.range(0), state.range(1)));
}
BENCHMARK(FreshBytes_Manager)->ArgsProduct({{0, 1}, {0, 1}});

void FreshBytes_Device(benchmark::State& state) {
  HostBackend host;
  DeviceOptions options;
  options.memory = config_for(state.range(0));
  Device device(host, options);
  const Allocation kept = device.create_buffer(state.range(1) != 0 ? 64 : 0);
  const auto body = [](const KernelContext& context) {
    benchmark::DoNotOptimize(context.write(0).data());
    return LaunchOutcome::success();
  };
  auto cycle = [&] {
    Allocation buffer = device.create_buffer(kBuffer);
    const Binding whole = buffer.whole();
    benchmark::DoNotOptimize(device.launch("fill", {}, std::span<const Binding>(&whole, 1), body));
  };
  for (int warm = 0; warm < 64; ++warm) {
    cycle();
  }
  run_counted(state, cycle, &device);
  device.sweep();
  if (device.graph().size() != (state.range(0) != 0 && state.range(1) != 0 ? 1u : 0u)) {
    state.SkipWithError("a written buffer left a failure behind (N1, G3)");
  }
  state.SetLabel(label_for(state.range(0), state.range(1)));
}
BENCHMARK(FreshBytes_Device)->ArgsProduct({{0, 1}, {0, 1}});

double thread_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

void FreshBytes_DevicePaired(benchmark::State& state) {
  constexpr int kBlock = 256;
  HostBackend trusted_host;
  HostBackend never_host;
  DeviceOptions trusted_options;
  trusted_options.memory = config_for(0);
  DeviceOptions never_options;
  never_options.memory = config_for(1);
  Device trusted(trusted_host, trusted_options);
  Device never(never_host, never_options);
  const Allocation kept_trusted = trusted.create_buffer(state.range(0) != 0 ? 64 : 0);
  const Allocation kept_never = never.create_buffer(state.range(0) != 0 ? 64 : 0);
  const auto body = [](const KernelContext& context) {
    benchmark::DoNotOptimize(context.write(0).data());
    return LaunchOutcome::success();
  };
  auto block = [&](Device& device) {
    const double start = thread_seconds();
    for (int at = 0; at < kBlock; ++at) {
      Allocation buffer = device.create_buffer(kBuffer);
      const Binding whole = buffer.whole();
      benchmark::DoNotOptimize(
          device.launch("fill", {}, std::span<const Binding>(&whole, 1), body));
    }
    return thread_seconds() - start;
  };
  block(trusted);
  block(never);
  double trusted_seconds = 0;
  double never_seconds = 0;
  std::int64_t blocks = 0;
  for (auto _ : state) {
    trusted_seconds += block(trusted);
    never_seconds += block(never);
    ++blocks;
  }
  const double cycles = static_cast<double>(blocks) * kBlock;
  state.counters["trusted_ns"] = trusted_seconds / cycles * 1e9;
  state.counters["never_written_ns"] = never_seconds / cycles * 1e9;
  state.counters["delta_ns"] = (never_seconds - trusted_seconds) / cycles * 1e9;
  never.sweep();
  if (never.graph().size() != (state.range(0) != 0 ? 1u : 0u)) {
    state.SkipWithError("a written buffer left a failure behind (N1, G3)");
  }
  state.SetLabel(state.range(0) == 0 ? "sole carrier" : "node kept alive");
}
BENCHMARK(FreshBytes_DevicePaired)->Arg(0)->Arg(1);

} // namespace
} // namespace taintpool::bench

BENCHMARK_MAIN();
