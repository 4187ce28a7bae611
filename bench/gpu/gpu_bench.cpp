// taintpool_gpu_bench — the pool and the launch scope on a real GPU, against
// what users would pick instead (DESIGN.md §5; issue 6). One binary, one run,
// one table at the end.
//
// 1. Same-size pairs: allocate one buffer and free it, again and again, at
//    256 B … 1 GiB. Ours: MemoryManager::allocate + dropping the handle
//    (reserve + bind + release; the release is discovered by the next
//    allocate, which the next pair pays for). Against cudaMalloc/cudaFree,
//    and cudaMallocAsync/cudaFreeAsync on a stream from the device's default
//    pool with its release threshold at 0 and at UINT64_MAX. Host clock over
//    a batch of pairs, the stream synchronised inside the timed region for
//    the stream-ordered calls; ns per pair is the median over samples.
// 2. The random workload: N operations (N = 1000, 10000, 100000), each an
//    allocation (73%) of a size uniform in [1, 1 MiB] or a free (27%) of a
//    uniformly chosen live buffer; the same seeded sequence for every
//    allocator, each starting cold (a fresh manager; the async pool trimmed
//    to 0). ns per operation (median of repeats), peak in use (the live
//    bytes' maximum: the same for all) and peak reserved: ours from the
//    manager's exact statistics, cudaMallocAsync's from its pool's
//    high-water marks, cudaMalloc's from cudaMemGetInfo at the end of the
//    run (the live set grows by 0.46 buffers per operation, so the end is
//    the peak within a few buffers).
// 3. The launch scope: batches of 256 launches of an empty kernel, enqueue
//    time per launch on the host clock (the batch is then synchronised,
//    untimed): bare (the kernel launch alone), scoped (Device::launch with
//    two reads and one write, the body launching the same kernel), the
//    scope alone (the body launches nothing), and checked (the body takes a
//    status slot; device.synchronize() reading the slots is timed
//    separately, per launch). Variants are interleaved round by round so
//    clock drift hits them alike; medians over rounds.
//
// 4. One unit of physical memory moved: CudaStorage's virtual memory maps a
//    chunk of 2 MiB (the granularity) or 20 MiB into a reservation
//    (cuMemCreate + cuMemMap + cuMemSetAccess) and unmaps it (device
//    synchronised, cuMemUnmap + cuMemRelease), on an idle device; µs per
//    map and per unmap, median over rounds of 64 chunks. What an arena that
//    let 2 MiB units go and took them back would pay per unit (issue 12,
//    bench/physical_units.cpp counts the units).
//
// Nothing here is asserted: the figures go to bench/RESULTS.md ("GPU").
// Exit 77 when no GPU is present (ctest: skipped).
#include <taintpool/cuda/cuda_backend.hpp>
#include <taintpool/cuda/cuda_storage.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/pool/memory_manager.hpp>
#include <taintpool/pool/virtual_memory.hpp>
#include <taintpool/testing/scope_shape.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cuda_runtime.h>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "bench_kernels.hpp"

namespace {

using taintpool::Allocation;
using taintpool::ErrorGraph;
using taintpool::MemoryManager;
using taintpool::cuda::CudaStorage;
using taintpool::cuda::CudaStorageOptions;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = kKiB * 1024;
constexpr std::uint64_t kGiB = kMiB * 1024;

bool quick = false;

void check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s (%s)\n", what, cudaGetErrorName(error),
                 cudaGetErrorString(error));
    std::exit(1);
  }
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 != 0 ? values[middle] : (values[middle - 1] + values[middle]) / 2.0;
}

std::string size_label(std::uint64_t bytes) {
  if (bytes >= kGiB && bytes % kGiB == 0) {
    return std::to_string(bytes / kGiB) + " GiB";
  }
  if (bytes >= kMiB && bytes % kMiB == 0) {
    return std::to_string(bytes / kMiB) + " MiB";
  }
  if (bytes >= kKiB && bytes % kKiB == 0) {
    return std::to_string(bytes / kKiB) + " KiB";
  }
  return std::to_string(bytes) + " B";
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string gib(std::uint64_t bytes) {
  return fixed(static_cast<double>(bytes) / static_cast<double>(kGiB), 2);
}

/// Everything printed, kept to be written to --out as well.
std::ostringstream report;

void emit(const std::string& line) {
  std::cout << line << "\n" << std::flush;
  report << line << "\n";
}

// ------------------------------------------------------------ allocators

/// The device's default memory pool, with its release threshold set.
cudaMemPool_t default_pool(std::uint64_t threshold) {
  cudaMemPool_t pool = nullptr;
  check(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
  std::uint64_t value = threshold;
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &value),
        "cudaMemPoolSetAttribute(release threshold)");
  return pool;
}

void reset_pool(cudaMemPool_t pool, cudaStream_t stream) {
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
  std::uint64_t zero = 0;
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero), "reset high");
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero), "reset high");
}

// ------------------------------------------------------------ 1. same-size pairs

struct PairRow {
  std::uint64_t size;
  double ours;
  double malloc;
  double async_zero;
  double async_max;
};

double time_ours_pairs(MemoryManager& memory, std::uint64_t size, int pairs, int samples) {
  std::uint64_t sink = 0;
  for (int warm = 0; warm < 64; ++warm) {
    const Allocation buffer = memory.allocate(size);
    sink += buffer.id().raw();
  }
  std::vector<double> ns;
  for (int sample = 0; sample < samples; ++sample) {
    const Clock::time_point start = Clock::now();
    for (int pair = 0; pair < pairs; ++pair) {
      const Allocation buffer = memory.allocate(size);
      sink += buffer.id().raw();
    }
    ns.push_back(seconds_since(start) * 1e9 / pairs);
  }
  if (sink == 0) {
    std::cout << "";
  }
  return median(ns);
}

double time_malloc_pairs(std::uint64_t size, int pairs, int samples) {
  std::vector<double> ns;
  for (int sample = 0; sample <= samples; ++sample) { // Sample 0 warms up.
    const Clock::time_point start = Clock::now();
    for (int pair = 0; pair < pairs; ++pair) {
      void* pointer = nullptr;
      check(cudaMalloc(&pointer, size), "cudaMalloc");
      check(cudaFree(pointer), "cudaFree");
    }
    if (sample != 0) {
      ns.push_back(seconds_since(start) * 1e9 / pairs);
    }
  }
  return median(ns);
}

double time_async_pairs(cudaStream_t stream, std::uint64_t size, int pairs, int samples) {
  std::vector<double> ns;
  for (int sample = 0; sample <= samples; ++sample) {
    const Clock::time_point start = Clock::now();
    for (int pair = 0; pair < pairs; ++pair) {
      void* pointer = nullptr;
      check(cudaMallocAsync(&pointer, size, stream), "cudaMallocAsync");
      check(cudaFreeAsync(pointer, stream), "cudaFreeAsync");
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    if (sample != 0) {
      ns.push_back(seconds_since(start) * 1e9 / pairs);
    }
  }
  return median(ns);
}

std::vector<PairRow> same_size_pairs(cudaStream_t stream) {
  std::vector<PairRow> rows;
  CudaStorage storage;
  ErrorGraph graph;
  MemoryManager memory(storage, graph);
  const std::vector<std::uint64_t> sizes = {256,       4 * kKiB,   64 * kKiB, kMiB,
                                            16 * kMiB, 256 * kMiB, kGiB};
  const int samples = quick ? 2 : 7;
  for (const std::uint64_t size : sizes) {
    PairRow row{size, 0, 0, 0, 0};
    row.ours = time_ours_pairs(memory, size, quick ? 1000 : 200000, samples);
    const int malloc_pairs = quick ? 4 : size <= kMiB ? 2000 : size <= 16 * kMiB ? 300 : 40;
    row.malloc = time_malloc_pairs(size, malloc_pairs, samples);
    const int async_pairs = quick ? 200 : 20000;
    cudaMemPool_t pool = default_pool(0);
    reset_pool(pool, stream);
    row.async_zero = time_async_pairs(stream, size, async_pairs, samples);
    pool = default_pool(std::numeric_limits<std::uint64_t>::max());
    row.async_max = time_async_pairs(stream, size, async_pairs, samples);
    reset_pool(default_pool(0), stream);
    rows.push_back(row);
    std::cerr << "pairs " << size_label(size) << ": ours " << fixed(row.ours, 1) << " ns\n";
  }
  return rows;
}

// ------------------------------------------------------------ 2. random workload

struct Step {
  bool allocate;
  std::uint64_t size;   ///< For an allocation.
  std::uint64_t random; ///< For a free: which live buffer (modulo the live count).
};

std::vector<Step> workload(std::size_t operations, std::uint64_t max_size, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<std::uint64_t> size(1, max_size);
  std::vector<Step> steps;
  steps.reserve(operations);
  std::size_t live = 0;
  for (std::size_t at = 0; at < operations; ++at) {
    const bool allocate = live == 0 || random() % 100 < 73;
    steps.push_back(Step{allocate, size(random), random()});
    live += allocate ? 1 : 0;
    live -= allocate ? 0 : 1;
  }
  return steps;
}

struct RandomRow {
  std::size_t operations = 0;
  double ns[4] = {};             ///< ours, cudaMalloc, async thr 0, async thr max.
  std::uint64_t peak_in_use = 0; ///< Bytes, the same for every allocator.
  std::uint64_t peak_reserved[4] = {};
};

/// Runs the steps with `allocate(size) -> T` and `release(T&)`; returns the
/// seconds and the peak of live bytes.
template <class T, class Allocate, class Release>
double replay(const std::vector<Step>& steps, Allocate allocate, Release release,
              std::uint64_t& peak_live, std::vector<T>& live) {
  std::vector<std::uint64_t> sizes;
  live.clear();
  live.reserve(steps.size());
  sizes.reserve(steps.size());
  std::uint64_t bytes = 0;
  peak_live = 0;
  const Clock::time_point start = Clock::now();
  for (const Step& step : steps) {
    if (step.allocate) {
      live.push_back(allocate(step.size));
      sizes.push_back(step.size);
      bytes += step.size;
      peak_live = std::max(peak_live, bytes);
    } else {
      const std::size_t victim = static_cast<std::size_t>(step.random % live.size());
      release(live[victim]);
      live[victim] = std::move(live.back());
      live.pop_back();
      bytes -= sizes[victim];
      sizes[victim] = sizes.back();
      sizes.pop_back();
    }
  }
  return seconds_since(start);
}

std::uint64_t device_used() {
  std::size_t free_bytes = 0;
  std::size_t total = 0;
  check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  return total - free_bytes;
}

RandomRow random_workload(cudaStream_t stream, std::size_t operations) {
  RandomRow row;
  row.operations = operations;
  const std::vector<Step> steps = workload(operations, kMiB, 0x7A1A7 + operations);
  const int repeats = quick ? 1 : operations >= 100000 ? 3 : 5;
  std::vector<double> ns[4];
  for (int repeat = 0; repeat < repeats; ++repeat) {
    { // Ours: a fresh manager on CudaStorage (its arena maps virtual memory).
      CudaStorage storage;
      ErrorGraph graph;
      MemoryManager memory(storage, graph);
      std::vector<Allocation> live;
      const double seconds = replay(
          steps, [&](std::uint64_t size) { return memory.allocate(size); },
          [](Allocation& buffer) { buffer.reset(); }, row.peak_in_use, live);
      ns[0].push_back(seconds * 1e9 / static_cast<double>(operations));
      row.peak_reserved[0] = memory.stats().peak_reserved;
      live.clear();
    }
    { // cudaMalloc / cudaFree.
      const std::uint64_t before = device_used();
      std::vector<void*> live;
      const double seconds = replay(
          steps,
          [](std::uint64_t size) {
            void* pointer = nullptr;
            check(cudaMalloc(&pointer, size), "cudaMalloc");
            return pointer;
          },
          [](void*& pointer) { check(cudaFree(pointer), "cudaFree"); }, row.peak_in_use, live);
      ns[1].push_back(seconds * 1e9 / static_cast<double>(operations));
      row.peak_reserved[1] = device_used() - before;
      for (void* pointer : live) {
        check(cudaFree(pointer), "cudaFree");
      }
    }
    for (int variant = 0; variant < 2; ++variant) { // cudaMallocAsync, threshold 0 / max.
      cudaMemPool_t pool =
          default_pool(variant == 0 ? 0 : std::numeric_limits<std::uint64_t>::max());
      reset_pool(pool, stream);
      std::vector<void*> live;
      const Clock::time_point start = Clock::now();
      static_cast<void>(replay(
          steps,
          [&](std::uint64_t size) {
            void* pointer = nullptr;
            check(cudaMallocAsync(&pointer, size, stream), "cudaMallocAsync");
            return pointer;
          },
          [&](void*& pointer) { check(cudaFreeAsync(pointer, stream), "cudaFreeAsync"); },
          row.peak_in_use, live));
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      ns[2 + variant].push_back(seconds_since(start) * 1e9 / static_cast<double>(operations));
      std::uint64_t high = 0;
      check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &high), "reserved high");
      row.peak_reserved[2 + variant] = high;
      for (void* pointer : live) {
        check(cudaFreeAsync(pointer, stream), "cudaFreeAsync");
      }
      reset_pool(default_pool(0), stream);
    }
  }
  for (int variant = 0; variant < 4; ++variant) {
    row.ns[variant] = median(ns[variant]);
  }
  std::cerr << "random N=" << operations << ": ours " << fixed(row.ns[0], 1) << " ns/op\n";
  return row;
}

// ------------------------------------------------------------ 3. launch scope

struct ScopeRow {
  double bare = 0;         ///< ns per launch, enqueue.
  double scoped = 0;       ///< Device::launch around the same launch.
  double scope_only = 0;   ///< Device::launch whose body launches nothing.
  double checked = 0;      ///< Device::launch with a status slot.
  double checked_sync = 0; ///< device.synchronize() reading the slots, per launch.
  double bare_sync = 0;    ///< cudaStreamSynchronize after a bare batch, per launch.
  double host_scope = 0;   ///< The same scope on HostBackend: the Device's own share.
  double last_error = 0;   ///< Two cudaGetLastError calls: CudaBackend::run's own share.
};

/// The scope's parts, without a GPU in the loop: Device::launch on the host
/// backend (the Device's own bookkeeping), and the two cudaGetLastError
/// calls CudaBackend::run adds.
void scope_parts(ScopeRow& row, int rounds) {
  using namespace taintpool;
  HostBackend backend;
  Device device(backend);
  const testing::ScopeShape shape(device);
  const std::span<const Binding> reads = shape.reads;
  const std::span<const Binding> writes = shape.writes;
  constexpr int batch = 256;
  std::vector<double> host;
  std::vector<double> errors;
  int sink = 0;
  for (int round = -5; round < rounds; ++round) {
    Clock::time_point start = Clock::now();
    for (int at = 0; at < batch; ++at) {
      static_cast<void>(device.launch(
          "nothing", reads, writes, [](const KernelContext&) { return LaunchOutcome::success(); }));
    }
    const double scope = seconds_since(start) * 1e9 / batch;
    start = Clock::now();
    for (int at = 0; at < batch; ++at) {
      sink += static_cast<int>(cudaGetLastError());
      sink += static_cast<int>(cudaGetLastError());
    }
    const double error = seconds_since(start) * 1e9 / batch;
    if (round >= 0) {
      host.push_back(scope);
      errors.push_back(error);
    }
  }
  row.host_scope = median(host);
  row.last_error = median(errors) + (sink != 0 ? 1e-9 : 0.0);
}

ScopeRow launch_scope() {
  using namespace taintpool;
  using namespace taintpool::cuda;
  CudaBackend backend;
  Device device(backend);
  const Stream stream = backend.stream();
  const testing::ScopeShape shape(device);
  const std::span<const Binding> reads = shape.reads;
  const std::span<const Binding> writes = shape.writes;
  constexpr int batch = 256;
  const int rounds = quick ? 5 : 400;

  const auto bare = [&] {
    for (int at = 0; at < batch; ++at) {
      bench::launch_empty(stream);
    }
  };
  const auto scoped = [&] {
    for (int at = 0; at < batch; ++at) {
      static_cast<void>(device.launch("empty", reads, writes, [&](const KernelContext& context) {
        bench::launch_empty(stream_of(context));
        return LaunchOutcome::success();
      }));
    }
  };
  const auto scope_only = [&] {
    for (int at = 0; at < batch; ++at) {
      static_cast<void>(device.launch(
          "nothing", reads, writes, [](const KernelContext&) { return LaunchOutcome::success(); }));
    }
  };
  const auto checked = [&] {
    for (int at = 0; at < batch; ++at) {
      static_cast<void>(
          device.launch("empty checked", reads, writes, [&](const KernelContext& context) {
            bench::launch_empty_checked(stream_of(context), backend.checked(context, {0}));
            return LaunchOutcome::success();
          }));
    }
  };
  std::vector<double> samples[6];
  for (int round = -5; round < rounds; ++round) { // Five warm-up rounds.
    const auto timed = [&](const std::function<void()>& body, int slot, bool checked_sync) {
      Clock::time_point start = Clock::now();
      body();
      const double enqueue = seconds_since(start) * 1e9 / batch;
      start = Clock::now();
      if (checked_sync) {
        device.synchronize();
      } else {
        check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      }
      const double sync = seconds_since(start) * 1e9 / batch;
      if (round >= 0) {
        samples[slot].push_back(enqueue);
        if (slot == 0) {
          samples[5].push_back(sync);
        }
        if (slot == 3) {
          samples[4].push_back(sync);
        }
      }
    };
    timed(bare, 0, false);
    timed(scoped, 1, false);
    timed(scope_only, 2, false);
    timed(checked, 3, true);
  }
  if (device.graph().size() != 0 || backend.unconfirmed_launches() != 0) {
    std::cerr << "the scope benchmark left failures behind\n";
    std::exit(1);
  }
  ScopeRow row;
  row.bare = median(samples[0]);
  row.scoped = median(samples[1]);
  row.scope_only = median(samples[2]);
  row.checked = median(samples[3]);
  row.checked_sync = median(samples[4]);
  row.bare_sync = median(samples[5]);
  scope_parts(row, rounds);
  return row;
}

// ------------------------------------------------------------ 4. one unit moved

struct UnitRow {
  std::uint64_t size;
  double map_us;
  double unmap_us;
};

std::vector<UnitRow> unit_moves() {
  std::vector<UnitRow> rows;
  CudaStorage storage;
  taintpool::VirtualMemory* vm = storage.virtual_memory();
  if (vm == nullptr) {
    return rows;
  }
  const std::size_t chunks = 64;
  const int rounds = quick ? 2 : 9;
  for (const std::uint64_t size : {2 * kMiB, 20 * kMiB}) {
    const std::uint64_t step =
        (size + vm->granularity() - 1) / vm->granularity() * vm->granularity();
    const taintpool::StorageHandle reservation = vm->reserve(step * chunks);
    std::vector<taintpool::StorageHandle> mapped(chunks);
    std::vector<double> map_us;
    std::vector<double> unmap_us;
    for (int round = 0; round < rounds; ++round) {
      Clock::time_point start = Clock::now();
      for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
        mapped[chunk] = vm->map(reservation, step * chunk, step);
      }
      map_us.push_back(seconds_since(start) * 1e6 / static_cast<double>(chunks));
      start = Clock::now();
      for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
        vm->unmap(reservation, step * chunk, step, mapped[chunk]);
      }
      unmap_us.push_back(seconds_since(start) * 1e6 / static_cast<double>(chunks));
    }
    vm->unreserve(reservation, step * chunks);
    rows.push_back({step, median(map_us), median(unmap_us)});
  }
  return rows;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return text;
}

} // namespace

int main(int argc, char** argv) {
  std::string out_path;
  for (int at = 1; at < argc; ++at) {
    const std::string argument = argv[at];
    if (argument == "--quick") {
      quick = true;
    } else if (argument == "--out" && at + 1 < argc) {
      out_path = argv[++at];
    } else {
      std::cerr << "usage: taintpool_gpu_bench [--quick] [--out FILE]\n";
      return 2;
    }
  }
  std::string why;
  if (taintpool::cuda::device_count(&why) == 0) {
    std::cout << "no CUDA GPU (" << why << "): skipped\n";
    return 77;
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  int driver = 0;
  int runtime = 0;
  check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  const std::vector<PairRow> pairs = same_size_pairs(stream);
  std::vector<RandomRow> randoms;
  for (const std::size_t operations :
       quick ? std::vector<std::size_t>{1000} : std::vector<std::size_t>{1000, 10000, 100000}) {
    randoms.push_back(random_workload(stream, operations));
  }
  const ScopeRow scope = launch_scope();
  const std::vector<UnitRow> units = unit_moves();

  emit("GPU: " + std::string(properties.name) + " (sm_" + std::to_string(properties.major) +
       std::to_string(properties.minor) + ", " + std::to_string(properties.multiProcessorCount) +
       " SMs, " + gib(properties.totalGlobalMem) + " GiB); CUDA driver API " +
       std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10) + ", runtime " +
       std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) + "; " + today() +
       (quick ? " (QUICK RUN: not for the record)" : ""));
  emit("");
  emit("Same-size pairs, ns per allocate+free pair (median):");
  emit("");
  emit("| size | taintpool | cudaMalloc/cudaFree | cudaMallocAsync thr 0 | cudaMallocAsync thr max "
       "| async thr max / ours |");
  emit("|---:|---:|---:|---:|---:|---:|");
  for (const PairRow& row : pairs) {
    emit("| " + size_label(row.size) + " | " + fixed(row.ours, 1) + " | " + fixed(row.malloc, 0) +
         " | " + fixed(row.async_zero, 1) + " | " + fixed(row.async_max, 1) + " | " +
         fixed(row.async_max / row.ours, 1) + "x |");
  }
  emit("");
  emit("Random workload (73% allocate uniform 1 B..1 MiB / 27% free), ns per operation "
       "(median), peak reserved GiB (peak reserved / peak in use):");
  emit("");
  emit("| N | peak in use GiB | taintpool | cudaMalloc/cudaFree | cudaMallocAsync thr 0 | "
       "cudaMallocAsync thr max | async thr max / ours |");
  emit("|---:|---:|---:|---:|---:|---:|---:|");
  for (const RandomRow& row : randoms) {
    std::string line = "| " + std::to_string(row.operations) + " | " + gib(row.peak_in_use);
    for (int variant = 0; variant < 4; ++variant) {
      line += " | " + fixed(row.ns[variant], 1) + " ns; " + gib(row.peak_reserved[variant]) +
              " GiB (" +
              fixed(static_cast<double>(row.peak_reserved[variant]) /
                        static_cast<double>(std::max<std::uint64_t>(row.peak_in_use, 1)),
                    2) +
              "x)";
    }
    emit(line + " | " + fixed(row.ns[3] / row.ns[0], 1) + "x |");
  }
  emit("");
  emit("Launch scope (batches of 256 launches of an empty kernel; host enqueue time per launch, "
       "median):");
  emit("");
  emit("| what | ns per launch | vs bare launch |");
  emit("|---|---:|---:|");
  emit("| bare kernel launch | " + fixed(scope.bare, 1) + " | - |");
  emit("| Device::launch (2 reads, 1 write) + the same launch | " + fixed(scope.scoped, 1) +
       " | +" + fixed(scope.scoped - scope.bare, 1) + " ns (" +
       fixed((scope.scoped - scope.bare) / scope.bare * 100.0, 2) + "%) |");
  emit("| the scope alone (body launches nothing) | " + fixed(scope.scope_only, 1) + " | " +
       fixed(scope.scope_only / scope.bare * 100.0, 2) + "% |");
  emit("| of which the Device's bookkeeping (the same scope on HostBackend) | " +
       fixed(scope.host_scope, 1) + " | " + fixed(scope.host_scope / scope.bare * 100.0, 2) +
       "% |");
  emit("| of which CudaBackend::run's two cudaGetLastError calls | " + fixed(scope.last_error, 1) +
       " | " + fixed(scope.last_error / scope.bare * 100.0, 2) + "% |");
  emit("| checked launch (status slot) + the launch | " + fixed(scope.checked, 1) + " | +" +
       fixed(scope.checked - scope.bare, 1) + " ns (" +
       fixed((scope.checked - scope.bare) / scope.bare * 100.0, 2) + "%) |");
  emit("| synchronise: bare stream / Device::synchronize reading slots, per launch | " +
       fixed(scope.bare_sync, 1) + " / " + fixed(scope.checked_sync, 1) + " | - |");

  emit("");
  emit("One chunk of physical memory mapped and unmapped through CudaStorage's virtual memory "
       "(idle device; median over rounds of 64 chunks):");
  emit("");
  emit("| chunk | map: cuMemCreate + cuMemMap + cuMemSetAccess, us | unmap: synchronise + "
       "cuMemUnmap + cuMemRelease, us |");
  emit("|---:|---:|---:|");
  for (const UnitRow& row : units) {
    emit("| " + size_label(row.size) + " | " + fixed(row.map_us, 1) + " | " +
         fixed(row.unmap_us, 1) + " |");
  }

  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  if (!out_path.empty()) {
    std::ofstream(out_path) << report.str();
  }
  return 0;
}
