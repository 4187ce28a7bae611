// pool_replay: real allocation traces replayed on the MemoryManager over
// HostStorage — the pool's bookkeeping on the work its users run, without a
// GPU (issue 12). bench/gpu/trace_replay.cpp replays the same traces on a
// GPU against cudaMalloc, cudaMallocAsync and PyTorch's allocator.
//
//   pool_replay [--plots DIR] [--repeat N] [--markdown FILE]
//               [--address-space GIB] TRACE...
//
// For each trace (bench/replay/trace.hpp reads it), two configurations of
// the pool, each on a CountingStorage over its own HostStorage:
//   taintpool          the defaults: HostStorage with virtual memory, so the
//                      arena is one reserved range that grows by mapping;
//   taintpool, pages   HostStorage without virtual memory: the arena grows
//                      by pages (the path for storages without it).
// Figures, per configuration:
//   cold ns/op   one replay on a fresh manager (every storage call
//                included), wall time over allocate + free events;
//   warm ns/op   the median of N more replays on the same manager (what is
//                left live at the end of a replay is dropped between them);
//   peak ratio   peak reserved (the storage's live bytes at their highest:
//                pages and mapped chunks) over peak in use (the highest sum
//                of requested bytes the trace ever holds), in the cold
//                replay, then over every replay: a warm replay that maps
//                more than the cold one raises the second figure only;
//   calls        storage calls in the cold replay (allocate, deallocate,
//                reserve, unreserve, map, unmap), then those made after the
//                first step — while replaying the second half of the events
//                (trace.hpp says why), with how many of those came at an
//                event that took the trace's in use above every earlier
//                moment (a new high: the work asks for more than it ever
//                held, which an inference trace of growing requests does,
//                and which no allocator serves without memory held ahead) —
//                then those made by the warm replays.
// With --plots, one SVG per trace: reserved and in use over the cold replay,
// both configurations side by side (bench/replay/plot.hpp).
//
// A frees is a dropped handle; the manager discovers it at its next call, so
// its cost lands on the next allocate — as in a program. Memory is never
// touched (the pool does not touch what it hands out), so RSS stays small
// whatever the trace's footprint. Build Release (cmake --preset release).
//
// --address-space GIB sets MemoryConfig::arena_address_space (default 256
// GiB). For valgrind, which cannot reserve the default's two 256 GiB ranges:
// at 32 the 30 traces place every block as at the default (each peak and
// storage call count equal; bench/RESULTS.md, pool20), so callgrind counts
// the replay the table times.
#include <taintpool/error_graph.hpp>
#include <taintpool/pool/counting_storage.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "replay/plot.hpp"
#include "replay/trace.hpp"

namespace {

using taintpool::Allocation;
using taintpool::CountingStorage;
using taintpool::ErrorGraph;
using taintpool::HostStorage;
using taintpool::HostStorageOptions;
using taintpool::MemoryConfig;
using taintpool::MemoryManager;
using taintpool::StorageCounts;
using taintpool::replay::Timeline;
using taintpool::replay::Trace;
using Clock = std::chrono::steady_clock;

struct Result {
  std::string allocator;
  double cold_ns = 0;
  double warm_ns = 0;
  std::uint64_t peak_reserved = 0;         ///< The storage's, over the cold replay.
  std::uint64_t peak_reserved_all = 0;     ///< The storage's, over every replay.
  std::uint64_t manager_peak_reserved = 0; ///< MemoryStats', over every replay (P2: equal).
  std::uint64_t cold_calls = 0;
  std::uint64_t steady_calls = 0;
  std::uint64_t steady_calls_at_high = 0; ///< Of steady_calls: at a new high of in use.
  std::uint64_t plotted_steady_calls = 0; ///< steady_calls of the untimed replay (equal).
  std::uint64_t warm_calls = 0;
  Timeline timeline;
};

/// The storage calls a replay made from steady_from on, and how many of
/// them came at an event that set a new high of the trace's in use (counted
/// only by the untimed replay that records a timeline).
struct SteadyCalls {
  std::uint64_t all = 0;
  std::uint64_t at_high = 0;
};

/// One replay of the trace into `live`; records reserved bytes per event
/// and storage calls per event when `timeline` is given, and the storage
/// calls made from steady_from on when `steady` is.
double replay_once(const Trace& trace, MemoryManager& memory, std::vector<Allocation>& live,
                   const CountingStorage& counting, SteadyCalls* steady,
                   std::vector<std::uint64_t>* timeline) {
  const std::size_t steady_from = trace.steady_from();
  std::uint64_t calls_at_steady = 0;
  // Calls per event, for the calls at a new high: only in the untimed
  // replay, so the timed cold replay does no more than before.
  std::vector<std::uint64_t> calls_before;
  if (timeline != nullptr) {
    calls_before.resize(trace.events.size() + 1);
  }
  const Clock::time_point start = Clock::now();
  for (std::size_t at = 0; at < trace.events.size(); ++at) {
    const taintpool::replay::Event& event = trace.events[at];
    if (at == steady_from) {
      calls_at_steady = counting.counts().calls();
    }
    if (timeline != nullptr) {
      calls_before[at] = counting.counts().calls();
    }
    if (event.allocate) {
      live[event.slot] = memory.allocate(event.size);
    } else {
      live[event.slot].reset();
    }
    if (timeline != nullptr) {
      timeline->push_back(counting.counts().live_bytes);
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (steady != nullptr) {
    steady->all = counting.counts().calls() - calls_at_steady;
  }
  if (steady != nullptr && timeline != nullptr) {
    calls_before[trace.events.size()] = counting.counts().calls();
    for (std::size_t at = steady_from; at < trace.events.size(); ++at) {
      if (trace.new_high[at]) {
        steady->at_high += calls_before[at + 1] - calls_before[at];
      }
    }
  }
  return seconds * 1e9 / static_cast<double>(trace.events.size());
}

void drop_all(std::vector<Allocation>& live) {
  for (Allocation& allocation : live) {
    allocation.reset();
  }
}

Result run(const Trace& trace, const std::string& allocator, bool virtual_memory, int repeat,
           const MemoryConfig& config) {
  Result result;
  result.allocator = allocator;
  HostStorageOptions options;
  options.virtual_memory = virtual_memory;
  {
    // The plotted replay: untimed, recording the storage's live bytes.
    HostStorage host(options);
    CountingStorage counting(host);
    ErrorGraph graph;
    MemoryManager memory(counting, graph, config);
    std::vector<Allocation> live(trace.slots);
    result.timeline.allocator = allocator;
    result.timeline.in_use = trace.in_use;
    SteadyCalls steady;
    replay_once(trace, memory, live, counting, &steady, &result.timeline.reserved);
    result.steady_calls_at_high = steady.at_high;
    result.plotted_steady_calls = steady.all;
    drop_all(live);
  }
  HostStorage host(options);
  CountingStorage counting(host);
  ErrorGraph graph;
  MemoryManager memory(counting, graph, config);
  std::vector<Allocation> live(trace.slots);
  SteadyCalls steady;
  result.cold_ns = replay_once(trace, memory, live, counting, &steady, nullptr);
  result.steady_calls = steady.all;
  result.cold_calls = counting.counts().calls();
  result.peak_reserved = counting.counts().peak_bytes;
  drop_all(live);
  std::vector<double> warm;
  for (int round = 0; round < repeat; ++round) {
    warm.push_back(replay_once(trace, memory, live, counting, nullptr, nullptr));
    drop_all(live);
  }
  std::sort(warm.begin(), warm.end());
  result.warm_ns = warm.empty() ? 0 : warm[warm.size() / 2];
  result.warm_calls = counting.counts().calls() - result.cold_calls;
  result.peak_reserved_all = counting.counts().peak_bytes;
  result.manager_peak_reserved = memory.stats().peak_reserved;
  return result;
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

} // namespace

int main(int argc, char** argv) {
  std::string plots;
  std::string markdown;
  int repeat = 5;
  MemoryConfig config;
  std::vector<std::string> paths;
  for (int at = 1; at < argc; ++at) {
    const std::string arg = argv[at];
    if (arg == "--plots" && at + 1 < argc) {
      plots = argv[++at];
    } else if (arg == "--markdown" && at + 1 < argc) {
      markdown = argv[++at];
    } else if (arg == "--repeat" && at + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++at]));
    } else if (arg == "--address-space" && at + 1 < argc) {
      config.arena_address_space = std::strtoull(argv[++at], nullptr, 10) << 30;
    } else if (arg == "-h" || arg == "--help") {
      std::cout << "usage: pool_replay [--plots DIR] [--repeat N] [--markdown FILE] "
                   "[--address-space GIB] TRACE...\n";
      return 0;
    } else {
      paths.push_back(arg);
    }
  }
  if (paths.empty()) {
    std::cerr << "pool_replay: no trace given (try --help)\n";
    return 2;
  }
  std::string table =
      "| trace | allocator | cold ns/op | warm ns/op | peak reserved / peak in use (cold; every "
      "replay) | storage calls (cold; after the first step, with those at a new high of in use; "
      "warm) |\n|---|---|---:|---:|---|---|\n";
  std::cout << table << std::flush;
  int status = 0;
  for (const std::string& path : paths) {
    Trace trace;
    try {
      trace = taintpool::replay::load_trace(path);
    } catch (const std::exception& error) {
      std::cerr << "pool_replay: " << error.what() << "\n";
      status = 1;
      continue;
    }
    std::vector<Timeline> timelines;
    for (const bool virtual_memory : {true, false}) {
      const Result result = run(trace, virtual_memory ? "taintpool" : "taintpool, pages",
                                virtual_memory, repeat, config);
      const double ratio =
          static_cast<double>(result.peak_reserved) / static_cast<double>(trace.peak_in_use);
      const double ratio_all =
          static_cast<double>(result.peak_reserved_all) / static_cast<double>(trace.peak_in_use);
      // P2: the manager's own peak, kept over the same replays, is exact.
      if (result.manager_peak_reserved != result.peak_reserved_all) {
        std::cerr << "pool_replay: the manager's peak reserved " << result.manager_peak_reserved
                  << " differs from the storage's " << result.peak_reserved_all << "\n";
        status = 1;
      }
      // The calls at a new high come from the untimed replay: it must have
      // made the same calls as the timed one (the pool is deterministic).
      if (result.plotted_steady_calls != result.steady_calls) {
        std::cerr << "pool_replay: the untimed replay made " << result.plotted_steady_calls
                  << " storage calls after the first step, the timed one " << result.steady_calls
                  << "\n";
        status = 1;
      }
      std::string steady = std::to_string(result.steady_calls);
      if (result.steady_calls != 0) {
        steady += " (" + std::to_string(result.steady_calls_at_high) + " at a new high)";
      }
      const std::string row = "| " + trace.name + " | " + result.allocator + " | " +
                              fixed(result.cold_ns, 0) + " | " + fixed(result.warm_ns, 1) + " | " +
                              fixed(ratio, 4) + "; " + fixed(ratio_all, 4) + " | " +
                              std::to_string(result.cold_calls) + "; " + steady + "; " +
                              std::to_string(result.warm_calls) + " |\n";
      std::cout << row << std::flush;
      table += row;
      Timeline timeline = result.timeline;
      timeline.note = fixed(ratio, 3) + "x peak, " + std::to_string(result.cold_calls) +
                      " storage calls (" + std::to_string(result.steady_calls) +
                      " after the first step)";
      timelines.push_back(std::move(timeline));
    }
    if (!plots.empty()) {
      const std::string file = plots + "/" + trace.name + ".svg";
      taintpool::replay::write_svg(
          file,
          trace.name +
              " on HostStorage: " + fixed(static_cast<double>(trace.peak_in_use) / (1 << 30), 3) +
              " GiB peak in use, " + std::to_string(trace.events.size()) + " events",
          timelines);
    }
  }
  if (!markdown.empty()) {
    std::ofstream out(markdown);
    out << table;
  }
  return status;
}
