// unit_placement: what an arena built on small units of physical memory would
// hold and how often it would remap them, with a placement of its own
// (issue 12). A simulation, not a benchmark: nothing in core/ runs here but
// the sliced pools.
//
// Why: physical_units (bench/physical_units.cpp) showed that at today's
// placement the units of 2 MiB that live blocks touch peak at 1.001-1.038x
// the peak in use on all 40 traces, so what keeps ten traces above 1.05 is
// the unit of physical memory (a whole growth chunk, freed only whole), not
// the placement. Its online policy (unmap the least recently freed units
// past a budget) reached 1.05 on 36 traces but remapped thousands of units
// in warm replays, because today's placement does not care which free
// address space is backed. Here the arena is designed around the units:
//
//  - Physical memory grows by the growth rule of MemoryConfig (1/64 of what
//    is held, a 16 MiB ramp), is never freed, and comes as units that can
//    each be mapped at any unit of address space. On CUDA a unit is then a
//    cuMemCreate handle of its own: cuMemMap maps a handle only whole (its
//    offset must be 0; bench/gpu/unit_remap.cpp found the driver refusing
//    any other). Held = every unit created; that is the figure compared
//    with the peak in use.
//  - Address space is free (a huge reservation). A request is placed at one
//    end of a free range of address space, chosen by the fewest units it
//    would have to map there, then the best fit (least left over), then the
//    lowest address: a request goes where backed free space already is, so
//    a step that repeats an earlier one maps nothing.
//  - A unit to map takes an idle unit (held, mapped nowhere); else the least
//    recently freed mapped unit that no live block touches is unmapped and
//    taken (a remap: no memory created or freed); only when there is none is
//    a chunk created. So held never passes the peak of touched units by more
//    than a growth step.
//
// Counted per phase (the cold replay's first half, its second half — "after
// the first step", as pool_replay counts — and a warm replay on the same
// state): unit maps, unmaps and units created. On a GPU a map is a cuMemMap
// + cuMemSetAccess of one unit, an unmap a cuMemUnmap (after the stream's
// last use of the unit), a unit created a cuMemCreate; bench/gpu/unit_remap
// times them. Issue 12 wants warm replays at 100 ns per operation and no
// allocation after the first step.
//
// With --offline, one more column: the address space that an offline
// placement of every arena block needs, knowing every lifetime in advance
// (offline_footprint below), plus the sliced pools' peak, over the peak in
// use. That is what a placement learned from an earlier pass over the same
// work could hold with every unit mapped once and no call after.
//
// With --steady, instead: for a trace of several training steps
// (bench/traces/steps8), the period of its requests at the end (a step),
// the step in which today's default pool reaches its peak reserve, and the
// offline placement of the last two steps and of everything before the
// first repeat, each over its own peak in use: whether a placement learned
// from one step could hold the target, and whether the peak comes before
// there is a step to learn from.
//
//   unit_placement [--unit MIB] [--keep F] [--fit cost|best] [--offline] TRACE...
//   unit_placement --steady TRACE...
//
// --unit  the unit in MiB (default 2, CUDA's granularity).
// --keep  create a chunk rather than unmap a free unit while held stays
//         within (1 + F) times the most units ever touched at once
//         (default 0: always unmap first).
// --fit   cost: fewest units to map, then best fit (default); best: best fit
//         alone (today's arena, without its rules), for comparison.
#include <taintpool/error_graph.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <map>
#include <string>
#include <utility>
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
using taintpool::replay::Trace;

/// The default MemoryConfig, which the pool under simulation uses: its
/// alignment, its largest sliced request (larger ones go to the arena) and
/// its arena's growth rule.
const MemoryConfig defaults{};
const std::uint64_t alignment = defaults.alignment;
const std::uint64_t largest_sliced = defaults.sliced.back().max_slice;
constexpr std::uint64_t address_space = std::uint64_t{1} << 46;

std::uint64_t round_up(std::uint64_t size, std::uint64_t unit) noexcept {
  return (size + unit - 1) / unit * unit;
}

struct Options {
  std::uint64_t unit = std::uint64_t{2} << 20;
  double keep = 0.0;
  bool cost_first = true;
  bool offline = false;
  bool steady = false;
};

/// Counts for one phase.
struct Calls {
  std::uint64_t maps = 0;
  std::uint64_t unmaps = 0;
  std::uint64_t creates = 0;
};

/// The arena of the header: free address space, units, chunks.
class UnitArena {
 public:
  explicit UnitArena(const Options& options)
      : options_(options) {
    free_[0] = address_space;
  }

  /// Places `extent` bytes and backs them; returns the address.
  std::uint64_t allocate(std::uint64_t extent, Calls& calls) {
    const std::uint64_t at = place(extent);
    const std::uint64_t first = at / options_.unit;
    const std::uint64_t last = (at + extent - 1) / options_.unit;
    if (units_.size() <= last) {
      units_.resize(last + 1);
    }
    for (std::uint64_t u = first; u <= last; ++u) {
      if (units_[u].live++ == 0) {
        ++touched_;
      }
    }
    peak_touched_ = std::max(peak_touched_, touched_);
    for (std::uint64_t u = first; u <= last; ++u) {
      if (!units_[u].mapped) {
        back(calls);
        units_[u].mapped = true;
        ++calls.maps;
      }
    }
    return at;
  }

  void release(std::uint64_t at, std::uint64_t extent) {
    for (std::uint64_t u = at / options_.unit; u <= (at + extent - 1) / options_.unit; ++u) {
      if (--units_[u].live == 0) {
        --touched_;
        units_[u].freed_at = ++stamp_;
        freed_.emplace_back(u, stamp_);
      }
    }
    // Return the range and merge it with free neighbours.
    auto next = free_.lower_bound(at);
    std::uint64_t begin = at;
    std::uint64_t size = extent;
    if (next != free_.begin()) {
      auto previous = std::prev(next);
      if (previous->first + previous->second == at) {
        begin = previous->first;
        size += previous->second;
        free_.erase(previous);
      }
    }
    if (next != free_.end() && next->first == at + extent) {
      size += next->second;
      free_.erase(next);
    }
    free_[begin] = size;
  }

  [[nodiscard]] std::uint64_t held_bytes() const noexcept { return held_ * options_.unit; }
  [[nodiscard]] std::uint64_t touched_bytes() const noexcept { return touched_ * options_.unit; }

 private:
  struct Unit {
    std::uint32_t live = 0;
    bool mapped = false;
    std::uint64_t freed_at = 0;
  };

  /// Units of [at, at + extent) not mapped now.
  [[nodiscard]] std::uint64_t unmapped_in(std::uint64_t at, std::uint64_t extent) const noexcept {
    std::uint64_t count = 0;
    const std::uint64_t last = (at + extent - 1) / options_.unit;
    for (std::uint64_t u = at / options_.unit; u <= last; ++u) {
      if (u >= units_.size()) {
        return count + (last - u + 1);
      }
      count += units_[u].mapped ? 0u : 1u;
    }
    return count;
  }

  /// Chooses where `extent` goes and takes it out of the free ranges.
  std::uint64_t place(std::uint64_t extent) {
    struct Choice {
      std::uint64_t cost = ~std::uint64_t{0};
      std::uint64_t waste = ~std::uint64_t{0};
      std::uint64_t at = 0;
      std::uint64_t range = 0;
    } best;
    auto consider = [&](std::uint64_t range, std::uint64_t size, std::uint64_t at) {
      const std::uint64_t cost = options_.cost_first ? unmapped_in(at, extent) : 0;
      const std::uint64_t waste = size - extent;
      if (cost < best.cost || (cost == best.cost && waste < best.waste) ||
          (cost == best.cost && waste == best.waste && at < best.at)) {
        best = Choice{cost, waste, at, range};
      }
    };
    for (const auto& [begin, size] : free_) {
      if (size < extent) {
        continue;
      }
      consider(begin, size, begin);
      if (size > extent) {
        consider(begin, size, begin + size - extent);
      }
    }
    const auto range = free_.find(best.range);
    const std::uint64_t begin = range->first;
    const std::uint64_t size = range->second;
    free_.erase(range);
    if (best.at > begin) {
      free_[begin] = best.at - begin;
    }
    if (best.at + extent < begin + size) {
      free_[best.at + extent] = begin + size - (best.at + extent);
    }
    return best.at;
  }

  /// Finds physical memory for one unit about to be mapped.
  void back(Calls& calls) {
    if (idle_ != 0) {
      --idle_;
      return;
    }
    // --keep: a new unit rather than a remap while held stays in budget.
    const bool create_first =
        options_.keep > 0.0 && static_cast<double>(held_ + 1) <=
                                   (1.0 + options_.keep) * static_cast<double>(peak_touched_);
    if (!create_first) {
      while (!freed_.empty()) {
        const auto [u, stamp] = freed_.front();
        freed_.pop_front();
        Unit& unit = units_[u];
        if (unit.live == 0 && unit.mapped && unit.freed_at == stamp) {
          unit.mapped = false;
          ++calls.unmaps;
          return; // Its memory now backs the unit being mapped.
        }
      }
    }
    // Create units by the growth rule (MemoryConfig), one of them used.
    const std::uint64_t held = held_ * options_.unit;
    std::uint64_t step = std::max(held / defaults.arena_growth_divisor, defaults.arena_min_growth);
    step = std::max(step, std::min(held, defaults.arena_ramp_growth));
    const std::uint64_t units =
        std::max<std::uint64_t>(1, round_up(step, options_.unit) / options_.unit);
    held_ += units;
    idle_ += units - 1;
    calls.creates += units;
  }

  Options options_;
  std::map<std::uint64_t, std::uint64_t> free_; ///< Free address space: begin -> size.
  std::vector<Unit> units_;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> freed_; ///< (unit, stamp), oldest first.
  std::uint64_t held_ = 0;                                    ///< Units of physical memory created.
  std::uint64_t idle_ = 0;                                    ///< Of those, mapped nowhere.
  std::uint64_t touched_ = 0;                                 ///< Units some live block overlaps.
  std::uint64_t peak_touched_ = 0;
  std::uint64_t stamp_ = 0;
};

/// The address space an offline placement of every arena block live in
/// events [from, to) needs, knowing each block's lifetime in advance (cut
/// to the window): greedy by size (largest first; each at the smallest gap
/// between the blocks placed so far whose lifetimes overlap its own). A
/// bound on what a placement learned from an earlier pass over the same
/// work could reach with no remap.
std::uint64_t offline_footprint(const Trace& trace, std::size_t from, std::size_t to) {
  struct Life {
    std::uint64_t extent;
    std::size_t begin;
    std::size_t end;
    std::uint64_t at = 0;
  };
  std::vector<Life> lives;
  std::vector<std::size_t> open(trace.slots, ~std::size_t{0});
  for (std::size_t event = 0; event < to; ++event) {
    const taintpool::replay::Event& step = trace.events[event];
    if (step.allocate) {
      const std::uint64_t extent = round_up(step.size == 0 ? 1 : step.size, alignment);
      if (extent > largest_sliced) {
        open[step.slot] = lives.size();
        lives.push_back(Life{extent, std::max(event, from), to});
      }
    } else if (open[step.slot] != ~std::size_t{0}) {
      lives[open[step.slot]].end = event;
      open[step.slot] = ~std::size_t{0};
    }
  }
  // Blocks that ended before the window are no part of it.
  std::erase_if(lives, [&](const Life& life) { return life.end <= from; });
  std::vector<std::size_t> order(lives.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return lives[a].extent > lives[b].extent; });
  std::vector<std::size_t> placed;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> taken; // (at, end) of overlapping ones.
  std::uint64_t footprint = 0;
  for (const std::size_t i : order) {
    Life& life = lives[i];
    taken.clear();
    for (const std::size_t j : placed) {
      if (lives[j].begin < life.end && life.begin < lives[j].end) {
        taken.emplace_back(lives[j].at, lives[j].at + lives[j].extent);
      }
    }
    std::sort(taken.begin(), taken.end());
    std::uint64_t best_at = 0;
    std::uint64_t best_gap = ~std::uint64_t{0};
    std::uint64_t cursor = 0;
    bool found = false;
    for (const auto& [at, end] : taken) {
      if (at > cursor && at - cursor >= life.extent && at - cursor < best_gap) {
        best_gap = at - cursor;
        best_at = cursor;
        found = true;
      }
      cursor = std::max(cursor, end);
    }
    life.at = found ? best_at : cursor;
    footprint = std::max(footprint, life.at + life.extent);
    placed.push_back(i);
  }
  return footprint;
}

/// The period of the trace's requests at its end: the smallest P of at
/// least 100 allocations such that each of the last max(2P, n/3) requests
/// asks the size the request P before asked (frees are not compared: their
/// order varies from step to step, measured on the 8-step traces). The
/// event of every allocation in the period's repeats, a step's first
/// allocation first: empty if there is no period.
struct Period {
  std::size_t allocations = 0;     ///< P.
  std::vector<std::size_t> starts; ///< The event each repeat (step) starts at.
};
Period period_at_end(const Trace& trace) {
  std::vector<std::size_t> at; // The event of each allocation.
  std::vector<std::uint64_t> sizes;
  for (std::size_t event = 0; event < trace.events.size(); ++event) {
    if (trace.events[event].allocate) {
      at.push_back(event);
      sizes.push_back(trace.events[event].size);
    }
  }
  const std::size_t n = sizes.size();
  for (std::size_t period = 100; period * 3 <= n; ++period) {
    std::size_t run = 0;
    for (std::size_t i = n; i-- > period && sizes[i] == sizes[i - period];) {
      ++run;
    }
    if (run >= 2 * period && run * 3 >= n) {
      Period found{period, {}};
      // Whole repeats, counted back from the end.
      for (std::size_t first = n % period; first + period <= n; first += period) {
        if (first + run + period >= n) {
          found.starts.push_back(at[first]);
        }
      }
      return found;
    }
  }
  return {};
}

/// --steady: where today's pool reaches its peak reserve, and what an
/// offline placement of the last two periods (steps) would hold.
void steady_state(const Trace& trace) {
  const Period period = period_at_end(trace);
  if (period.starts.size() < 3) {
    std::printf("| %s | no period | | | | | |\n", trace.name.c_str());
    return;
  }
  // Steps before the repeats count as one: the first, which builds the
  // optimizer's state.
  const auto step_of = [&](std::size_t event) {
    std::size_t step = 1;
    for (const std::size_t begin : period.starts) {
      step += event >= begin ? 1 : 0;
    }
    return step;
  };
  HostStorage host;
  ProbeStorage probe(host);
  ErrorGraph graph;
  MemoryManager memory(probe, graph, MemoryConfig{});
  std::vector<Allocation> live(trace.slots);
  std::uint64_t today_peak = 0;
  std::size_t today_peak_at = 0;
  const std::size_t window = period.starts[period.starts.size() - 2];
  std::uint64_t window_pages = 0;
  std::uint64_t window_in_use = 0;
  const std::size_t first_repeat = period.starts.front();
  std::uint64_t first_pages = 0;
  std::uint64_t first_in_use = 0;
  for (std::size_t event = 0; event < trace.events.size(); ++event) {
    const taintpool::replay::Event& step = trace.events[event];
    if (step.allocate) {
      live[step.slot] = memory.allocate(step.size);
    } else {
      live[step.slot].reset();
    }
    const std::uint64_t reserved = probe.page_bytes + probe.mapped_bytes();
    if (reserved > today_peak) {
      today_peak = reserved;
      today_peak_at = event;
    }
    if (event < first_repeat) {
      first_pages = std::max(first_pages, probe.page_bytes);
      first_in_use = std::max(first_in_use, trace.in_use[event]);
    }
    if (event >= window) {
      window_pages = std::max(window_pages, probe.page_bytes);
      window_in_use = std::max(window_in_use, trace.in_use[event]);
    }
  }
  const auto ratio = [](std::uint64_t bytes, std::uint64_t of) {
    return static_cast<double>(bytes) / static_cast<double>(of);
  };
  const std::uint64_t plan = window_pages + offline_footprint(trace, window, trace.events.size());
  const std::uint64_t first = first_pages + offline_footprint(trace, 0, first_repeat);
  std::printf("| %s | %zu allocations, %zu repeats from event %zu | %.3f | step %zu (event %zu) | "
              "%.3f | %.3f | %.3f |\n",
              trace.name.c_str(), period.allocations, period.starts.size(), period.starts.front(),
              ratio(today_peak, trace.peak_in_use), step_of(today_peak_at), today_peak_at,
              ratio(window_in_use, trace.peak_in_use), ratio(plan, window_in_use),
              ratio(first, first_in_use));
  std::fflush(stdout);
}

void simulate(const Trace& trace, const Options& options) {
  HostStorage host;
  ProbeStorage probe(host);
  ErrorGraph graph;
  MemoryManager sliced(probe, graph, MemoryConfig{});
  UnitArena arena(options);
  std::vector<Allocation> live(trace.slots);
  struct Block {
    std::uint64_t at = 0;
    std::uint64_t extent = 0; ///< 0: none, or a sliced pool's.
  };
  std::vector<Block> blocks(trace.slots);
  Calls calls[3];
  std::uint64_t peak = 0;
  std::uint64_t touched_peak = 0;
  std::uint64_t page_peak = 0;
  auto drop = [&](std::uint32_t slot) {
    if (blocks[slot].extent != 0) {
      arena.release(blocks[slot].at, blocks[slot].extent);
    }
    blocks[slot] = Block{};
    live[slot].reset();
  };
  taintpool::replay::replay_cold_then_warm(
      trace,
      [&](taintpool::replay::Phase phase, const taintpool::replay::Event& step) {
        if (!step.allocate) {
          drop(step.slot);
        } else {
          const std::uint64_t extent = round_up(step.size == 0 ? 1 : step.size, alignment);
          if (extent <= largest_sliced) {
            live[step.slot] = sliced.allocate(step.size);
          } else {
            blocks[step.slot] = Block{arena.allocate(extent, calls[phase]), extent};
          }
        }
        peak = std::max(peak, probe.page_bytes + arena.held_bytes());
        page_peak = std::max(page_peak, probe.page_bytes);
        touched_peak = std::max(touched_peak, probe.page_bytes + arena.touched_bytes());
      },
      [&] {
        for (std::uint32_t slot = 0; slot < live.size(); ++slot) {
          drop(slot);
        }
      });
  const auto ratio = [&](std::uint64_t bytes) {
    return static_cast<double>(bytes) / static_cast<double>(trace.peak_in_use);
  };
  const auto print = [](const Calls& c) {
    std::printf(" %llu / %llu / %llu |", static_cast<unsigned long long>(c.maps),
                static_cast<unsigned long long>(c.unmaps),
                static_cast<unsigned long long>(c.creates));
  };
  std::printf("| %s | %.3f | %.3f |", trace.name.c_str(), ratio(touched_peak), ratio(peak));
  print(calls[0]);
  print(calls[1]);
  print(calls[2]);
  std::printf(" %zu |", trace.events.size());
  if (options.offline) {
    std::printf(" %.3f |",
                ratio(page_peak +
                      round_up(offline_footprint(trace, 0, trace.events.size()), options.unit)));
  }
  std::printf("\n");
  std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
  Options options;
  std::vector<std::string> paths;
  for (int arg = 1; arg < argc; ++arg) {
    const std::string word = argv[arg];
    if (word == "--unit" && arg + 1 < argc) {
      const std::uint64_t mib = std::strtoull(argv[++arg], nullptr, 10);
      if (mib == 0 || mib > (std::uint64_t{1} << 20)) {
        std::fprintf(stderr, "unit_placement: --unit takes a number of MiB from 1 to 2^20\n");
        return 2;
      }
      options.unit = mib << 20;
    } else if (word == "--steady") {
      options.steady = true;
    } else if (word == "--offline") {
      options.offline = true;
    } else if (word == "--keep" && arg + 1 < argc) {
      options.keep = std::atof(argv[++arg]);
    } else if (word == "--fit" && arg + 1 < argc) {
      const std::string fit = argv[++arg];
      if (fit != "cost" && fit != "best") {
        std::fprintf(stderr, "unit_placement: --fit is cost or best\n");
        return 2;
      }
      options.cost_first = fit == "cost";
    } else {
      paths.push_back(word);
    }
  }
  if (paths.empty() || options.keep < 0) {
    std::fprintf(stderr,
                 "usage: unit_placement [--unit MIB] [--keep F] [--fit cost|best] [--offline] "
                 "TRACE...\n       unit_placement --steady TRACE...\n");
    return 2;
  }
  if (options.steady) {
    std::printf(
        "| trace | period (a step) | today's peak | reached in | last two steps' peak in use "
        "/ the trace's | their offline placement / their peak in use | the first step's offline "
        "placement / its peak in use |\n"
        "|---|---|---|---|---|---|---|\n");
    for (const std::string& path : paths) {
      try {
        steady_state(taintpool::replay::load_trace(path));
      } catch (const std::exception& error) {
        std::fprintf(stderr, "unit_placement: %s: %s\n", path.c_str(), error.what());
        return 1;
      }
    }
    return 0;
  }
  std::printf("| trace | touched | held | maps / unmaps / units created, cold first half "
              "| after step 1 | warm replay | events |%s\n|---|---|---|---|---|---|---|%s\n",
              options.offline ? " offline |" : "", options.offline ? "---|" : "");
  for (const std::string& path : paths) {
    try {
      simulate(taintpool::replay::load_trace(path), options);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "unit_placement: %s: %s\n", path.c_str(), error.what());
      return 1;
    }
  }
  return 0;
}
