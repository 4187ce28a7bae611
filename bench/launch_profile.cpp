// launch_profile — exactly N Device launches of one shape, for instruction
// counts under callgrind (bench/profile_launch.sh) and a quick ns figure
// without Google Benchmark. The CPU side of issue 11's launch budget (item
// 7): what the Device adds to a kernel launch — the lock, the sweep, the
// binding lookups, the read check, the claim and release, and the ordering
// between streams — measured where instructions can be counted exactly.
//
// Shapes (2 reads and 1 write of 4 KiB, as the GPU bench's scope):
//   host     HostBackend, default stream: synchronous, no ordering at all.
//   async    QueueCounter (below), default stream only: an asynchronous
//            backend that reports late failures, as CudaBackend does, so
//            the Device keeps its launch-log checks on the path.
//   streams  QueueCounter with 3 streams; every launch on stream 1 binding
//            buffers made there: ordering is on, nothing crosses.
//   cross    QueueCounter with 3 streams; each iteration is two launches:
//            stream 1 writes A, then stream 2 reads A (and B, made on
//            stream 2) and writes C: every second launch crosses streams
//            and must cost one event record and one wait (O1, O2).
//   host-submit, streams-submit
//            host and streams through Device::submit() (issue 11, item 7):
//            the answer is a one-pointer LaunchVerdict, not a LaunchResult.
//   host-plan, host-plan-submit, async-plan, streams-plan, streams-plan-submit
//            the same launches through a LaunchPlan made once before the
//            loop (device/launch_plan.hpp): no binding resolved per launch.
//   fresh-trusted, fresh-never
//            issue 15's cycle (bench/fresh_bytes_bench.cpp): create a 4 KiB
//            buffer, launch once writing all of it (empty body), drop it;
//            FreshBytes::Trusted vs FreshBytes::NeverWritten, each buffer
//            the only carrier. Counted per cycle, not per launch.
//   manager-trusted, manager-never
//            the same cycle one layer down, as fresh_bytes_bench's
//            FreshBytes_Manager: MemoryManager::allocate of 4 KiB (on
//            HostStorage), written(whole), drop. Counted per cycle.
//
// QueueCounter implements QueueBackend by counting: its events are tokens,
// its waits and finishes do nothing, so what is measured is the Device.
// The run prints CPU ns per launch (thread CPU time, robust on a shared
// machine) and the counters, and exits non-zero if the
// cross shape did not record exactly one event and one wait per crossing
// launch, or any shape left a failure behind.
//
// Usage: launch_profile SHAPE [LAUNCHES]   (default 200000; cycles for fresh-*)
// With LAUNCH_PROFILE_EVICT set in the environment, the launch shapes (host,
// async, streams and their -submit forms) also report the scope's cost when
// every launch finds its cache lines gone (Evictor, below; =data or =code
// empties only that L1).
#include <taintpool/device/device.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <time.h>

namespace {

using namespace taintpool;

/// A HostBackend that behaves, towards the Device, like an asynchronous GPU
/// backend: not synchronous, reports late failures (none ever come), and
/// counts the event records and waits the Device queues.
class QueueCounter final : public HostBackend {
 public:
  [[nodiscard]] bool synchronous() const noexcept override { return false; }
  [[nodiscard]] bool reports_late_failures() const noexcept override { return true; }
  [[nodiscard]] StreamHandle create_stream() override {
    return reinterpret_cast<StreamHandle>(next_stream_++);
  }
  void destroy_stream(StreamHandle) noexcept override {}
  [[nodiscard]] EventHandle record(StreamHandle) override {
    ++records;
    return reinterpret_cast<EventHandle>(records);
  }
  void wait(StreamHandle, EventHandle) override { ++waits; }
  [[nodiscard]] bool done(EventHandle) noexcept override { return true; }
  void release(EventHandle) noexcept override {}
  void finish(StreamHandle) override {}

  std::uint64_t records = 0;
  std::uint64_t waits = 0;

 private:
  std::uintptr_t next_stream_ = 0x1000;
};

LaunchOutcome empty_body(const KernelContext&) {
  return LaunchOutcome::success();
}

/// What a real launch does to the caches between two scopes: the driver's
/// enqueue runs thousands of instructions over its own data, so on the
/// H200 host the same scope that costs 56-87 ns in a tight loop costs
/// 100-115 ns beside real launches (bench/RESULTS.md, run S). With
/// LAUNCH_PROFILE_EVICT set, each launch is followed by a pass over 64 KiB
/// of other data and 48 KiB of straight-line code — more than a core's L1
/// data and instruction caches — so the scope finds its own lines gone, and
/// cachegrind (bench/profile_launch.sh, EVICT=1) counts how many lines of
/// data and code one scope needs: what it pays after every real launch.
/// Only the evicting instantiations of the loops below call it, so the
/// plain timings and instruction counts measure the launch alone.
struct Evictor {
  const char* mode = std::getenv("LAUNCH_PROFILE_EVICT");
  bool on = mode != nullptr;
  /// LAUNCH_PROFILE_EVICT=data or =code evicts only that cache (which of
  /// the two the scope's extra cost beside real launches comes from); any
  /// other value both.
  bool data_too = on && std::strcmp(mode, "code") != 0;
  bool code_too = on && std::strcmp(mode, "data") != 0;
  std::unique_ptr<unsigned char[]> data{new unsigned char[std::size_t{64} << 10]()};

  [[gnu::noinline]] void pass() {
    if (data_too) {
      unsigned sum = 0;
      for (std::size_t at = 0; at < (std::size_t{64} << 10); at += 64) {
        sum += data[at];
        data[at] = static_cast<unsigned char>(sum);
      }
    }
    if (code_too) {
      // 768 jumps, each to the start of the next 64-byte line: 48 KiB of
      // code fetched for 768 instructions.
      asm volatile(".p2align 6\n\t.rept 768\n\tjmp 1f\n\t.p2align 6\n1:\n\t.endr" ::: "memory");
    }
  }
};

Evictor evict;

/// Every measured loop's body: `launches` calls of `launch` (one launch,
/// answering whether it ran), with an Evictor pass after each when Evicting; returns
/// how many ran. Inline by force, the launch too, so that each named loop
/// below is one frame around the Device's calls, as it was when each spelled
/// its loop out (the counts stay comparable with earlier rounds).
template <bool Evicting, class Launch>
[[gnu::always_inline]] inline std::uint64_t count_ran(std::uint64_t launches, Launch launch) {
  std::uint64_t ran = 0;
  for (std::uint64_t at = 0; at < launches; ++at) {
    ran += launch() ? 1u : 0u;
    if constexpr (Evicting) {
      evict.pass();
    }
  }
  return ran;
}

/// The measured loop, kept out of line so callgrind can collect it alone
/// (--toggle-collect=*run_launches*; the evicting instantiation alone:
/// *run_launches<true>*). Evicting: an Evictor pass after each launch.
template <bool Evicting>
[[gnu::noinline]] std::uint64_t run_launches(Device& device, StreamId stream,
                                             const Binding (&reads)[2], const Binding (&writes)[1],
                                             std::uint64_t launches) {
  return count_ran<Evicting>(
      launches, [&]() __attribute__((always_inline)) {
        return device.launch(stream, "k", reads, writes, empty_body).ran();
      });
}

/// run_launches through Device::submit() (the name keeps callgrind's
/// --toggle-collect patterns).
template <bool Evicting>
[[gnu::noinline]] std::uint64_t
run_launches_via_submit(Device& device, StreamId stream, const Binding (&reads)[2],
                        const Binding (&writes)[1], std::uint64_t launches) {
  return count_ran<Evicting>(
      launches, [&]() __attribute__((always_inline)) {
        return device.submit(stream, "k", reads, writes, empty_body).ran();
      });
}

/// The plan the -plan shapes launch through (made once, before the loops).
const LaunchPlan* current_plan = nullptr;

/// run_launches through current_plan: the bindings are the plan's (the
/// arguments only keep one signature for every loop).
template <bool Evicting>
[[gnu::noinline]] std::uint64_t
run_launches_planned(Device& device, StreamId /*stream*/, const Binding (&/*reads*/)[2],
                     const Binding (&/*writes*/)[1], std::uint64_t launches) {
  const LaunchPlan& plan = *current_plan;
  return count_ran<Evicting>(
      launches, [&]() __attribute__((always_inline)) {
        return device.launch(plan, "k", empty_body).ran();
      });
}

/// run_launches_planned through Device::submit().
template <bool Evicting>
[[gnu::noinline]] std::uint64_t
run_launches_planned_via_submit(Device& device, StreamId /*stream*/, const Binding (&/*reads*/)[2],
                                const Binding (&/*writes*/)[1], std::uint64_t launches) {
  const LaunchPlan& plan = *current_plan;
  return count_ran<Evicting>(
      launches, [&]() __attribute__((always_inline)) {
        return device.submit(plan, "k", empty_body).ran();
      });
}

/// The fresh shapes' loop: allocate, first full write, drop (N1).
[[gnu::noinline]] std::uint64_t run_fresh_cycles(Device& device, std::uint64_t cycles) {
  std::uint64_t ran = 0;
  for (std::uint64_t at = 0; at < cycles; ++at) {
    const Allocation buffer = device.create_buffer(4096);
    const Binding writes[] = {buffer.whole()};
    ran += device.launch("fill", std::span<const Binding>(), writes, empty_body).ran() ? 1u : 0u;
  }
  return ran;
}

/// The manager shapes' loop: allocate, written(whole), drop (N1).
[[gnu::noinline]] std::uint64_t run_manager_cycles(MemoryManager& memory, std::uint64_t cycles) {
  std::uint64_t sizes = 0;
  for (std::uint64_t at = 0; at < cycles; ++at) {
    const Allocation buffer = memory.allocate(4096);
    memory.written(buffer.whole());
    sizes += buffer.size();
  }
  return sizes;
}

/// The cross shape's loop: a producer on one stream, a consumer on another.
[[gnu::noinline]] std::uint64_t run_cross_launches(Device& device, StreamId producer,
                                                   StreamId consumer, const Binding& a,
                                                   const Binding& b, const Binding& c,
                                                   std::uint64_t pairs) {
  std::uint64_t ran = 0;
  const Binding produce_reads[] = {b};
  const Binding produce_writes[] = {a};
  const Binding consume_reads[] = {a, b};
  const Binding consume_writes[] = {c};
  for (std::uint64_t at = 0; at < pairs; ++at) {
    ran += device.launch(producer, "produce", produce_reads, produce_writes, empty_body).ran() ? 1u
                                                                                               : 0u;
    ran += device.launch(consumer, "consume", consume_reads, consume_writes, empty_body).ran() ? 1u
                                                                                               : 0u;
  }
  return ran;
}

/// This thread's CPU time in ns: on a shared machine, wall time counts the
/// waits for a core; CPU time does not.
double cpu_ns() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e9 + static_cast<double>(now.tv_nsec);
}

/// A timed region: CPU ns per item (see cpu_ns).
struct Timer {
  double start = cpu_ns();
  [[nodiscard]] double per(std::uint64_t count) const {
    return (cpu_ns() - start) / static_cast<double>(count);
  }
};

using RunLaunches = std::uint64_t (*)(Device&, StreamId, const Binding (&)[2], const Binding (&)[1],
                                      std::uint64_t);

/// With LAUNCH_PROFILE_EVICT: the scope's cost when it finds its cache lines
/// gone (Evictor), through `run`, an evicting loop. The pass alone and
/// launch + pass alternate in 20 rounds of launches / 20 each (the launches
/// profile_launch.sh's EVICT=1 counts); the fastest round of each is kept,
/// since a shared machine only ever adds time.
void report_evicted(RunLaunches run, Device& device, StreamId stream, const Binding (&reads)[2],
                    const Binding (&writes)[1], std::uint64_t launches) {
  if (!evict.on) {
    return;
  }
  const std::uint64_t per_round = launches / 20;
  double best_pass = 1e300;
  double best_both = 1e300;
  for (int round = 0; round < 20; ++round) {
    const Timer alone;
    for (std::uint64_t at = 0; at < per_round; ++at) {
      evict.pass();
    }
    best_pass = std::min(best_pass, alone.per(per_round));
    const Timer both;
    static_cast<void>(run(device, stream, reads, writes, per_round));
    best_both = std::min(best_both, both.per(per_round));
  }
  std::printf("  evicted: the pass alone %.1f, launch + pass %.1f: the scope %.1f CPU ns\n",
              best_pass, best_both, best_both - best_pass);
}

int usage() {
  std::fprintf(
      stderr,
      "usage: launch_profile host|host-submit|async|streams|streams-submit|cross|fresh-trusted|"
      "fresh-never|manager-trusted|manager-never [LAUNCHES]\n"
      "       (host, async and streams also as NAME-plan and NAME-plan-submit)\n");
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    return usage();
  }
  std::string shape = argv[1];
  const std::uint64_t launches = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 200000;
  constexpr std::uint64_t kBytes = 4096;

  const bool via_submit = shape.ends_with("-submit");
  if (via_submit) {
    shape.resize(shape.size() - std::strlen("-submit"));
  }
  const bool planned = shape.ends_with("-plan");
  if (planned) {
    shape.resize(shape.size() - std::strlen("-plan"));
  }
  const RunLaunches run =
      planned ? (via_submit ? run_launches_planned_via_submit<false> : run_launches_planned<false>)
              : (via_submit ? run_launches_via_submit<false> : run_launches<false>);
  const RunLaunches run_evicting =
      planned ? (via_submit ? run_launches_planned_via_submit<true> : run_launches_planned<true>)
              : (via_submit ? run_launches_via_submit<true> : run_launches<true>);
  const char* suffix = planned      ? (via_submit ? "-plan-submit" : "-plan")
                       : via_submit ? "-submit"
                                    : "";
  LaunchPlan plan;
  current_plan = &plan;
  if (shape == "host") {
    HostBackend backend;
    Device device(backend);
    const Allocation a = device.create_buffer(kBytes);
    const Allocation b = device.create_buffer(kBytes);
    const Allocation c = device.create_buffer(kBytes);
    const Binding reads[] = {a.whole(), b.whole()};
    const Binding writes[] = {c.whole()};
    plan = device.plan(reads, writes);
    static_cast<void>(run(device, device.default_stream(), reads, writes, 64));
    const Timer start;
    const std::uint64_t ran = run(device, device.default_stream(), reads, writes, launches);
    std::printf("host%s: %.1f CPU ns per launch (%llu launches)\n", suffix, start.per(launches),
                static_cast<unsigned long long>(ran));
    report_evicted(run_evicting, device, device.default_stream(), reads, writes, launches);
    return ran == launches && device.graph().empty() ? 0 : 1;
  }
  if (shape == "async" || shape == "streams") {
    QueueCounter backend;
    Device device(backend);
    StreamId stream = device.default_stream();
    if (shape == "streams") {
      stream = device.create_stream();
      static_cast<void>(device.create_stream());
    }
    const Allocation a = device.create_buffer(kBytes, stream);
    const Allocation b = device.create_buffer(kBytes, stream);
    const Allocation c = device.create_buffer(kBytes, stream);
    const Binding reads[] = {a.whole(), b.whole()};
    const Binding writes[] = {c.whole()};
    plan = device.plan(stream, reads, writes);
    static_cast<void>(run(device, stream, reads, writes, 64));
    const Timer start;
    const std::uint64_t ran = run(device, stream, reads, writes, launches);
    std::printf("%s%s: %.1f CPU ns per launch (%llu launches, %llu records, %llu waits)\n",
                shape.c_str(), suffix, start.per(launches), static_cast<unsigned long long>(ran),
                static_cast<unsigned long long>(backend.records),
                static_cast<unsigned long long>(backend.waits));
    report_evicted(run_evicting, device, stream, reads, writes, launches);
    return ran == launches && backend.waits == 0 && device.graph().empty() ? 0 : 1;
  }
  if (shape == "fresh-trusted" || shape == "fresh-never") {
    HostBackend backend;
    DeviceOptions options;
    MemoryConfig config;
    config.fresh_bytes = shape == "fresh-never" ? FreshBytes::NeverWritten : FreshBytes::Trusted;
    options.memory = config;
    Device device(backend, options);
    static_cast<void>(run_fresh_cycles(device, 64));
    const Timer start;
    const std::uint64_t ran = run_fresh_cycles(device, launches);
    std::printf("%s: %.1f CPU ns per create + first write + drop (%llu cycles)\n", shape.c_str(),
                start.per(launches), static_cast<unsigned long long>(ran));
    device.sweep();
    return ran == launches && device.graph().empty() ? 0 : 1;
  }
  if (shape == "manager-trusted" || shape == "manager-never") {
    HostStorage storage;
    ErrorGraph graph;
    MemoryConfig config;
    config.fresh_bytes = shape == "manager-never" ? FreshBytes::NeverWritten : FreshBytes::Trusted;
    bool clean = false;
    {
      MemoryManager memory(storage, graph, config);
      static_cast<void>(run_manager_cycles(memory, 64));
      const Timer start;
      const std::uint64_t bytes = run_manager_cycles(memory, launches);
      std::printf("%s: %.1f CPU ns per allocate + written + drop (%llu cycles)\n", shape.c_str(),
                  start.per(launches), static_cast<unsigned long long>(bytes / kBytes));
      memory.sweep();
      clean = bytes == launches * kBytes && graph.empty();
    }
    return clean ? 0 : 1;
  }
  if (shape == "cross") {
    QueueCounter backend;
    Device device(backend);
    const StreamId producer = device.create_stream();
    const StreamId consumer = device.create_stream();
    const Allocation a = device.create_buffer(kBytes, producer);
    const Allocation b = device.create_buffer(kBytes, consumer);
    const Allocation c = device.create_buffer(kBytes, consumer);
    static_cast<void>(
        run_cross_launches(device, producer, consumer, a.whole(), b.whole(), c.whole(), 64));
    const std::uint64_t records = backend.records;
    const std::uint64_t waits = backend.waits;
    const std::uint64_t pairs = launches / 2;
    const Timer start;
    const std::uint64_t ran =
        run_cross_launches(device, producer, consumer, a.whole(), b.whole(), c.whole(), pairs);
    const double ns = start.per(2 * pairs);
    const std::uint64_t new_records = backend.records - records;
    const std::uint64_t new_waits = backend.waits - waits;
    std::printf("cross: %.1f CPU ns per launch (%llu launches; per crossing pair: %.2f records, "
                "%.2f waits)\n",
                ns, static_cast<unsigned long long>(ran),
                static_cast<double>(new_records) / static_cast<double>(pairs),
                static_cast<double>(new_waits) / static_cast<double>(pairs));
    // Each pair: the consumer waits for the producer (read after write),
    // then the producer's next write waits for the consumer's read (write
    // after read): one record and one wait per launch, none more.
    return ran == 2 * pairs && new_records == 2 * pairs && new_waits == 2 * pairs &&
                   device.graph().empty()
               ? 0
               : 1;
  }
  return usage();
}
