// pool_fuzzer: the MemoryManager against the pool model (DESIGN.md §3.4,
// P1–P4, R1–R4), with storage failures injected, over every configuration
// of model/pool_configs.hpp — the default one users get and the edges of
// every knob.
//
// Each input is a configuration choice (its first byte), then a sequence of
// operations, decoded one after another with fuzz/common/byte_reader.hpp
// (every input decodes; a cut-off op reads zeros). The first byte of an op
// picks it:
//
//   allocate   a size from one of the configuration's classes (0, each
//              sliced pool, the arena, too big for any pool) on a lane
//              (mostly 0-3, sometimes the last lane or one past it)
//   drop/copy  one of the handles the harness holds
//   taint      a binding of a held handle (often valid, sometimes past the
//              end or of an allocation reset away) with a new or live failure
//   written    likewise
//   failures   the failures a binding overlaps
//   sweep, cleanup, reset, stats
//   faults     fail the next 1–3 storage requests, or cap the storage's live
//              bytes near what is live now (or lift the cap)
//   failure    insert a failure the harness holds, or prune one
//   forged     a binding of an id the harness picks (maybe never minted)
//
// The storage is the setup's HostStorage options under FaultInjectingStorage
// under the model's ObservedStorage, which reports every storage call that
// succeeded to the model's storage mirror — so the model predicts pages
// held, reserved bytes and the largest free block exactly,
// policy-independently. The pages and reservations themselves come from a
// RecyclingStorage kept per setup for the process
// (testing/recycling_storage.hpp): the pool never touches the bytes it
// carves, so only the system calls change — none for a page, reservation
// or chunk of a size an earlier input gave back (they were 14% of a run,
// in the kernel; issue 13, twenty-first round). Every call still passes
// the fault injector and the mirror as before, and each input must give
// every page, reservation and chunk back.
//
// Checks, by cost:
//   * after every op, what it touched — an allocation's placement (P2 against
//     every live allocation and the storage mirror, P4 against every range
//     released by another lane), lane and claims; the claims and tags of the
//     failures a taint or write touched; the error an op threw (it must be
//     what the model says: BufferTooBig, NotFound, InvalidBinding, a bad
//     lane; OutOfMemory only while a fault is armed); every usage figure,
//     exactly, on `stats`;
//   * every 32 ops and at the end, everything — every allocation's claims,
//     every failure's tags (R1), check_invariants() and check_refcounts
//     (R1–R3);
//   * at the end every handle is dropped and the manager cleaned up: the
//     graph must be empty (R4) and every byte back in storage.
// The passing path builds no strings: the op log is a ring of small records,
// rendered only when a check fails. Nor, once warm, does it build vectors:
// the handle lists, the comparison scratch and the model (restarted per
// input) are kept across inputs (Kept, below), and claims are compared in
// place with the model's runs (issue 13, eighteenth round); so are the
// manager, its graph and storage chain, one per setup and mode, restarted
// per input (Rig, below; twenty-second round).
#include <taintpool/exception.hpp>
#include <taintpool/model/observed_storage.hpp>
#include <taintpool/model/pool_configs.hpp>
#include <taintpool/model/pool_model.hpp>
#include <taintpool/pool/fault_injecting_storage.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>
#include <taintpool/testing/recycling_storage.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/byte_reader.hpp"
#include "common/check.hpp"
#include "common/fresh_mode.hpp"
#include "common/show.hpp"

namespace taintpool::fuzz {
namespace {

enum Op : std::uint8_t {
  kAllocate,
  kDrop,
  kCopy,
  kTaint,
  kWritten,
  kFailures,
  kSweep,
  kCleanup,
  kReset,
  kStats,
  kFaults,
  kFailure,
  kForged,
  kOpCount
};

const char* op_name(std::uint8_t op) {
  static const char* const names[] = {"allocate", "drop",    "copy",    "taint", "written",
                                      "failures", "sweep",   "cleanup", "reset", "stats",
                                      "faults",   "failure", "forged"};
  return op < kOpCount ? names[op] : "?";
}

/// The most ops one input runs (libFuzzer's max_len bounds it too).
constexpr std::size_t kMaxOps = 200;
/// Every this many ops, everything is compared.
constexpr std::size_t kFullCheckEvery = 32;

/// One op as the log keeps it: its kind and up to three numbers.
struct LoggedOp {
  std::uint8_t op = 0;
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  std::uint64_t c = 0;
};

/// What the harness keeps across inputs: its handle and failure lists and
/// its comparison scratch, cleared (never freed) when an input ends, so that
/// a warm process grows none of them again. Under AddressSanitizer each
/// allocation costs its stack trace, fill and quarantine; these lists were
/// built afresh per input and per op: with the model's claims copied for
/// every comparison, about a fifth of a warm input's allocations (issue 13,
/// eighteenth round). One cost stays: an input that grows a kept list
/// mallocs more than it frees, which libFuzzer takes for a possible leak
/// (it runs the input again, then a leak check) — rare once the process is
/// warm. Capacity cannot steer an input:
/// the faults this target injects are storage calls (FaultInjectingStorage),
/// never heap allocations — fuzz.pool_fuzzer.order replays the corpus in
/// one process, reversed, to hold that.
struct Kept {
  std::vector<Allocation> core_handles;
  std::vector<AllocationId> model_handles;
  std::vector<FailureId> held;  ///< Failures the `failure` op inserted.
  std::vector<FailureId> fresh; ///< Failures a taint op minted for itself.
  /// The owners of an allocation's runs before a taint or write, one per
  /// run, as the model's claims listed them: the failures it may have cut.
  std::vector<FailureId> before;
  std::vector<FailureId> live;     ///< compare_everything: core's live failures.
  std::vector<FailureId> held_now; ///< compare_everything: held and still live.
  std::vector<std::pair<FailureId, ByteRange>> claims; ///< Only to show a mismatch.
  /// compare_everything: check_refcounts' list, kept (it built a map and a
  /// list per full check: about a sixth of a warm input's allocations;
  /// issue 13, twenty-fourth round).
  RefcountScratch refcounts;
  /// compare_everything: the manager's carriers, kept (MemoryManager::
  /// carriers(into); a list per full check was about 3% of a run, issue 13,
  /// thirtieth round). Reserved for every allocation an input can make (one
  /// per op at most) when the lists are made: grown inside an input it
  /// would be a malloc without a free, which libFuzzer re-runs for a leak
  /// check — a built-and-freed list never was.
  std::vector<const Taint*> carriers;

  Kept() { carriers.reserve(kMaxOps); }
  /// The model, restarted for each input (PoolModel::restart: what a fresh
  /// one is, with its buffers and per-allocation maps kept): its growth
  /// was a quarter of a warm input's allocations.
  std::optional<model::PoolModel> model;

  /// Drops the handles first: they point into the input's MemoryManager.
  /// The model stays as the input left it, until the next restart.
  void clear() {
    core_handles.clear();
    model_handles.clear();
    held.clear();
    fresh.clear();
    before.clear();
    live.clear();
    held_now.clear();
    claims.clear();
    carriers.clear();
  }
};

Kept& kept() {
  static Kept lists;
  return lists;
}

/// The kept model (built on the first input; each input restarts it).
model::PoolModel& kept_model(const MemoryConfig& config) {
  std::optional<model::PoolModel>& model = kept().model;
  if (!model) {
    model.emplace(config);
  }
  return *model;
}

/// Whether core's claims of one allocation are the model's runs, compared
/// in place: the same (failure, range) pairs in the same order — what
/// comparing claims() with the model's claims() checked, with no vector
/// built on either side.
bool same_claims(const Taint& taint, std::span<const model::OwnedRun> runs) {
  std::size_t index = 0;
  bool same = true;
  taint.for_each_claim([&](FailureId failure, ByteRange range) {
    same = same && index < runs.size() && runs[index].owner == failure.raw() &&
           runs[index].begin == range.begin() && runs[index].end == range.end();
    ++index;
  });
  return same && index == runs.size();
}

const std::vector<model::PoolSetup>& setups() {
  static const std::vector<model::PoolSetup> all = model::pool_setups();
  return all;
}

/// Setup `index`'s storage, with its HostStorage options, kept for the
/// process (see the top): built on the setup's first input.
testing::RecyclingStorage& storage_for(std::size_t index) {
  static std::vector<std::unique_ptr<testing::RecyclingStorage>> all(setups().size());
  if (!all[index]) {
    all[index] = std::make_unique<testing::RecyclingStorage>(setups()[index].host);
  }
  return *all[index];
}

/// Where setup `setup` in `mode` sits among the per-process tables below:
/// two modes (N1: trusted, never-written) per setup.
std::size_t slot_of(std::size_t setup, const FreshMode& mode) {
  return setup * 2 + (mode.fresh == FreshBytes::NeverWritten ? 1 : 0);
}

/// Setup `setup`'s configuration with `mode`'s fresh bytes (N1), built once
/// per setup and mode for the process: copied per input (for the model's
/// restart) it was an allocation (the sliced ladder) of every input, about
/// 6% of them (issue 13, twenty-ninth round). The model's restart
/// copy-assigns it into a config whose ladder keeps its capacity.
const MemoryConfig& config_for(std::size_t setup, const FreshMode& mode) {
  static const std::vector<MemoryConfig> all = [] {
    std::vector<MemoryConfig> configs;
    configs.reserve(setups().size() * 2);
    for (const model::PoolSetup& each : setups()) {
      for (const FreshBytes fresh : {FreshBytes::Trusted, FreshBytes::NeverWritten}) {
        configs.push_back(each.config);
        configs.back().fresh_bytes = fresh; // N1
      }
    }
    return configs;
  }();
  return all[slot_of(setup, mode)];
}

/// One setup and mode's manager with what it holds references to — the
/// fault injector over the setup's storage, the model's mirror of it, the
/// graph — kept for the process. A manager built per input was a third of
/// a warm input's heap allocations (its inbox, slice records, allocation
/// table, lane list; issue 13, twenty-second round); now each input ends
/// with MemoryManager::restart (every page back, no lane open, every figure
/// 0, the ids from its space's first again: what destroying it and building
/// a new one gave) and ErrorGraph::clear (empty, as R4 checks, and the
/// failure ids from 1 again), so the next input starts from what a fresh
/// manager and graph are. The fault injector's triggers are disarmed at
/// each input's end, as before. Each live manager holds an id space of its
/// own, so the ids here carry the space in their top bits; the model is
/// restarted with the manager's first id, and forged ids are drawn in that
/// space as they were in space 0.
struct Rig {
  Rig(testing::RecyclingStorage& host, model::PoolModel& model, const MemoryConfig& config)
      : faults(host)
      , observed(faults, model)
      , memory(observed, graph, config) {}
  FaultInjectingStorage faults;
  ErrorGraph graph;
  model::ObservedStorage observed;
  MemoryManager memory;
};

/// Setup `setup`'s rig for `mode`, built on its first input.
Rig& rig_for(std::size_t setup, const FreshMode& mode, model::PoolModel& model) {
  static std::vector<std::unique_ptr<Rig>> all(setups().size() * 2);
  std::unique_ptr<Rig>& rig = all[slot_of(setup, mode)];
  if (!rig) {
    rig = std::make_unique<Rig>(storage_for(setup), model, config_for(setup, mode));
  }
  return *rig;
}

/// The id a fresh manager in `memory`'s space mints first.
AllocationId first_id(const MemoryManager& memory) {
  return taintpool::allocation_id(memory.id_space(), 1);
}

class Harness {
 public:
  Harness(std::size_t setup, FreshMode mode)
      : setup_(setups()[setup])
      , mode_(mode)
      , checker_("pool_fuzzer")
      , host_(storage_for(setup))
      , model_(kept_model(setup_.config))
      , rig_(rig_for(setup, mode, model_))
      , faults_(rig_.faults)
      , graph_(rig_.graph)
      , memory_(&rig_.memory) {
    model_.restart(config_for(setup, mode), first_id(*memory_));
    kept_.clear(); // Empty already: the last input's harness cleared it.
    checker_.set_context([this] { return context(); });
  }

  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;
  /// Hands the kept lists back empty, handles first (finish() restarted
  /// the manager with none left).
  ~Harness() { kept_.clear(); }

  void run(ByteReader& in) {
    while (!in.empty() && ops_ < kMaxOps) {
      const auto op = static_cast<std::uint8_t>(in.byte() % kOpCount);
      LoggedOp& logged = log_[ops_ % log_.size()];
      logged = LoggedOp{op, 0, 0, 0};
      step(op, in, logged);
      ++ops_;
      if (ops_ % kFullCheckEvery == 0) {
        compare_everything();
      }
    }
    compare_everything();
    finish();
  }

 private:
  // ------------------------------------------------------------ decoding

  std::uint64_t size(ByteReader& in) {
    const MemoryConfig& config = setup_.config;
    const std::size_t sliced = config.sliced.size();
    // Classes: 0, each sliced pool's range, the arena, too big.
    const std::uint64_t pick = in.below(sliced + 3);
    if (pick == 0) {
      return 0;
    }
    if (pick <= sliced) {
      const std::uint64_t low = pick == 1 ? 0 : config.sliced[pick - 2].max_slice + 1;
      return in.in(low, config.sliced[pick - 1].max_slice);
    }
    const std::uint64_t arena_low = sliced == 0 ? 1 : config.sliced.back().max_slice + 1;
    if (pick == sliced + 1) {
      const std::uint64_t high = std::min(config.max_allocation, setup_.largest_drawn);
      // Mostly small arena requests, so pages fill and free ranges split.
      return in.flag() ? in.in(arena_low, std::min(high, arena_low + (64 << 10)))
                       : in.in(arena_low, high);
    }
    return in.in(config.max_allocation + 1, config.max_allocation + (16 << 20));
  }

  /// Mostly lane 0; lane 1 and the last lane (each its own pools, P4); and
  /// past the last (a bad argument). Few lanes: each costs its pools.
  static std::uint32_t lane(ByteReader& in) {
    switch (in.below(8)) {
    case 5:
      return 1;
    case 6:
      return MemoryManager::max_lanes - 1;
    case 7:
      return in.flag() ? MemoryManager::max_lanes : 1000; // not a lane
    default:
      return 0;
    }
  }

  /// A binding of a held handle: usually within its allocation, sometimes
  /// reaching past the end.
  Binding binding(ByteReader& in, std::size_t handle, LoggedOp& logged) {
    const AllocationId id = model_handles_[handle];
    const std::uint64_t size = core_handles_[handle].size();
    const std::uint64_t limit = in.flag() ? size : size + 600;
    const std::uint64_t begin = in.in(0, limit);
    const std::uint64_t end = in.in(begin, limit);
    logged.a = id.raw();
    logged.b = begin;
    logged.c = end;
    return Binding{id, ByteRange::of(begin, end)};
  }

  /// The error a binding must get, from the model (after discovery).
  std::optional<ErrorKind> expected(const Binding& bytes) const {
    switch (model_.check(bytes)) {
    case model::PoolModel::BindingCheck::Ok:
      return std::nullopt;
    case model::PoolModel::BindingCheck::NotFound:
      return ErrorKind::NotFound;
    case model::PoolModel::BindingCheck::InvalidBinding:
      return ErrorKind::InvalidBinding;
    }
    return std::nullopt;
  }

  void expect_error(std::optional<ErrorKind> got, std::optional<ErrorKind> want) {
    checker_.expect(got == want, "P3", [&] {
      return "a binding op's error: core " + (got ? show(*got) : std::string("none")) + ", model " +
             (want ? show(*want) : std::string("none"));
    });
  }

  /// Runs a binding op on core; it must throw exactly the model's error.
  template <class Fn>
  bool binding_op(const Binding& bytes, Fn&& fn) {
    model_.manager_called();
    const std::optional<ErrorKind> want = expected(bytes);
    std::optional<ErrorKind> got;
    try {
      fn();
    } catch (const Exception& error) {
      got = error.kind();
    }
    expect_error(got, want);
    return !want.has_value();
  }

  FailureId failure_for_taint(ByteReader& in) {
    const std::size_t live = graph_.size();
    if (live == 0 || in.flag()) {
      const FailureId core = graph_.insert(Error::launch("kernel failed"));
      const FailureId model = model_.engine().insert(Error::launch("kernel failed"));
      checker_.expect_equal("G1", "a new failure's id", core, model);
      fresh_.push_back(core);
      return core;
    }
    const std::size_t which = in.below(live);
    std::size_t at = 0;
    std::optional<FailureId> picked;
    graph_.for_each([&](FailureId failure, const Error&, std::uint64_t) {
      if (at++ == which) {
        picked = failure;
      }
    });
    return *picked;
  }

  /// Prunes the failures taint ops minted for themselves (the scope's hold).
  void release_fresh() {
    for (const FailureId failure : fresh_) {
      graph_.prune(failure);
      model_.engine().prune(failure);
    }
    fresh_.clear();
  }

  // ------------------------------------------------------------ ops

  void step(std::uint8_t op, ByteReader& in, LoggedOp& logged) {
    const bool have = !core_handles_.empty();
    const std::size_t handle = have ? in.below(core_handles_.size()) : 0;
    switch (op) {
    case kAllocate: {
      const std::uint64_t bytes = size(in);
      allocate(bytes, lane(in), logged);
      break;
    }
    case kDrop:
      if (have) {
        logged.a = model_handles_[handle].raw();
        model_.handle_dropped(model_handles_[handle]);
        model_handles_.erase(model_handles_.begin() + static_cast<std::ptrdiff_t>(handle));
        core_handles_.erase(core_handles_.begin() + static_cast<std::ptrdiff_t>(handle));
      }
      break;
    case kCopy:
      if (have) {
        logged.a = model_handles_[handle].raw();
        model_.handle_copied(model_handles_[handle]);
        model_handles_.push_back(model_handles_[handle]);
        core_handles_.push_back(core_handles_[handle]);
      }
      break;
    case kTaint:
      if (have) {
        const Binding bytes = binding(in, handle, logged);
        const FailureId failure = failure_for_taint(in);
        taint(bytes, failure);
        release_fresh();
      }
      break;
    case kWritten:
      if (have) {
        const Binding bytes = binding(in, handle, logged);
        owners_before(bytes.allocation);
        if (binding_op(bytes, [&] { memory_->written(bytes); })) {
          model_.written(bytes);
          compare_allocation(bytes.allocation);
          for (const FailureId failure : before_) {
            compare_failure(failure);
          }
        }
      }
      break;
    case kFailures:
      if (have) {
        const Binding bytes = binding(in, handle, logged);
        std::vector<FailureId> found;
        if (binding_op(bytes, [&] { found = memory_->failures(bytes); })) {
          checker_.expect_equal("T3", "failures of a binding", found, model_.failures(bytes));
          const std::optional<FailureId> one = memory_->failure(bytes);
          checker_.expect(one ? std::count(found.begin(), found.end(), *one) == 1 : found.empty(),
                          "T3", "failure() names one of failures()");
        }
      }
      break;
    case kSweep:
      model_.manager_called();
      memory_->sweep();
      break;
    case kCleanup:
      model_.manager_called();
      memory_->cleanup();
      break;
    case kReset:
      if (in.below(4) == 0) { // rare: it ends everything
        model_.reset();       // first: the storage hears of it during the call
        memory_->reset();
        checker_.expect_equal("P1", "bytes held after reset", model_.reserved(), std::uint64_t{0});
        compare_figures();
      }
      break;
    case kStats:
      model_.manager_called();
      compare_figures();
      break;
    case kFaults:
      switch (in.below(3)) {
      case 0:
        faults_.fail_next(in.in(1, 3));
        break;
      case 1:
        faults_.limit_capacity(faults_.live_bytes() + in.below(200) * 4096);
        break;
      default:
        faults_.fail_next(0);
        faults_.limit_capacity(std::nullopt);
        break;
      }
      break;
    case kFailure:
      if (in.flag() || held_.empty()) {
        const FailureId core = graph_.insert(Error::generic("held"));
        checker_.expect_equal("G1", "a held failure's id", core,
                              model_.engine().insert(Error::generic("held")));
        held_.push_back(core);
      } else {
        const std::size_t which = in.below(held_.size());
        graph_.prune(held_[which]);
        model_.engine().prune(held_[which]);
        compare_failure(held_[which]);
        held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(which));
      }
      break;
    case kForged: {
      // In the manager's space, as ids 1 to two past the next were in
      // space 0: the base is 0 there.
      const std::uint64_t base = model_.first_id().raw() - 1;
      const AllocationId id =
          AllocationId::from_raw(base + in.in(1, model_.next_id().raw() - base + 2));
      const Binding bytes{id, ByteRange::sized(in.below(300), in.below(300))};
      logged.a = id.raw();
      binding_op(bytes, [&] { (void)memory_->failure(bytes); });
      break;
    }
    default:
      break;
    }
  }

  /// T1 through the manager. The failure was picked before the call
  /// discovered releases, which may have taken its last carrier: then the
  /// taint is a contract violation (R2) — std::logic_error, nothing changed.
  void taint(const Binding& bytes, FailureId failure) {
    model_.manager_called();
    const std::optional<ErrorKind> want = expected(bytes);
    // An empty range claims nothing and so tags nothing (T1): no violation.
    const bool dead = !model_.engine().live(failure) && !bytes.range.empty();
    before_.clear();
    if (!want) {
      owners_before(bytes.allocation);
    }
    std::optional<ErrorKind> got;
    bool violated = false;
    try {
      memory_->taint(bytes, failure);
    } catch (const Exception& error) {
      got = error.kind();
    } catch (const std::logic_error&) {
      violated = true;
    }
    expect_error(got, want);
    if (!want) {
      checker_.expect(violated == dead, "R2", "tainting with a failure that is gone throws");
      if (!dead) {
        model_.taint(bytes, failure);
      }
      compare_allocation(bytes.allocation);
      compare_failure(failure);
      for (const FailureId before : before_) {
        compare_failure(before);
      }
    }
  }

  void allocate(std::uint64_t size, std::uint32_t lane, LoggedOp& logged) {
    logged.a = size;
    logged.b = lane;
    const std::uint64_t injected = faults_.injected_failures();
    model_.manager_called(); // allocate discovers releases first, whatever happens next
    try {
      Allocation allocation = memory_->allocate(size, lane);
      checker_.expect(!model_.too_big(size), "P3", "a size above max_allocation was allocated");
      checker_.expect(lane < MemoryManager::max_lanes, "P4", "a lane past the last was served");
      checker_.expect_equal("G1", "a new allocation's id", allocation.id(), model_.next_id());
      const std::optional<AllocationInfo> info = memory_->info(allocation.id());
      checker_.expect(info.has_value(), "P2", "a new allocation is not in the table");
      checker_.expect_equal("P4", "a new allocation's lane", info->lane, lane);
      try {
        model_.allocated(allocation.id(), size, reinterpret_cast<std::uintptr_t>(info->data),
                         info->extent, info->pool, lane);
      } catch (const std::logic_error& error) {
        checker_.fail("P2/P4", error.what());
      }
      if (mode_.fresh == FreshBytes::Trusted) {
        checker_.expect(info->taint->is_clean(), "P1", "a new allocation starts clean");
      } else {
        // N1: wholly claimed by the one NeverWritten failure (nothing for
        // size 0), inline (T6), the failure tagged once more.
        compare_allocation(allocation.id());
        checker_.expect_equal("N1", "the never-written failure", memory_->never_written_failure(),
                              model_.never_written_failure());
        checker_.expect(!info->taint->is_spilled(), "N1/T6",
                        "a fresh allocation's claim is the inline one");
        if (const std::optional<FailureId> node = model_.never_written_failure()) {
          compare_failure(*node);
        }
      }
      logged.c = allocation.id().raw();
      model_handles_.push_back(allocation.id());
      core_handles_.push_back(std::move(allocation));
    } catch (const Exception& error) {
      if (model_.too_big(size)) {
        checker_.expect(error.kind() == ErrorKind::BufferTooBig, "P3",
                        "a size no pool holds is BufferTooBig");
      } else {
        checker_.expect(
            faults_.injected_failures() > injected && error.kind() == ErrorKind::OutOfMemory, "P3",
            [&] {
              return "an allocation failed with no fault armed: " + std::string(error.what());
            });
        const std::string_view message = error.what();
        checker_.expect(message.find("in use") != std::string_view::npos &&
                            message.find("reserved") != std::string_view::npos &&
                            message.find("largest free block") != std::string_view::npos &&
                            message.find("gave back") != std::string_view::npos,
                        "P3", "the out-of-memory message gives the breakdown");
      }
    } catch (const std::invalid_argument&) {
      checker_.expect(!model_.too_big(size) && lane >= MemoryManager::max_lanes, "P4",
                      "only a lane past the last is a bad argument");
    }
  }

  // ------------------------------------------------------------ comparison

  /// The owners of the model's runs of `id`, one per run (what its claims
  /// named), into before_: the failures a taint or write of it may cut.
  void owners_before(AllocationId id) {
    before_.clear();
    for (const model::OwnedRun& run : model_.runs(id)) {
      before_.push_back(FailureId::from_raw(run.owner));
    }
  }

  /// One allocation's claims (P1), and that it is still listed.
  void compare_allocation(AllocationId id) {
    const std::optional<AllocationInfo> info = memory_->info(id);
    checker_.expect(info.has_value(), "P1", "a live allocation vanished");
    compare_claims(*info->taint, id);
  }

  /// P1: core's claims of `id` are the model's, compared in place; only a
  /// mismatch builds both lists, to show them.
  void compare_claims(const Taint& taint, AllocationId id) {
    if (!same_claims(taint, model_.runs(id))) [[unlikely]] {
      claims_.clear();
      taint.for_each_claim(
          [&](FailureId failure, ByteRange range) { claims_.emplace_back(failure, range); });
      checker_.expect_equal("P1", "claims of an allocation", claims_, model_.claims(id));
      checker_.fail("P1", "claims of an allocation differ from the model's runs");
    }
  }

  /// One failure's liveness and tags (R1).
  void compare_failure(FailureId failure) {
    checker_.expect_equal("R1", "whether a failure lives", graph_.contains(failure),
                          model_.engine().live(failure));
    checker_.expect_equal("R1", "a failure's tags", graph_.tags(failure),
                          model_.engine().tags(failure));
  }

  /// Every usage figure, exactly (P2). stats() discovers releases: the
  /// caller has brought the model up to date.
  void compare_figures() {
    const MemoryStats stats = memory_->stats();
    checker_.expect_equal("P2", "bytes in use", stats.in_use, model_.in_use());
    checker_.expect_equal("P2", "padding", stats.padding, model_.padding());
    checker_.expect_equal("P2", "allocations", stats.allocations, model_.allocations());
    checker_.expect_equal("P2", "bytes reserved", stats.reserved, model_.reserved());
    checker_.expect_equal("P2", "pages held", stats.pages, model_.pages());
    checker_.expect_equal("P2", "the largest free block", stats.largest_free_block,
                          model_.largest_free_block());
    checker_.expect_equal("P2", "peak in use", stats.peak_in_use, model_.peak_in_use());
    checker_.expect_equal("P2", "peak reserved", stats.peak_reserved, model_.peak_reserved());
  }

  void compare_everything() {
    std::size_t listed = 0;
    memory_->for_each_allocation([&](const AllocationInfo& info) {
      ++listed;
      compare_claims(*info.taint, info.id);
    });
    checker_.expect_equal("P1", "allocations live or awaiting discovery",
                          static_cast<std::uint64_t>(listed), model_.allocations());
    std::vector<FailureId>& live = kept_.live;
    live.clear();
    graph_.for_each([&](FailureId failure, const Error&, std::uint64_t tags) {
      live.push_back(failure);
      checker_.expect_equal("R1", "tags of a failure", tags, model_.engine().tags(failure));
    });
    std::sort(live.begin(), live.end());
    // The same sets, in place: core's list ascending and distinct, each
    // live in the model, and as many as the model holds live.
    bool same = live.size() == model_.engine().size();
    for (std::size_t at = 0; same && at < live.size(); ++at) {
      same = (at == 0 || live[at - 1] < live[at]) && model_.engine().live(live[at]);
    }
    if (!same) [[unlikely]] {
      checker_.expect_equal("R1", "live failures", live, model_.engine().live_failures());
      checker_.fail("R1", "live failures differ from the model's");
    }
    std::vector<FailureId>& held = kept_.held_now;
    held.clear();
    for (const FailureId failure : held_) {
      if (graph_.contains(failure)) {
        held.push_back(failure);
      }
    }
    try {
      memory_->check_invariants();
      graph_.check_invariants();
      memory_->carriers(kept_.carriers);
      check_refcounts(graph_, kept_.carriers, held, kept_.refcounts);
    } catch (const std::logic_error& error) {
      checker_.fail("P2/R1", error.what());
    }
  }

  void finish() {
    core_handles_.clear();
    for (const AllocationId id : model_handles_) {
      model_.handle_dropped(id);
    }
    model_handles_.clear();
    for (const FailureId failure : held_) {
      graph_.prune(failure);
    }
    faults_.fail_next(0);
    faults_.limit_capacity(std::nullopt);
    model_.manager_called();
    memory_->cleanup();
    checker_.expect(graph_.empty(), "R4",
                    "the graph is empty once every handle is dropped and swept");
    compare_figures();
    checker_.expect_equal("P1", "bytes held after cleanup", model_.reserved(), std::uint64_t{0});
    model_.reset();
    // Gives back what is left (address space), as destroying it did: the
    // mirror must agree. The graph is empty (R4 above): cleared, its ids
    // start at 1 again for the next input.
    memory_->restart();
    graph_.clear();
    checker_.expect_equal("P1", "storage bytes left", faults_.live_bytes(), std::uint64_t{0});
    checker_.expect(host_.outstanding() == 0 && host_.outstanding_reservations() == 0 &&
                        host_.outstanding_chunks() == 0,
                    "P1", "every page, reservation and chunk is given back to the storage");
  }

  std::string context() const {
    std::string text = std::string("setup: ") + setup_.name + ", mode " + mode_.name() +
                       "\nlast ops (oldest first):\n";
    const std::size_t shown = std::min(ops_ + 1, log_.size());
    for (std::size_t back = shown; back-- > 0;) {
      const std::size_t index = ops_ - back;
      const LoggedOp& op = log_[index % log_.size()];
      text += "  op " + std::to_string(index) + ": " + op_name(op.op) + " " + std::to_string(op.a) +
              " " + std::to_string(op.b) + " " + std::to_string(op.c) + "\n";
    }
    text += "model: " + std::to_string(model_.allocations()) + " allocations, " +
            std::to_string(model_.reserved()) + " bytes reserved in " +
            std::to_string(model_.pages()) + " pages, " +
            std::to_string(model_.engine().live_failures().size()) + " live failures\n";
    return text;
  }

  const model::PoolSetup& setup_;
  FreshMode mode_; ///< N1: the input's trailer (common/fresh_mode.hpp).
  Checker checker_;
  testing::RecyclingStorage& host_; ///< Kept for the process (storage_for).
  model::PoolModel& model_;         ///< Kept across inputs, restarted for this one.
  Rig& rig_;                        ///< Kept for the process (rig_for), restarted per input.
  FaultInjectingStorage& faults_;
  ErrorGraph& graph_;
  MemoryManager* memory_;
  Kept& kept_ = kept();
  std::vector<Allocation>& core_handles_ = kept_.core_handles;
  std::vector<AllocationId>& model_handles_ = kept_.model_handles;
  std::vector<FailureId>& held_ = kept_.held;
  std::vector<FailureId>& fresh_ = kept_.fresh;
  std::vector<FailureId>& before_ = kept_.before;
  std::vector<std::pair<FailureId, ByteRange>>& claims_ = kept_.claims;
  std::array<LoggedOp, 16> log_{};
  std::size_t ops_ = 0;
};

} // namespace
} // namespace taintpool::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const taintpool::fuzz::FreshMode mode = taintpool::fuzz::fresh_mode(data, size);
  taintpool::fuzz::ByteReader in(data, mode.size);
  const auto& all = taintpool::fuzz::setups();
  taintpool::fuzz::Harness harness(in.below(all.size()), mode);
  harness.run(in);
  return 0;
}
