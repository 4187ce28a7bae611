// arena_probe: where a trace's late storage calls come from, and what the
// arena held when they came (issue 12). A diagnostic, not a benchmark. The
// pool is deterministic, so it replays one trace twice, cold, on the default
// MemoryManager over a HostStorage wrapped so that every reserve, map and
// page is recorded with the event that caused it: the first replay finds
// the events that call storage, the second prints the arena just before
// each (and before any event named with --at): every live block and free
// run in address order, with its size and the event that allocated it,
// the free bytes, how many runs hold them, and the largest; then the call,
// its request, and whether the request took in use to a new high.
//
//   arena_probe [--from EVENT] [--at EVENT]... [--min BYTES] [--warm N] TRACE
//
// --from   dump at storage calls from this event on (default: the second
//          half, pool_replay's "after the first step"; 0 for all);
// --at     also dump just before this event (repeatable);
// --min    blocks and free runs smaller than this are folded into counts
//          (default 1 MiB).
// --warm   replay the trace N times first on the same manager (all left
//          live dropped after each), then look at the next replay: where a
//          warm replay's storage calls (pool_replay's last column) come from.
// What it costs the pool: nothing. The layout is read through
// MemoryManager::for_each_allocation and the chunks the wrapper saw mapped;
// it never calls stats(), which merges the arena's parked slice and so
// would move where later requests land (a first draft did, and saw 45
// calls where pool_replay sees 44).
#include <taintpool/error_graph.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "replay/probe_storage.hpp"
#include "replay/trace.hpp"

namespace {

using taintpool::Allocation;
using taintpool::ErrorGraph;
using taintpool::HostStorage;
using taintpool::MemoryConfig;
using taintpool::MemoryManager;
using taintpool::replay::ProbeStorage;

double mib(std::uint64_t bytes) {
  return static_cast<double>(bytes) / (1 << 20);
}

struct Block {
  std::uintptr_t address;
  std::uint64_t extent;
  std::uint64_t id;
};

/// The arena as it stands: per reservation, its mapped runs, then its live
/// blocks ("size#eEVENT", the event that allocated it) and free runs ("FREE
/// size @offset") in address order, both in MiB; blocks and free runs below
/// `min` are folded into counts. A parked (recent) slice counts as free: it
/// is, to any request of its size.
void dump(const MemoryManager& memory, const ProbeStorage& probe,
          const std::unordered_map<std::uint64_t, std::size_t>& born, std::uint64_t min) {
  std::vector<Block> blocks;
  std::uint64_t arena_extent = 0;
  std::uint32_t arena = 0;
  memory.for_each_allocation(
      [&](const taintpool::AllocationInfo& info) { arena = std::max(arena, info.pool); });
  memory.for_each_allocation([&](const taintpool::AllocationInfo& info) {
    if (info.pool == arena && arena != 0) {
      blocks.push_back({reinterpret_cast<std::uintptr_t>(info.data), info.extent, info.id.raw()});
      arena_extent += info.extent;
    }
  });
  std::sort(blocks.begin(), blocks.end(),
            [](const Block& a, const Block& b) { return a.address < b.address; });
  bool first = true;
  for (const auto& [origin, length] : probe.reservations) {
    const std::uintptr_t base = origin; // A plain variable: clang 14 captures no bindings.
    const std::uint64_t size = length;
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> runs; // Mapped, merged.
    for (auto it = probe.mapped.lower_bound(base);
         it != probe.mapped.end() && it->first < base + size; ++it) {
      if (!runs.empty() && runs.back().second == it->first) {
        runs.back().second += it->second;
      } else {
        runs.emplace_back(it->first, it->first + it->second);
      }
    }
    const char* name = first ? "first" : "another";
    first = false;
    if (runs.empty()) {
      continue;
    }
    std::printf("  %s reservation, mapped (MiB):", name);
    for (const auto& run : runs) {
      std::printf(" [%.1f, %.1f)", mib(run.first - base), mib(run.second - base));
    }
    std::printf("\n   ");
    std::uint64_t free = 0;
    std::uint64_t largest = 0;
    std::uint64_t free_runs = 0;
    std::uint64_t splinters = 0; // Free bytes in runs below min.
    std::uint64_t small_bytes = 0;
    std::uint64_t small_count = 0;
    auto flush_small = [&]() {
      if (small_count != 0) {
        std::printf(" (%llu small %.2f)", static_cast<unsigned long long>(small_count),
                    mib(small_bytes));
        small_count = 0;
        small_bytes = 0;
      }
    };
    auto show_free = [&](std::uintptr_t from, std::uintptr_t to) {
      if (to <= from) {
        return;
      }
      free += to - from;
      ++free_runs;
      largest = std::max<std::uint64_t>(largest, to - from);
      if (to - from >= min) {
        flush_small();
        std::printf(" FREE %.2f @%.1f;", mib(to - from), mib(from - base));
      } else {
        splinters += to - from;
      }
    };
    for (const auto& run : runs) {
      std::uintptr_t at = run.first;
      for (const Block& block : blocks) {
        if (block.address < run.first || block.address >= run.second) {
          continue;
        }
        show_free(at, block.address);
        if (block.extent >= min) {
          flush_small();
          const auto found = born.find(block.id);
          std::printf(" %.2f#e%zu;", mib(block.extent), found != born.end() ? found->second : 0);
        } else {
          small_bytes += block.extent;
          ++small_count;
        }
        at = block.address + block.extent;
      }
      show_free(at, run.second);
      flush_small();
      std::printf(" |");
    }
    std::printf("\n   free %.2f MiB in %llu runs (%.2f in runs below the fold), largest %.2f MiB\n",
                mib(free), static_cast<unsigned long long>(free_runs), mib(splinters),
                mib(largest));
  }
  std::printf("  arena: live blocks' extent %.2f MiB\n", mib(arena_extent));
}

/// One cold replay of `trace`: dumps the arena just before each event of
/// `dump_at`, and returns the events at or after `from` that made a storage
/// call (printing each call when `print_calls`).
std::set<std::size_t> replay(const taintpool::replay::Trace& trace,
                             const std::set<std::size_t>& dump_at, std::size_t from,
                             bool print_calls, std::uint64_t min, int warm) {
  HostStorage host;
  ProbeStorage probe(host);
  ErrorGraph graph;
  MemoryManager memory(probe, graph, MemoryConfig{});
  std::vector<Allocation> live(trace.slots);
  // --warm: the replays before the one looked at, on the same manager,
  // everything left live dropped between them (pool_replay's warm replays).
  for (int round = 0; round < warm; ++round) {
    for (const taintpool::replay::Event& step : trace.events) {
      if (step.allocate) {
        live[step.slot] = memory.allocate(step.size);
      } else {
        live[step.slot].reset();
      }
    }
    for (Allocation& allocation : live) {
      allocation.reset();
    }
  }
  std::unordered_map<std::uint64_t, std::size_t> born;
  std::set<std::size_t> calling;
  std::uint64_t high = 0;
  std::size_t high_at = 0;
  const std::size_t calls_before = probe.calls.size();
  for (std::size_t event = 0; event < trace.events.size(); ++event) {
    const taintpool::replay::Event& step = trace.events[event];
    probe.event = event;
    const std::size_t before = probe.calls.size();
    if (dump_at.count(event) != 0) {
      // Handles dropped since the last allocate go back to their pools
      // first, as that allocate would do them (the second replay checks
      // that this moved nothing). Not memory.stats(): it merges the
      // arena's parked slice, and so would change where later requests land.
      memory.sweep();
      std::uint64_t reserved = probe.page_bytes;
      for (const auto& [base, size] : probe.mapped) {
        reserved += size;
      }
      std::printf("before event %zu (%s %.2f MiB): in use %.2f, highest before %.2f (event %zu), "
                  "reserved %.2f\n",
                  event, step.allocate ? "allocate" : "free", mib(step.size),
                  mib(event == 0 ? 0 : trace.in_use[event - 1]), mib(high), high_at, mib(reserved));
      dump(memory, probe, born, min);
    }
    if (step.allocate) {
      live[step.slot] = memory.allocate(step.size);
      born[live[step.slot].id().raw()] = event;
    } else {
      live[step.slot].reset();
    }
    for (std::size_t call = before; call < probe.calls.size() && event >= from; ++call) {
      calling.insert(event);
      if (print_calls) {
        std::printf("call at event %zu (%.1f%%): %s %.2f MiB for a request of %.2f MiB; in use "
                    "after %.2f, highest before %.2f (event %zu), %s\n",
                    event,
                    100.0 * static_cast<double>(event) / static_cast<double>(trace.events.size()),
                    probe.calls[call].kind, mib(probe.calls[call].bytes), mib(step.size),
                    mib(trace.in_use[event]), mib(high), high_at,
                    trace.new_high[event] ? "at a new high" : "below an earlier high");
      }
    }
    if (trace.in_use[event] > high) {
      high = trace.in_use[event];
      high_at = event;
    }
  }
  if (print_calls) {
    std::printf("%zu storage calls in all; peak in use %.2f MiB at event %zu of %zu\n",
                probe.calls.size() - calls_before, mib(trace.peak_in_use), high_at,
                trace.events.size());
  }
  return calling;
}

} // namespace

int main(int argc, char** argv) {
  std::string path;
  std::set<std::size_t> at;
  long long from = -1;
  int warm = 0;
  std::uint64_t min = std::uint64_t{1} << 20;
  for (int arg = 1; arg < argc; ++arg) {
    const std::string word = argv[arg];
    if (word == "--at" && arg + 1 < argc) {
      at.insert(std::strtoull(argv[++arg], nullptr, 10));
    } else if (word == "--from" && arg + 1 < argc) {
      from = std::strtoll(argv[++arg], nullptr, 10);
    } else if (word == "--warm" && arg + 1 < argc) {
      warm = std::atoi(argv[++arg]);
    } else if (word == "--min" && arg + 1 < argc) {
      min = std::strtoull(argv[++arg], nullptr, 10);
    } else {
      path = word;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: arena_probe [--from EVENT] [--at EVENT]... [--min BYTES] "
                         "[--warm N] TRACE\n");
    return 2;
  }
  taintpool::replay::Trace trace;
  try {
    trace = taintpool::replay::load_trace(path);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "arena_probe: %s: %s\n", path.c_str(), error.what());
    return 1;
  }
  const std::size_t steady = from < 0 ? trace.steady_from() : static_cast<std::size_t>(from);
  // The pool is deterministic: a first replay finds the events that call
  // storage, a second dumps the arena just before each (and at --at).
  const std::set<std::size_t> calling = replay(trace, {}, steady, false, min, warm);
  at.insert(calling.begin(), calling.end());
  if (replay(trace, at, steady, true, min, warm) != calling) {
    std::printf("the dumps moved the layout: the calls above are not the plain replay's\n");
    return 1;
  }
  return 0;
}
