// taintpool_stream_bench — what streams and threads cost on a real GPU
// (issue 11, items 5, 7 and 9). One binary, one run, tables at the end.
//
// 1. The launch scope (item 7). Batches of 256 launches of an empty kernel,
//    host enqueue time per launch (each batch then synchronised, untimed),
//    variants interleaved round by round so clock drift hits them alike,
//    medians over rounds:
//      bare <<<>>> / bare cudaLaunchKernelExC — the launch alone;
//      scoped, one stream — Device::launch (2 reads, 1 write) whose body
//        launches the same kernel through cuda::launch (the backend learns
//        its status: no cudaGetLastError);
//      scoped, 3 streams, nothing crosses — the same on a Device with three
//        streams, buffers homed on the launch's stream (ordering on, plain);
//      the scope alone — the body reports a launch to the backend
//        (CudaBackend::launched) without making one: the whole scope but
//        the launch, on one stream and on three; and the same through
//        Device::submit(), whose answer is a one-pointer LaunchVerdict
//        instead of a LaunchResult (the new path's headline); and the
//        same through a LaunchPlan made once (device/launch_plan.hpp: no
//        binding resolved per launch), with and without the launch;
//      a crossing binding — launches alternate between two streams, each
//        reading what the other wrote last: bare is cudaEventRecord +
//        cudaStreamWaitEvent + the launch; scoped is Device::launch, which
//        queues exactly that event and wait itself (O1, O2);
//      breakdown — the same scope on HostBackend (the Device's bookkeeping
//        alone, on this host's CPU), an uncontended lock/unlock of the
//        Device's lock by its owner (detail::BiasedMutex) and of the
//        FastMutex it falls back to once a second thread calls,
//        and the two cudaGetLastError calls a <<<>>> body costs.
//    The headline is (scoped - bare) / bare, with bare the same launch call.
// 2. Thread scaling (item 5): 1, 2, 4, 8 host threads, each launching the
//    empty kernel on its own stream: raw cudaLaunchKernelExC (no Device),
//    through one shared Device on a CudaBackend, and through one shared
//    Device on HostBackend (empty bodies: the CPU side alone). Launches per
//    second (all threads) and ns per launch per thread (threads x wall /
//    launches).
// 3. The two-stream pipeline (item 9): a compute stream makes an
//    activation (allocate, compute kernel), a copy stream copies it into a
//    ring of two outputs, and the activation is dropped right after it is
//    handed across. taintpool: Device::create_buffer on the compute stream,
//    two Device::launch — the Device orders the copy after the compute and
//    holds the activation for the copy stream by itself. cudaMallocAsync:
//    cudaMallocAsync on compute, an event and a wait, cudaFreeAsync on the
//    copy stream. c10 (where built with torch): the caching allocator, an
//    event and a wait, record_stream. At most 16 steps run ahead of the GPU
//    (an event per step, the same in every variant). Enqueue and wall time
//    per step; every variant's last output is checked.
//
// Nothing is asserted beyond the outputs' bytes and the event count; the
// figures go to bench/RESULTS.md. Exit 77 without a GPU (ctest: skipped).
#include <taintpool/cuda/cuda_backend.hpp>
#include <taintpool/cuda/kernel_launch.hpp>
#include <taintpool/detail/biased_mutex.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/host/host_backend.hpp>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cuda_runtime.h>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "stream_bench_kernels.hpp"
#ifdef TAINTPOOL_WITH_C10
#include "c10_pipeline.hpp"
#endif

namespace {

using namespace taintpool;
using namespace taintpool::cuda;
using Clock = std::chrono::steady_clock;

bool quick = false;
bool scope_only = false; ///< --scope-only: the launch scope alone, for before/after pairs.
std::ostringstream report;

void emit(const std::string& line) {
  std::cout << line << "\n" << std::flush;
  report << line << "\n";
}

void check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s (%s)\n", what, cudaGetErrorName(error),
                 cudaGetErrorString(error));
    std::exit(1);
  }
}

double ns_since(Clock::time_point start) {
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  if (values.empty()) {
    return 0;
  }
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 != 0 ? values[middle] : (values[middle - 1] + values[middle]) / 2.0;
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string percent(double part, double whole) {
  return fixed(part / whole * 100.0, 2) + "%";
}

LaunchShape one_thread() {
  return LaunchShape{dim3(1), dim3(1), 0};
}

cudaError_t launch_bare(cudaStream_t stream) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1);
  config.blockDim = dim3(1);
  config.stream = stream;
  return cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(bench::empty_kernel()),
                             nullptr);
}

/// A body that launches the empty kernel through the backend.
LaunchOutcome launch_empty_body(const KernelContext& context) {
  static_cast<void>(launch(context, bench::empty_kernel(), one_thread()));
  return LaunchOutcome::success();
}

/// A body that tells the backend it launched, without launching: the scope
/// but the launch.
LaunchOutcome report_only_body(const KernelContext& context) {
  backend_of(context).launched(0);
  return LaunchOutcome::success();
}

LaunchOutcome empty_host_body(const KernelContext&) {
  return LaunchOutcome::success();
}

// ------------------------------------------------------------ 1. scope

struct ScopeFigures {
  double bare_chevrons = 0;
  double bare_ex = 0;
  double scoped_one = 0;
  double scoped_three = 0;
  double alone_one = 0;
  double alone_three = 0;
  double submit_alone_one = 0;
  double submit_alone_three = 0;
  double submit_one = 0;
  double bare_cross = 0;
  double scoped_cross = 0;
  double alone_cross = 0;
  double host_scope = 0;
  double lock = 0;
  double biased_lock = 0;
  double last_errors = 0;
  double plan_submit_alone_one = 0;
  double plan_submit_one = 0;
  std::uint64_t waits_per_cross = 0; ///< Waits the Device queued per crossing launch (x1000).
  std::size_t events_grown = 0;      ///< Events created after warm-up (must be 0).
};

ScopeFigures scope_cost() {
  constexpr int kBatch = 256;
  const int rounds = quick ? 5 : 300;
  constexpr std::uint64_t kBytes = 4096;
  ScopeFigures figures;

  CudaBackend one_backend;
  Device one(one_backend);
  const cudaStream_t one_stream = one_backend.stream();
  const Allocation a1 = one.create_buffer(kBytes);
  const Allocation b1 = one.create_buffer(kBytes);
  const Allocation c1 = one.create_buffer(kBytes);
  const Binding reads1[] = {a1.whole(), b1.whole()};
  const Binding writes1[] = {c1.whole()};
  const LaunchPlan plan1 = one.plan(reads1, writes1);

  CudaBackend three_backend;
  Device three(three_backend);
  const StreamId s1 = three.create_stream();
  static_cast<void>(three.create_stream()); // Three streams: the default, s1 and this one.
  const Allocation a3 = three.create_buffer(kBytes, s1);
  const Allocation b3 = three.create_buffer(kBytes, s1);
  const Allocation c3 = three.create_buffer(kBytes, s1);
  const Binding reads3[] = {a3.whole(), b3.whole()};
  const Binding writes3[] = {c3.whole()};
  // The crossing pair, on a Device of its own (its cross-stream records
  // would take `three` off the plain path): p1 writes x (reading y), p2
  // reads x and writes y.
  CudaBackend cross_backend;
  Device cross(cross_backend);
  const StreamId p1 = cross.create_stream();
  const StreamId p2 = cross.create_stream();
  const Allocation x = cross.create_buffer(kBytes, p1);
  const Allocation y = cross.create_buffer(kBytes, p2);
  const Binding cross_reads1[] = {y.whole()};
  const Binding cross_writes1[] = {x.whole()};
  const Binding cross_reads2[] = {x.whole()};
  const Binding cross_writes2[] = {y.whole()};
  cudaStream_t raw1 = nullptr;
  cudaStream_t raw2 = nullptr;
  check(cudaStreamCreateWithFlags(&raw1, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaStreamCreateWithFlags(&raw2, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaEvent_t raw_events[32];
  for (cudaEvent_t& event : raw_events) {
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
  }

  HostBackend host_backend;
  Device host(host_backend);
  const Allocation ah = host.create_buffer(kBytes);
  const Allocation bh = host.create_buffer(kBytes);
  const Allocation ch = host.create_buffer(kBytes);
  const Binding reads_h[] = {ah.whole(), bh.whole()};
  const Binding writes_h[] = {ch.whole()};
  // The Device's lock (O5) twice: one whose owner is this thread, and one
  // whose bias another thread revoked (each call then loads the revoked
  // mark, then takes the FastMutex: what every thread of a process with
  // several calling threads pays).
  taintpool::detail::BiasedMutex biased;
  taintpool::detail::BiasedMutex revoked;
  std::thread([&revoked] {
    revoked.lock();
    revoked.unlock();
  }).join();
  revoked.lock(); // This thread is not the owner: revokes for good.
  revoked.unlock();
  if (revoked.biased()) {
    std::cerr << "stream_bench: the revoked lock still has an owner\n";
    std::exit(1);
  }

  const auto sync_all = [&] { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); };
  std::vector<std::function<void()>> variants = {
      [&] {
        for (int at = 0; at < kBatch; ++at) {
          bench::launch_empty_chevrons(one_stream);
        }
      },
      [&] {
        for (int at = 0; at < kBatch; ++at) {
          check(launch_bare(one_stream), "cudaLaunchKernelExC");
        }
      },
      [&] {
        for (int at = 0; at < kBatch; ++at) {
          static_cast<void>(one.launch("empty", reads1, writes1, launch_empty_body));
        }
      },
      [&] {
        for (int at = 0; at < kBatch; ++at) {
          static_cast<void>(three.launch(s1, "empty", reads3, writes3, launch_empty_body));
        }
      },
      [&] {
        for (int at = 0; at < kBatch; ++at) {
          static_cast<void>(one.launch("nothing", reads1, writes1, report_only_body));
        }
      },
      [&] {
        for (int at = 0; at < kBatch; ++at) {
          static_cast<void>(three.launch(s1, "nothing", reads3, writes3, report_only_body));
        }
      },
      [&] {
        for (int at = 0; at < kBatch; ++at) {
          static_cast<void>(one.submit("nothing", reads1, writes1, report_only_body));
        }
      },
      [&] {
        for (int at = 0; at < kBatch; ++at) {
          static_cast<void>(three.submit(s1, "nothing", reads3, writes3, report_only_body));
        }
      },
      [&] {
        for (int at = 0; at < kBatch; ++at) {
          static_cast<void>(one.submit("empty", reads1, writes1, launch_empty_body));
        }
      },
      [&] {
        for (int at = 0; at < kBatch; ++at) {
          const bool first = at % 2 == 0;
          cudaEvent_t event = raw_events[at % 32];
          check(cudaEventRecord(event, first ? raw2 : raw1), "cudaEventRecord");
          check(cudaStreamWaitEvent(first ? raw1 : raw2, event, 0), "cudaStreamWaitEvent");
          check(launch_bare(first ? raw1 : raw2), "cudaLaunchKernelExC");
        }
      },
      [&] {
        for (int at = 0; at < kBatch; at += 2) {
          static_cast<void>(
              cross.launch(p1, "produce", cross_reads1, cross_writes1, launch_empty_body));
          static_cast<void>(
              cross.launch(p2, "consume", cross_reads2, cross_writes2, launch_empty_body));
        }
      },
      [&] {
        for (int at = 0; at < kBatch; at += 2) {
          static_cast<void>(
              cross.launch(p1, "produce", cross_reads1, cross_writes1, report_only_body));
          static_cast<void>(
              cross.launch(p2, "consume", cross_reads2, cross_writes2, report_only_body));
        }
      },
      [&] {
        for (int at = 0; at < kBatch; ++at) {
          static_cast<void>(host.launch("nothing", reads_h, writes_h, empty_host_body));
        }
      },
      [&] {
        for (int at = 0; at < kBatch; ++at) {
          revoked.lock();
          revoked.unlock();
        }
      },
      [&] {
        for (int at = 0; at < kBatch; ++at) {
          biased.lock();
          biased.unlock();
        }
      },
      [&] {
        int sink = 0;
        for (int at = 0; at < kBatch; ++at) {
          sink += static_cast<int>(cudaGetLastError());
          sink += static_cast<int>(cudaGetLastError());
        }
        if (sink != 0) {
          std::fprintf(stderr, "a runtime error was pending\n");
        }
      },
      [&] {
        for (int at = 0; at < kBatch; ++at) {
          static_cast<void>(one.submit(plan1, "nothing", report_only_body));
        }
      },
      [&] {
        for (int at = 0; at < kBatch; ++at) {
          static_cast<void>(one.submit(plan1, "empty", launch_empty_body));
        }
      },
  };
  std::vector<std::vector<double>> samples(variants.size());
  std::size_t events_after_warmup = 0;
  std::uint64_t waits_before = 0;
  for (int round = -5; round < rounds; ++round) {
    if (round == 0) {
      events_after_warmup = cross_backend.events_created();
      waits_before = cross.stream_stats().waits_inserted;
    }
    for (std::size_t variant = 0; variant < variants.size(); ++variant) {
      const Clock::time_point start = Clock::now();
      variants[variant]();
      const double ns = ns_since(start) / kBatch;
      sync_all();
      if (round >= 0) {
        samples[variant].push_back(ns);
      }
    }
  }
  double* fields[] = {&figures.bare_chevrons,
                      &figures.bare_ex,
                      &figures.scoped_one,
                      &figures.scoped_three,
                      &figures.alone_one,
                      &figures.alone_three,
                      &figures.submit_alone_one,
                      &figures.submit_alone_three,
                      &figures.submit_one,
                      &figures.bare_cross,
                      &figures.scoped_cross,
                      &figures.alone_cross,
                      &figures.host_scope,
                      &figures.lock,
                      &figures.biased_lock,
                      &figures.last_errors,
                      &figures.plan_submit_alone_one,
                      &figures.plan_submit_one};
  for (std::size_t variant = 0; variant < variants.size(); ++variant) {
    *fields[variant] = median(samples[variant]);
  }
  figures.events_grown = cross_backend.events_created() - events_after_warmup;
  const std::uint64_t crossing_launches = static_cast<std::uint64_t>(rounds) * kBatch * 2;
  figures.waits_per_cross =
      (cross.stream_stats().waits_inserted - waits_before) * 1000 / crossing_launches;
  for (cudaEvent_t event : raw_events) {
    static_cast<void>(cudaEventDestroy(event));
  }
  static_cast<void>(cudaStreamDestroy(raw1));
  static_cast<void>(cudaStreamDestroy(raw2));
  if (!one.graph().empty() || !three.graph().empty() || !cross.graph().empty()) {
    std::fprintf(stderr, "the scope benchmark left failures behind\n");
    std::exit(1);
  }
  return figures;
}

// ------------------------------------------------------------ 2. threads

struct ThreadRow {
  int threads = 0;
  double raw_per_second = 0;
  double raw_ns = 0;
  double device_per_second = 0;
  double device_ns = 0;
  double host_per_second = 0;
  double host_ns = 0;
};

/// Runs `work(thread)` on `threads` threads released together; returns the
/// wall nanoseconds from the release to the last one's end.
double run_threads(int threads, const std::function<void(int)>& work) {
  std::barrier start(threads + 1);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      static_cast<void>(cudaSetDevice(0));
      start.arrive_and_wait();
      work(t);
    });
  }
  start.arrive_and_wait();
  const Clock::time_point begin = Clock::now();
  for (std::thread& thread : pool) {
    thread.join();
  }
  return ns_since(begin);
}

std::vector<ThreadRow> thread_scaling() {
  constexpr int kBatch = 256;
  const int batches = quick ? 2 : 40;
  const int repeats = quick ? 1 : 5;
  std::vector<ThreadRow> rows;
  for (const int threads : {1, 2, 4, 8}) {
    ThreadRow row;
    row.threads = threads;
    const double launches = static_cast<double>(threads) * batches * kBatch;
    std::vector<double> raw_ns;
    std::vector<double> device_ns;
    std::vector<double> host_ns;
    for (int repeat = 0; repeat < repeats; ++repeat) {
      { // Raw launches, one stream per thread.
        std::vector<cudaStream_t> streams(static_cast<std::size_t>(threads));
        for (cudaStream_t& stream : streams) {
          check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
        }
        raw_ns.push_back(run_threads(threads, [&](int t) {
          const cudaStream_t stream = streams[static_cast<std::size_t>(t)];
          for (int batch = 0; batch < batches; ++batch) {
            for (int at = 0; at < kBatch; ++at) {
              static_cast<void>(launch_bare(stream));
            }
            static_cast<void>(cudaStreamSynchronize(stream));
          }
        }));
        for (cudaStream_t stream : streams) {
          check(cudaStreamDestroy(stream), "cudaStreamDestroy");
        }
      }
      { // One Device on a CudaBackend; each thread its own stream and buffers.
        CudaBackend backend;
        Device device(backend);
        device_ns.push_back(run_threads(threads, [&](int) {
          const StreamId mine = device.create_stream();
          const Allocation a = device.create_buffer(4096, mine);
          const Allocation b = device.create_buffer(4096, mine);
          const Allocation c = device.create_buffer(4096, mine);
          const Binding reads[] = {a.whole(), b.whole()};
          const Binding writes[] = {c.whole()};
          cudaStream_t handle = nullptr;
          static_cast<void>(device.launch(mine, "find", {}, {}, [&](const KernelContext& context) {
            handle = stream_of(context);
            return LaunchOutcome::success();
          }));
          for (int batch = 0; batch < batches; ++batch) {
            for (int at = 0; at < kBatch; ++at) {
              static_cast<void>(device.launch(mine, "empty", reads, writes, launch_empty_body));
            }
            static_cast<void>(cudaStreamSynchronize(handle));
          }
        }));
      }
      { // One Device on HostBackend: the CPU side alone.
        HostBackend backend;
        Device device(backend);
        host_ns.push_back(run_threads(threads, [&](int) {
          const StreamId mine = device.create_stream();
          const Allocation a = device.create_buffer(4096, mine);
          const Allocation b = device.create_buffer(4096, mine);
          const Allocation c = device.create_buffer(4096, mine);
          const Binding reads[] = {a.whole(), b.whole()};
          const Binding writes[] = {c.whole()};
          for (int batch = 0; batch < batches * 4; ++batch) {
            for (int at = 0; at < kBatch; ++at) {
              static_cast<void>(device.launch(mine, "nothing", reads, writes, empty_host_body));
            }
          }
        }));
      }
    }
    const double raw = median(raw_ns);
    const double device = median(device_ns);
    const double host = median(host_ns);
    row.raw_per_second = launches / raw * 1e9;
    row.raw_ns = raw * threads / launches;
    row.device_per_second = launches / device * 1e9;
    row.device_ns = device * threads / launches;
    row.host_per_second = 4 * launches / host * 1e9;
    row.host_ns = host * threads / (4 * launches);
    rows.push_back(row);
    std::cerr << "threads " << threads << ": device " << fixed(row.device_ns, 1) << " ns\n";
  }
  return rows;
}

// ------------------------------------------------------------ 3. pipeline

struct PipelineRow {
  std::uint64_t bytes = 0;
  double enqueue[3] = {}; ///< ns per step: taintpool, cudaMallocAsync, c10.
  double wall[3] = {};
  bool ran[3] = {};
  bool right[3] = {};
  std::string note;
};

/// At most kInFlight steps queued ahead of the GPU, as a training loop's
/// periodic synchronisation would keep them (and every variant alike):
/// without it the host runs ~1000 steps ahead and the 64 MiB case measures
/// a pool growing to tens of GiB, not a pipeline. Each step records an event
/// on the copy stream; step i waits for step i - kInFlight's.
class Throttle {
 public:
  static constexpr std::uint32_t kInFlight = 16;
  Throttle() {
    for (cudaEvent_t& event : events_) {
      check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
    }
  }
  ~Throttle() {
    for (cudaEvent_t event : events_) {
      static_cast<void>(cudaEventDestroy(event));
    }
  }
  Throttle(const Throttle&) = delete;
  Throttle& operator=(const Throttle&) = delete;
  void wait() {
    if (marked_ >= kInFlight) {
      check(cudaEventSynchronize(events_[marked_ % kInFlight]), "cudaEventSynchronize");
    }
  }
  void mark(cudaStream_t copy) {
    check(cudaEventRecord(events_[marked_ % kInFlight], copy), "cudaEventRecord");
    ++marked_;
  }

 private:
  cudaEvent_t events_[kInFlight] = {};
  std::uint64_t marked_ = 0;
};

float expected_output(std::uint32_t step) {
  return 1.5f * 2.0f + static_cast<float>(step); // input 1.5, scale 2, + step.
}

bool output_is(const float* device_output, std::uint64_t n, float value) {
  std::vector<float> host(n);
  check(cudaMemcpy(host.data(), device_output, n * sizeof(float), cudaMemcpyDeviceToHost),
        "cudaMemcpy");
  return std::all_of(host.begin(), host.end(), [&](float seen) { return seen == value; });
}

PipelineRow pipeline(std::uint64_t bytes) {
  PipelineRow row;
  row.bytes = bytes;
  const std::uint64_t n = bytes / sizeof(float);
  const std::uint32_t steps = quick ? 50 : 2000;
  const std::uint32_t warm = steps / 10 + 1;
  const int repeats = quick ? 1 : 3;
  const std::uint32_t grid = bench::grid_for(n);
  std::vector<double> enqueue[3];
  std::vector<double> wall[3];
  for (int repeat = 0; repeat < repeats; ++repeat) {
    { // taintpool: the Device orders and holds by itself.
      CudaBackend backend;
      Device device(backend);
      const StreamId compute = device.default_stream();
      const StreamId copy = device.create_stream();
      const std::vector<float> ones(n, 1.5f);
      const Allocation input =
          device.create_buffer(std::as_bytes(std::span<const float>(ones)), compute);
      const Allocation outputs[2] = {device.create_buffer(bytes, copy),
                                     device.create_buffer(bytes, copy)};
      Throttle throttle;
      cudaStream_t copy_handle = nullptr;
      const auto run = [&](std::uint32_t count) {
        for (std::uint32_t step = 0; step < count; ++step) {
          throttle.wait();
          const Allocation activation = device.create_buffer(bytes, compute);
          static_cast<void>(device.launch(compute, "compute", {input.whole()}, {activation.whole()},
                                          [&](const KernelContext& context) {
                                            static_cast<void>(launch(
                                                context, bench::scale_kernel(),
                                                LaunchShape{dim3(grid), dim3(256), 0},
                                                context.read_as<float>(0).data(),
                                                context.write_as<float>(0).data(), n, 2.0f, step));
                                            return LaunchOutcome::success();
                                          }));
          static_cast<void>(device.launch(
              copy, "copy", {activation.whole()}, {outputs[step % 2].whole()},
              [&](const KernelContext& context) {
                copy_handle = stream_of(context);
                static_cast<void>(
                    launch(context, bench::copy_kernel(), LaunchShape{dim3(grid), dim3(256), 0},
                           context.read_as<float>(0).data(), context.write_as<float>(0).data(), n));
                return LaunchOutcome::success();
              }));
          throttle.mark(copy_handle);
        } // The activation is dropped here, still in use on the copy stream.
      };
      run(warm);
      device.synchronize();
      const Clock::time_point start = Clock::now();
      run(steps);
      enqueue[0].push_back(ns_since(start) / steps);
      device.synchronize();
      wall[0].push_back(ns_since(start) / steps);
      const std::vector<std::byte> last = device.read_bytes(outputs[(steps - 1) % 2].whole());
      std::vector<float> values(n);
      std::memcpy(values.data(), last.data(), last.size());
      row.ran[0] = true;
      row.right[0] = std::all_of(values.begin(), values.end(),
                                 [&](float v) { return v == expected_output(steps - 1); });
    }
    cudaStream_t compute = nullptr;
    cudaStream_t copy = nullptr;
    check(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking), "cudaStreamCreate");
    float* input = nullptr;
    float* outputs[2] = {};
    check(cudaMalloc(&input, bytes), "cudaMalloc");
    check(cudaMalloc(&outputs[0], bytes), "cudaMalloc");
    check(cudaMalloc(&outputs[1], bytes), "cudaMalloc");
    {
      const std::vector<float> ones(n, 1.5f);
      check(cudaMemcpy(input, ones.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    }
    { // cudaMallocAsync: allocate on compute, free on the copy stream after its read.
      cudaMemPool_t pool = nullptr;
      check(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
      std::uint64_t keep = ~std::uint64_t{0};
      check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
            "release threshold");
      cudaEvent_t ready[8];
      for (cudaEvent_t& event : ready) {
        check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
      }
      Throttle throttle;
      const auto run = [&](std::uint32_t count) {
        for (std::uint32_t step = 0; step < count; ++step) {
          throttle.wait();
          float* activation = nullptr;
          check(cudaMallocAsync(reinterpret_cast<void**>(&activation), bytes, compute),
                "cudaMallocAsync");
          bench::launch_scale(compute, input, activation, n, 2.0f, step);
          cudaEvent_t event = ready[step % 8];
          check(cudaEventRecord(event, compute), "cudaEventRecord");
          check(cudaStreamWaitEvent(copy, event, 0), "cudaStreamWaitEvent");
          bench::launch_copy(copy, activation, outputs[step % 2], n);
          check(cudaFreeAsync(activation, copy), "cudaFreeAsync");
          throttle.mark(copy);
        }
      };
      run(warm);
      check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      const Clock::time_point start = Clock::now();
      run(steps);
      enqueue[1].push_back(ns_since(start) / steps);
      check(cudaStreamSynchronize(copy), "cudaStreamSynchronize");
      check(cudaStreamSynchronize(compute), "cudaStreamSynchronize");
      wall[1].push_back(ns_since(start) / steps);
      row.ran[1] = true;
      row.right[1] = output_is(outputs[(steps - 1) % 2], n, expected_output(steps - 1));
      for (cudaEvent_t event : ready) {
        static_cast<void>(cudaEventDestroy(event));
      }
      std::uint64_t zero = 0;
      check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &zero),
            "release threshold");
      check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
    }
#ifdef TAINTPOOL_WITH_C10
    { // c10's caching allocator with record_stream.
      const bench::c10_baseline::PipelineTimes times =
          bench::c10_baseline::run_pipeline(compute, copy, input, outputs, bytes, steps);
      if (times.ok != 0) {
        enqueue[2].push_back(times.enqueue_ns_per_step);
        wall[2].push_back(times.wall_ns_per_step);
        row.ran[2] = true;
        row.right[2] = output_is(outputs[(steps - 1) % 2], n, expected_output(steps - 1));
      } else {
        row.note = std::string("c10: ") + times.why;
      }
    }
#else
    row.note = "c10: not built (no torch found at configure time; TAINTPOOL_TORCH)";
#endif
    check(cudaFree(input), "cudaFree");
    check(cudaFree(outputs[0]), "cudaFree");
    check(cudaFree(outputs[1]), "cudaFree");
    check(cudaStreamDestroy(compute), "cudaStreamDestroy");
    check(cudaStreamDestroy(copy), "cudaStreamDestroy");
  }
  for (int variant = 0; variant < 3; ++variant) {
    row.enqueue[variant] = median(enqueue[variant]);
    row.wall[variant] = median(wall[variant]);
  }
  std::cerr << "pipeline " << bytes << " B: taintpool " << fixed(row.enqueue[0], 0)
            << " ns/step enqueue\n";
  return row;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return text;
}

std::string size_label(std::uint64_t bytes) {
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB"
                             : std::to_string(bytes >> 10) + " KiB";
}

} // namespace

int main(int argc, char** argv) {
  std::string out_path;
  for (int at = 1; at < argc; ++at) {
    const std::string argument = argv[at];
    if (argument == "--quick") {
      quick = true;
    } else if (argument == "--scope-only") {
      scope_only = true;
    } else if (argument == "--out" && at + 1 < argc) {
      out_path = argv[++at];
    } else {
      std::cerr << "usage: taintpool_stream_bench [--quick] [--scope-only] [--out FILE]\n";
      return 2;
    }
  }
  std::string why;
  if (device_count(&why) == 0) {
    std::cout << "no CUDA GPU (" << why << "): skipped\n";
    return 77;
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");

  const ScopeFigures scope = scope_cost();
  const std::vector<ThreadRow> threads = scope_only ? std::vector<ThreadRow>() : thread_scaling();
  std::vector<PipelineRow> pipelines;
  for (const std::uint64_t bytes :
       scope_only ? std::vector<std::uint64_t>()
       : quick    ? std::vector<std::uint64_t>{1u << 20}
                  : std::vector<std::uint64_t>{1u << 20, 16u << 20, 64u << 20}) {
    pipelines.push_back(pipeline(bytes));
  }

  emit("Streams on " + std::string(properties.name) + " (" +
       std::to_string(properties.multiProcessorCount) + " SMs), " +
       std::to_string(std::thread::hardware_concurrency()) + " host threads; " + today() +
       (quick ? " (QUICK RUN: not for the record)" : ""));
  emit("");
  emit("Launch scope (batches of 256 empty-kernel launches; host enqueue ns per launch, "
       "median):");
  emit("");
  emit("| what | ns per launch | vs bare launch |");
  emit("|---|---:|---:|");
  const double bare = scope.bare_ex;
  emit("| bare launch, <<<>>> | " + fixed(scope.bare_chevrons, 1) + " | - |");
  emit("| bare launch, cudaLaunchKernelExC (the reference) | " + fixed(bare, 1) + " | - |");
  emit("| Device::launch (2 reads, 1 write) + cuda::launch, one stream | " +
       fixed(scope.scoped_one, 1) + " | +" + fixed(scope.scoped_one - bare, 1) + " ns (" +
       percent(scope.scoped_one - bare, bare) + ") |");
  emit("| the same, 3 streams, nothing crosses | " + fixed(scope.scoped_three, 1) + " | +" +
       fixed(scope.scoped_three - bare, 1) + " ns (" + percent(scope.scoped_three - bare, bare) +
       ") |");
  emit("| **the scope alone** (body reports a launch, makes none), one stream | " +
       fixed(scope.alone_one, 1) + " | **" + percent(scope.alone_one, bare) + "** |");
  emit("| the scope alone, 3 streams, nothing crosses | " + fixed(scope.alone_three, 1) + " | " +
       percent(scope.alone_three, bare) + " |");
  emit("| Device::submit (2 reads, 1 write) + cuda::launch, one stream | " +
       fixed(scope.submit_one, 1) + " | +" + fixed(scope.submit_one - bare, 1) + " ns (" +
       percent(scope.submit_one - bare, bare) + ") |");
  emit("| **the scope alone through Device::submit**, one stream | " +
       fixed(scope.submit_alone_one, 1) + " | **" + percent(scope.submit_alone_one, bare) + "** |");
  emit("| the scope alone through Device::submit, 3 streams, nothing crosses | " +
       fixed(scope.submit_alone_three, 1) + " | " + percent(scope.submit_alone_three, bare) + " |");
  emit("| Device::submit through a LaunchPlan + cuda::launch, one stream | " +
       fixed(scope.plan_submit_one, 1) + " | +" + fixed(scope.plan_submit_one - bare, 1) + " ns (" +
       percent(scope.plan_submit_one - bare, bare) + ") |");
  emit("| **the scope alone through a LaunchPlan (submit)**, one stream | " +
       fixed(scope.plan_submit_alone_one, 1) + " | **" +
       percent(scope.plan_submit_alone_one, bare) + "** |");
  emit("| crossing: bare event record + wait + launch, alternating streams | " +
       fixed(scope.bare_cross, 1) + " | - |");
  emit("| crossing: Device::launch (it queues the record and the wait) | " +
       fixed(scope.scoped_cross, 1) + " | +" + fixed(scope.scoped_cross - scope.bare_cross, 1) +
       " ns (" + percent(scope.scoped_cross - scope.bare_cross, scope.bare_cross) +
       " of the bare crossing) |");
  emit("| crossing: the scope alone (record + wait included, no launch) | " +
       fixed(scope.alone_cross, 1) + " | - |");
  emit("| breakdown: the same scope on HostBackend (Device bookkeeping, this CPU) | " +
       fixed(scope.host_scope, 1) + " | " + percent(scope.host_scope, bare) + " |");
  emit("| breakdown: the Device's lock (detail::BiasedMutex) lock + unlock by its owner | " +
       fixed(scope.biased_lock, 1) + " | " + percent(scope.biased_lock, bare) + " |");
  emit("| breakdown: the same lock once its bias is revoked (a load, then detail::FastMutex), "
       "uncontended | " +
       fixed(scope.lock, 1) + " | " + percent(scope.lock, bare) + " |");
  emit("| breakdown: two cudaGetLastError calls (a <<<>>> body's check) | " +
       fixed(scope.last_errors, 1) + " | " + percent(scope.last_errors, bare) + " |");
  emit("");
  emit("Crossing launches: " + fixed(static_cast<double>(scope.waits_per_cross) / 1000.0, 3) +
       " waits queued per launch; events created after warm-up: " +
       std::to_string(scope.events_grown) + " (a warm Device creates none).");
  emit("");
  emit("Thread scaling (each thread its own stream; batches of 256 empty-kernel launches, each "
       "batch synchronised; medians):");
  emit("");
  emit("| threads | raw launches/s | raw ns/launch/thread | Device launches/s | Device "
       "ns/launch/thread | HostBackend Device launches/s | HostBackend ns/launch/thread |");
  emit("|---:|---:|---:|---:|---:|---:|---:|");
  for (const ThreadRow& row : threads) {
    emit("| " + std::to_string(row.threads) + " | " + fixed(row.raw_per_second, 0) + " | " +
         fixed(row.raw_ns, 1) + " | " + fixed(row.device_per_second, 0) + " | " +
         fixed(row.device_ns, 1) + " | " + fixed(row.host_per_second, 0) + " | " +
         fixed(row.host_ns, 1) + " |");
  }
  emit("");
  emit("Two-stream pipeline (compute stream allocates + computes an activation, copy stream "
       "copies it into a ring of 2; the activation dropped once handed across; ns per step of "
       "2 launches, medians):");
  emit("");
  emit("| activation | taintpool enqueue / wall | cudaMallocAsync enqueue / wall | c10 + "
       "record_stream enqueue / wall | outputs right (tp / async / c10) |");
  emit("|---|---:|---:|---:|---|");
  std::string notes;
  for (const PipelineRow& row : pipelines) {
    std::string line = "| " + size_label(row.bytes);
    for (int variant = 0; variant < 3; ++variant) {
      line += row.ran[variant]
                  ? " | " + fixed(row.enqueue[variant], 0) + " / " + fixed(row.wall[variant], 0)
                  : std::string(" | not run");
    }
    line += " | ";
    for (int variant = 0; variant < 3; ++variant) {
      line += std::string(variant == 0 ? "" : " / ") +
              (row.ran[variant] ? (row.right[variant] ? "yes" : "**NO**") : "-");
    }
    emit(line + " |");
    if (!row.note.empty() && notes.find(row.note) == std::string::npos) {
      notes += row.note + "\n";
    }
  }
#ifdef TAINTPOOL_WITH_C10
  emit("");
  emit(std::string("c10: ") + bench::c10_baseline::description());
#endif
  if (!notes.empty()) {
    emit("");
    emit(notes);
  }
  if (!out_path.empty()) {
    std::ofstream(out_path) << report.str();
  }
  bool all_right = scope.events_grown == 0;
  for (const PipelineRow& row : pipelines) {
    for (int variant = 0; variant < 3; ++variant) {
      all_right = all_right && (!row.ran[variant] || row.right[variant]);
    }
  }
  return all_right ? 0 : 1;
}
