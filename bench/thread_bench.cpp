// Thread scaling on the CPU (issue 11, item 5): 1, 2, 4 and 8 host threads
// launching on one shared Device, each on its own stream with its own
// buffers — HostBackend, so what is measured is the Device's side: the one
// lock every call takes (O5), the scope under it, and the contention
// between threads. bench/gpu/stream_bench.cpp measures the same on a GPU.
//
//   Threads_Launch   Device::launch, 2 reads + 1 write of 4 KiB, empty body,
//                    each thread on its own stream (created by the Device).
//   Threads_Lock     the lock a Device shares among threads once its bias
//                    is revoked (detail::FastMutex under detail::BiasedMutex),
//                    locked and unlocked with nothing else: the floor the
//                    one-lock design sets at each thread count.
//   Threads_StdMutex the same with std::mutex (what the Device used before),
//                    for comparison.
//
// Read items_per_second (launches per second, all threads together) and
// Time (real time per launch per thread). With one lock, the aggregate rate
// cannot grow with threads: the question these answer is how much it drops.
// allocs_per_cycle must read 0 for Threads_Launch (G10). Build Release.
#include <taintpool/detail/fast_mutex.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/testing/heap_allocations.hpp>

#include <benchmark/benchmark.h>

#include <memory>
#include <mutex>

namespace taintpool::bench {
namespace {

using testing::heap_allocations;

constexpr std::uint64_t kBuffer = 4096;

std::unique_ptr<HostBackend> shared_backend;
std::unique_ptr<Device> shared_device;
detail::FastMutex shared_lock;
std::mutex shared_mutex;

void make_device(const benchmark::State&) {
  shared_backend = std::make_unique<HostBackend>();
  shared_device = std::make_unique<Device>(*shared_backend);
}

void drop_device(const benchmark::State&) {
  shared_device.reset();
  shared_backend.reset();
}

LaunchOutcome empty_body(const KernelContext& context) {
  benchmark::DoNotOptimize(context.write(0).data());
  return LaunchOutcome::success();
}

void Threads_Launch(benchmark::State& state) {
  Device& device = *shared_device;
  const StreamId mine = device.create_stream();
  const Allocation a = device.create_buffer(kBuffer, mine);
  const Allocation b = device.create_buffer(kBuffer, mine);
  const Allocation c = device.create_buffer(kBuffer, mine);
  const Binding reads[] = {a.whole(), b.whole()};
  const Binding writes[] = {c.whole()};
  for (int warm = 0; warm < 64; ++warm) {
    benchmark::DoNotOptimize(device.launch(mine, "kernel", reads, writes, empty_body));
  }
  const std::uint64_t before = heap_allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(device.launch(mine, "kernel", reads, writes, empty_body));
  }
  state.counters["allocs_per_cycle"] = benchmark::Counter(
      static_cast<double>(heap_allocations() - before) / static_cast<double>(state.iterations()),
      benchmark::Counter::kAvgThreads);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(Threads_Launch)
    ->Setup(make_device)
    ->Teardown(drop_device)
    ->ThreadRange(1, 8)
    ->UseRealTime();

void Threads_Lock(benchmark::State& state) {
  for (auto _ : state) {
    shared_lock.lock();
    shared_lock.unlock();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(Threads_Lock)->ThreadRange(1, 8)->UseRealTime();

void Threads_StdMutex(benchmark::State& state) {
  for (auto _ : state) {
    shared_mutex.lock();
    shared_mutex.unlock();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(Threads_StdMutex)->ThreadRange(1, 8)->UseRealTime();

} // namespace
} // namespace taintpool::bench

BENCHMARK_MAIN();
