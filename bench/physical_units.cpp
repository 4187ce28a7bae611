// physical_units: what the arena's peak would be if it held physical memory
// in small units that it could let go of and take back anywhere, at today's
// placement (issue 12). A simulation over the real pool, not a benchmark.
//
// Why: the traces that miss issue 12's peak target (reserved at most 1.05x
// the peak in use) miss because chunks that still hold a live block also
// hold much free memory, and a chunk is mapped and freed whole (CUDA frees a
// cuMemCreate handle only whole). Two figures say how much of that a finer
// unit of physical memory would recover, and what it would cost:
//
//  - "touched" (per --unit): the peak, over the trace, of the pool's pages
//    plus every unit of the arena's address space that some live block
//    overlaps. It is a floor for any design that keeps today's placement
//    and holds memory in units of that size: a unit no live block touches
//    could in principle be given back at once.
//  - "lru" (at the first --unit, with --slack S): an online policy that
//    gets near that floor. A block's untouched units are mapped when it is
//    allocated; a unit whose last block is freed stays mapped (a later block
//    there needs no call) until mapped units exceed (1 + S) times the most
//    units ever touched at once, when the least recently freed ones are
//    unmapped. Its cost is the maps it makes after the first step (the
//    second half of the trace, as pool_replay counts) and in a warm replay:
//    on a GPU each is a cuMemMap + cuMemSetAccess of one unit, and each
//    unmap waits for the device.
//
// Every peak is over the cold replay and a warm one on the same manager
// ("today" is the pool's own reserve; pool_replay reports the cold one).
// The pool itself is untouched: the default MemoryManager over a ProbeStorage
// places every block as it does today; the units are bookkeeping beside it.
//
//   physical_units [--unit MIB]... [--slack S] TRACE...
//
// --unit   unit sizes in MiB (default 2, 8, 20, 64: the CUDA granularity,
//          and c10's expandable-segment pages of 2 and 20 MiB);
// --slack  the lru policy's cached share (default 0.04).
#include <taintpool/error_graph.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <string>
#include <unordered_map>
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

/// A live block of the arena: the bytes it occupies.
struct Block {
  std::uintptr_t address = 0;
  std::uint64_t extent = 0; ///< 0: not in the arena (a sliced pool's, or no block).
};

/// The first and last unit of `unit` bytes that `block` overlaps.
std::uint64_t first_unit(const Block& block, std::uint64_t unit) noexcept {
  return block.address / unit;
}
std::uint64_t last_unit(const Block& block, std::uint64_t unit) noexcept {
  return (block.address + block.extent - 1) / unit;
}

/// Units of `unit` bytes that live blocks overlap, counted by block.
class TouchedUnits {
 public:
  explicit TouchedUnits(std::uint64_t unit) noexcept
      : unit_(unit) {}

  void add(const Block& block) {
    for (std::uint64_t u = first_unit(block, unit_); u <= last_unit(block, unit_); ++u) {
      if (blocks_[u]++ == 0) {
        ++touched_;
      }
    }
  }
  void remove(const Block& block) {
    for (std::uint64_t u = first_unit(block, unit_); u <= last_unit(block, unit_); ++u) {
      if (--blocks_[u] == 0) {
        --touched_;
      }
    }
  }
  [[nodiscard]] std::uint64_t bytes() const noexcept { return touched_ * unit_; }

 private:
  std::uint64_t unit_;
  std::unordered_map<std::uint64_t, std::uint32_t> blocks_;
  std::uint64_t touched_ = 0;
};

/// The lru policy of the header: which units are mapped, and the calls.
class LruUnits {
 public:
  LruUnits(std::uint64_t unit, double slack) noexcept
      : unit_(unit)
      , slack_(slack) {}

  void add(const Block& block, taintpool::replay::Phase phase) {
    for (std::uint64_t u = first_unit(block, unit_); u <= last_unit(block, unit_); ++u) {
      Unit& unit = units_[u];
      if (unit.blocks++ == 0) {
        ++touched_;
      }
      if (!unit.mapped) {
        unit.mapped = true;
        ++mapped_;
        ++maps[phase];
      }
    }
    budget_ = std::max(
        budget_, static_cast<std::uint64_t>(static_cast<double>(touched_) * (1.0 + slack_)) + 1);
    while (mapped_ > budget_ && !freed_.empty()) {
      const auto [u, stamp] = freed_.front();
      freed_.pop_front();
      Unit& unit = units_[u];
      if (unit.blocks == 0 && unit.mapped && unit.freed_at == stamp) {
        unit.mapped = false;
        --mapped_;
        ++unmaps[phase];
      }
    }
  }
  void remove(const Block& block) {
    for (std::uint64_t u = first_unit(block, unit_); u <= last_unit(block, unit_); ++u) {
      Unit& unit = units_[u];
      if (--unit.blocks == 0) {
        --touched_;
        unit.freed_at = ++stamp_;
        freed_.emplace_back(u, stamp_);
      }
    }
  }
  [[nodiscard]] std::uint64_t bytes() const noexcept { return mapped_ * unit_; }

  std::uint64_t maps[3] = {0, 0, 0};
  std::uint64_t unmaps[3] = {0, 0, 0};

 private:
  struct Unit {
    std::uint32_t blocks = 0;
    bool mapped = false;
    std::uint64_t freed_at = 0;
  };
  std::uint64_t unit_;
  double slack_;
  std::unordered_map<std::uint64_t, Unit> units_;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> freed_; ///< (unit, stamp), oldest first.
  std::uint64_t touched_ = 0;
  std::uint64_t mapped_ = 0;
  std::uint64_t budget_ = 0;
  std::uint64_t stamp_ = 0;
};

void simulate(const Trace& trace, const std::vector<std::uint64_t>& units, double slack) {
  HostStorage host;
  ProbeStorage probe(host);
  ErrorGraph graph;
  MemoryManager memory(probe, graph, MemoryConfig{});
  std::vector<Allocation> live(trace.slots);
  std::vector<Block> blocks(trace.slots);
  std::vector<TouchedUnits> touched;
  std::vector<std::uint64_t> touched_peak(units.size(), 0);
  for (const std::uint64_t unit : units) {
    touched.emplace_back(unit);
  }
  LruUnits lru(units.front(), slack);
  std::vector<std::uintptr_t> bases; // Reservation bases, in the order first seen.
  auto reservation_band = [&](std::uintptr_t base) {
    const auto found = std::find(bases.begin(), bases.end(), base);
    if (found != bases.end()) {
      return static_cast<std::size_t>(found - bases.begin());
    }
    bases.push_back(base);
    return bases.size() - 1;
  };
  std::uint64_t today_peak = 0;
  std::uint64_t lru_peak = 0;
  auto drop = [&](std::uint32_t slot) {
    if (blocks[slot].extent != 0) {
      for (TouchedUnits& t : touched) {
        t.remove(blocks[slot]);
      }
      lru.remove(blocks[slot]);
    }
    blocks[slot] = Block{};
    live[slot].reset();
  };
  // The cold replay, then a warm one on the same manager (everything left
  // live dropped between them, as pool_replay does).
  taintpool::replay::replay_cold_then_warm(
      trace,
      [&](taintpool::replay::Phase phase, const taintpool::replay::Event& step) {
        if (!step.allocate) {
          drop(step.slot);
        } else {
          live[step.slot] = memory.allocate(step.size);
          const auto info = memory.info(live[step.slot].id());
          const auto address = reinterpret_cast<std::uintptr_t>(info->data);
          if (const std::uintptr_t base = probe.reservation_base(address); base != 0) {
            // Units count from the reservation's start, as the arena maps
            // them: mmap aligns a reservation only to the granularity, so
            // absolute addresses would make the 8 and 64 MiB columns vary
            // from run to run. Each reservation gets its own 2^48-byte band.
            blocks[step.slot] = Block{
                (address - base) + (static_cast<std::uintptr_t>(reservation_band(base)) << 48),
                info->extent};
            for (TouchedUnits& t : touched) {
              t.add(blocks[step.slot]);
            }
            lru.add(blocks[step.slot], phase);
          }
        }
        today_peak = std::max(today_peak, probe.page_bytes + probe.mapped_bytes());
        for (std::size_t i = 0; i < touched.size(); ++i) {
          touched_peak[i] = std::max(touched_peak[i], probe.page_bytes + touched[i].bytes());
        }
        lru_peak = std::max(lru_peak, probe.page_bytes + lru.bytes());
      },
      [&] {
        for (std::uint32_t slot = 0; slot < live.size(); ++slot) {
          drop(slot);
        }
      });
  const auto ratio = [&](std::uint64_t bytes) {
    return static_cast<double>(bytes) / static_cast<double>(trace.peak_in_use);
  };
  std::printf("| %s | %.3f |", trace.name.c_str(), ratio(today_peak));
  for (const std::uint64_t peak : touched_peak) {
    std::printf(" %.3f |", ratio(peak));
  }
  std::printf(
      " %.3f | %llu / %llu | %llu / %llu |\n", ratio(lru_peak),
      static_cast<unsigned long long>(lru.maps[1]), static_cast<unsigned long long>(lru.unmaps[1]),
      static_cast<unsigned long long>(lru.maps[2]), static_cast<unsigned long long>(lru.unmaps[2]));
  std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::uint64_t> units;
  double slack = 0.04;
  std::vector<std::string> paths;
  for (int arg = 1; arg < argc; ++arg) {
    const std::string word = argv[arg];
    if (word == "--unit" && arg + 1 < argc) {
      const std::uint64_t mib = std::strtoull(argv[++arg], nullptr, 10);
      if (mib == 0 || mib > (std::uint64_t{1} << 20)) {
        std::fprintf(stderr, "physical_units: --unit takes a number of MiB from 1 to 2^20\n");
        return 2;
      }
      units.push_back(mib << 20);
    } else if (word == "--slack" && arg + 1 < argc) {
      slack = std::atof(argv[++arg]);
    } else {
      paths.push_back(word);
    }
  }
  if (paths.empty() || slack < 0) {
    std::fprintf(stderr, "usage: physical_units [--unit MIB]... [--slack S] TRACE...\n");
    return 2;
  }
  if (units.empty()) {
    units = {std::uint64_t{2} << 20, std::uint64_t{8} << 20, std::uint64_t{20} << 20,
             std::uint64_t{64} << 20};
  }
  std::printf("| trace | today |");
  for (const std::uint64_t unit : units) {
    std::printf(" touched, %llu MiB |", static_cast<unsigned long long>(unit >> 20));
  }
  std::printf(" lru %llu MiB, slack %.3f | its maps / unmaps after step 1 | in a warm replay |\n",
              static_cast<unsigned long long>(units.front() >> 20), slack);
  std::printf("|---|---|");
  for (std::size_t i = 0; i < units.size(); ++i) {
    std::printf("---|");
  }
  std::printf("---|---|---|\n");
  for (const std::string& path : paths) {
    try {
      simulate(taintpool::replay::load_trace(path), units, slack);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "physical_units: %s: %s\n", path.c_str(), error.what());
      return 1;
    }
  }
  return 0;
}
