// Pins MemoryManager::restart(): a manager used, then restarted, answers a
// random sequence of calls exactly as a manager built fresh on a fresh
// storage and graph answers it — the same ids, the same errors, the same
// placements (pool, lane, extent), the same claims and failures, every
// figure of stats() and the lanes opened — over every setup of
// model/pool_configs.hpp, in both FreshBytes modes, with storage faults in
// the sequence (P1–P4, N1).
//
// Why: pool_fuzzer keeps one manager per setup for the process and
// restarts it per input (issue 13, twenty-second round), so a field
// restart() forgot would carry one input's state into the next, where no
// model predicts it. The fresh manager is built after the restarted one is
// destroyed, so both take the same id space (the lowest free) and their
// ids compare raw.
//
// What is compared is what does not depend on where the storage's pages
// land: HostStorage's addresses are the system's. The largest free block
// is compared too except where the arena grows by separate pages (no
// virtual memory): best fit breaks ties between equal blocks by address,
// and two pages' order is the system's.
#include <taintpool/exception.hpp>
#include <taintpool/model/pool_configs.hpp>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "pool_fixture.hpp"

namespace taintpool {
namespace {

/// Reads op numbers one after another; past the end, zeros.
class Numbers {
 public:
  explicit Numbers(const std::vector<std::uint32_t>& numbers)
      : numbers_(numbers) {}
  [[nodiscard]] bool empty() const { return at_ >= numbers_.size(); }
  std::uint64_t below(std::uint64_t count) {
    const std::uint64_t value = at_ < numbers_.size() ? numbers_[at_] : 0;
    ++at_;
    return count == 0 ? 0 : value % count;
  }
  std::uint64_t in(std::uint64_t low, std::uint64_t high) { return low + below(high - low + 1); }

 private:
  const std::vector<std::uint32_t>& numbers_;
  std::size_t at_ = 0;
};

/// A manager with its storage and graph, and the handles a sequence holds.
struct Rig {
  Rig(const model::PoolSetup& setup, FreshBytes fresh)
      : host(setup.host)
      , faults(host)
      , memory(std::make_unique<MemoryManager>(faults, graph, with(setup.config, fresh))) {}
  static MemoryConfig with(MemoryConfig config, FreshBytes fresh) {
    config.fresh_bytes = fresh;
    return config;
  }
  HostStorage host;
  FaultInjectingStorage faults;
  ErrorGraph graph;
  std::unique_ptr<MemoryManager> memory;
  std::vector<Allocation> handles;
  std::vector<FailureId> held;
};

/// Runs `numbers` as calls on the rig and returns everything they answered,
/// in order, as numbers: the same answers give the same list.
std::vector<std::uint64_t> run(Rig& rig, const model::PoolSetup& setup,
                               const std::vector<std::uint32_t>& numbers, bool compare_largest) {
  std::vector<std::uint64_t> seen;
  MemoryManager& memory = *rig.memory;
  const MemoryConfig& config = memory.config();
  const auto error = [&](auto&& call) {
    try {
      call();
      seen.push_back(0);
    } catch (const Exception& thrown) {
      seen.push_back(100 + static_cast<std::uint64_t>(thrown.kind()));
    } catch (const std::invalid_argument&) {
      seen.push_back(1);
    } catch (const std::logic_error&) {
      seen.push_back(2);
    }
  };
  const auto figures = [&] {
    const MemoryStats stats = memory.stats();
    seen.insert(seen.end(), {stats.in_use, stats.padding, stats.allocations, stats.reserved,
                             stats.pages, stats.peak_in_use, stats.peak_reserved,
                             compare_largest ? stats.largest_free_block : 0, memory.lane_count()});
    const std::optional<FailureId> never = memory.never_written_failure();
    seen.push_back(never ? never->raw() : 0);
  };
  const auto binding = [&](Numbers& in) {
    const Allocation& handle = rig.handles[in.below(rig.handles.size())];
    const std::uint64_t limit = handle.size() + (in.below(4) == 0 ? 300 : 0);
    const std::uint64_t begin = in.in(0, limit);
    return Binding{handle.id(), ByteRange::of(begin, in.in(begin, limit))};
  };
  Numbers in(numbers);
  while (!in.empty()) {
    const bool have = !rig.handles.empty();
    switch (in.below(12)) {
    case 0:
    case 1: {
      const std::size_t sliced = config.sliced.size();
      const std::uint64_t pick = in.below(sliced + 3);
      std::uint64_t size = 0;
      if (pick >= 1 && pick <= sliced) {
        size = in.in(pick == 1 ? 0 : config.sliced[pick - 2].max_slice + 1,
                     config.sliced[pick - 1].max_slice);
      } else if (pick == sliced + 1) {
        const std::uint64_t low = sliced == 0 ? 1 : config.sliced.back().max_slice + 1;
        size = in.in(low, std::min({config.max_allocation, setup.largest_drawn, low + (1 << 20)}));
      } else if (pick == sliced + 2) {
        size = config.max_allocation + 1;
      }
      const std::uint64_t choice = in.below(8);
      const std::uint32_t lane =
          choice < 5 ? 0 : (choice == 5 ? 1 : (choice == 6 ? MemoryManager::max_lanes - 1 : 999));
      error([&] {
        Allocation made = memory.allocate(size, lane);
        const std::optional<AllocationInfo> info = memory.info(made.id());
        seen.insert(seen.end(),
                    {made.id().raw(), info->size, info->extent, info->pool, info->lane});
        rig.handles.push_back(std::move(made));
      });
      break;
    }
    case 2:
      if (have) {
        rig.handles.erase(rig.handles.begin() +
                          static_cast<std::ptrdiff_t>(in.below(rig.handles.size())));
      }
      break;
    case 3:
      if (have) {
        const Binding bytes = binding(in);
        const FailureId failure = rig.graph.insert(Error::launch("kernel failed"));
        seen.push_back(failure.raw());
        error([&] { memory.taint(bytes, failure); });
        rig.graph.prune(failure);
      }
      break;
    case 4:
      if (have) {
        const Binding bytes = binding(in);
        error([&] { memory.written(bytes); });
      }
      break;
    case 5:
      if (have) {
        const Binding bytes = binding(in);
        error([&] {
          for (const FailureId failure : memory.failures(bytes)) {
            seen.push_back(failure.raw());
          }
        });
      }
      break;
    case 6:
      memory.sweep();
      break;
    case 7:
      memory.cleanup();
      break;
    case 8:
      figures();
      break;
    case 9:
      rig.faults.fail_next(in.below(3));
      break;
    case 10: {
      const std::uint64_t first = allocation_id(memory.id_space(), 1).raw();
      const Binding forged{AllocationId::from_raw(first + in.below(40)),
                           ByteRange::sized(in.below(300), in.below(300))};
      error([&] { static_cast<void>(memory.failure(forged)); });
      break;
    }
    default:
      if (in.below(6) == 0) {
        memory.reset();
        figures();
      }
      break;
    }
  }
  // Everything every allocation still carries, and the graph.
  rig.faults.fail_next(0);
  figures();
  for (const Allocation& handle : rig.handles) {
    error([&] {
      for (const FailureId failure : memory.failures(handle.whole())) {
        seen.push_back(failure.raw());
      }
    });
  }
  rig.graph.for_each([&](FailureId failure, const Error&, std::uint64_t tags) {
    seen.insert(seen.end(), {failure.raw(), tags});
  });
  memory.check_invariants();
  return seen;
}

RC_GTEST_PROP(PoolRestart, P1_P4_N1_ARestartedManagerAnswersExactlyAsAFreshOne,
              (const std::vector<std::uint32_t>& before, const std::vector<std::uint32_t>& after,
               bool keep_a_handle)) {
  const std::vector<model::PoolSetup> setups = model::pool_setups();
  const std::size_t which = *rc::gen::inRange<std::size_t>(0, setups.size());
  const model::PoolSetup& setup = setups[which];
  const FreshBytes fresh = *rc::gen::element(FreshBytes::Trusted, FreshBytes::NeverWritten);
  const bool compare_largest = setup.host.virtual_memory;

  // Used, then restarted: every figure, id and lane as a fresh one's.
  std::vector<std::uint64_t> restarted_answers;
  std::uint32_t space = 0;
  {
    Rig used(setup, fresh);
    // A handle kept across the restarts: its allocation is tombstoned (it
    // sees NotFound until it goes), as after reset().
    std::optional<Allocation> kept;
    // Twice: the second time, lanes the first opened may stay closed.
    for (std::size_t round = 0; round < 2; ++round) {
      const std::vector<std::uint32_t> half(
          before.begin() + static_cast<std::ptrdiff_t>(round * before.size() / 2), before.end());
      static_cast<void>(run(used, setup, half, compare_largest));
      if (keep_a_handle && !kept && !used.handles.empty()) {
        kept = used.handles.front();
      }
      used.handles.clear();
      used.faults.fail_next(0);
      used.memory->sweep();
      used.memory->restart();
      RC_ASSERT(used.faults.live_bytes() == 0u);
      RC_ASSERT(used.memory->lane_count() == 0u);
      used.memory->check_invariants();
      // Restarting ends every allocation, so no claim holds a failure (the
      // ops pruned their own holds): the graph is empty, and cleared as
      // pool_fuzzer clears it, so its ids start at 1 as a fresh graph's.
      RC_ASSERT(used.graph.empty());
      used.graph.clear();
    }
    space = used.memory->id_space();
    restarted_answers = run(used, setup, after, compare_largest);
    if (kept) {
      kept.reset(); // The tombstoned record goes back to the kept spares.
      used.memory->sweep();
      used.memory->check_invariants();
    }
    used.handles.clear();
  }

  Rig fresh_rig(setup, fresh);
  RC_ASSERT(fresh_rig.memory->id_space() == space);
  const std::vector<std::uint64_t> fresh_answers = run(fresh_rig, setup, after, compare_largest);
  RC_ASSERT(restarted_answers == fresh_answers);
}

} // namespace
} // namespace taintpool
