// pool_fuzzer: the MemoryManager against the pool model (DESIGN.md §3.4,
// P1–P3, R1–R4), with storage failures injected.
//
// Each input is a sequence of operations, decoded one after another with
// fuzz/common/byte_reader.hpp (every input decodes; a cut-off op reads
// zeros). The first byte of an op picks it:
//
//   allocate   a size from one of six classes (0, tiny, sliced-small,
//              sliced-large, exclusive, too big for any pool)
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
// After every op the harness compares, without calling into the manager
// (that would discover releases the model has not yet seen): the live and
// pending allocations (ids, sizes, placements — P2, checked by the model
// against every live one — and claims), every live failure and its tags
// (R1, recounted by the model), then core's check_invariants() and
// check_refcounts (R1–R3, with the failures the harness holds). An op that
// throws must throw what the model says (BufferTooBig, NotFound,
// InvalidBinding; OutOfMemory only while a fault is armed) and change
// nothing the model tracks. At the end every handle is dropped and the
// manager swept and cleaned up: the graph must be empty (R4) and every page
// back in storage.
#include <taintpool/exception.hpp>
#include <taintpool/model/pool_model.hpp>
#include <taintpool/pool/fault_injecting_storage.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/byte_reader.hpp"
#include "common/check.hpp"
#include "common/show.hpp"

namespace taintpool::fuzz {
namespace {

/// Three pools reached with small sizes, and free exclusive pages that age
/// out after four reserves, so every path is near.
MemoryConfig ladder() {
  MemoryConfig config;
  config.alignment = 256;
  config.sliced = {{8 << 10, 1 << 10}, {64 << 10, 16 << 10}};
  config.max_allocation = 1 << 20;
  config.exclusive_release_after = 4;
  return config;
}

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

class Harness {
 public:
  Harness()
      : checker_("pool_fuzzer") {
    checker_.set_context([this] { return context(); });
  }

  void run(ByteReader& in) {
    while (!in.empty() && ops_ < 400) {
      const std::uint8_t op = static_cast<std::uint8_t>(in.byte() % kOpCount);
      last_ = std::string(op_name(op));
      step(op, in);
      ++ops_;
      compare();
    }
    finish();
  }

 private:
  // ------------------------------------------------------------ decoding

  std::uint64_t size(ByteReader& in) {
    switch (in.below(6)) {
    case 0:
      return 0;
    case 1:
      return in.in(1, 300);
    case 2:
      return in.in(301, 1024);
    case 3:
      return in.in(1025, 16 << 10);
    case 4:
      return in.in((16 << 10) + 1, 300 << 10);
    default:
      return in.in((1 << 20) + 1, 1 << 24);
    }
  }

  /// A binding of a held handle: usually within its allocation, sometimes
  /// reaching past the end.
  Binding binding(ByteReader& in, std::size_t handle) {
    const AllocationId id = model_handles_[handle];
    const std::uint64_t size = core_handles_[handle].size();
    const std::uint64_t limit = in.flag() ? size : size + 600;
    const std::uint64_t begin = in.in(0, limit);
    const std::uint64_t end = in.in(begin, limit);
    last_ += " " + show(id) + " " + show(ByteRange::of(begin, end));
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
    checker_.expect_equal("P3", "a binding op's error", got ? show(*got) : std::string("none"),
                          want ? show(*want) : std::string("none"));
    return !want.has_value();
  }

  FailureId failure_for_taint(ByteReader& in) {
    const std::vector<FailureId> live = model_.engine().live_failures();
    if (live.empty() || in.flag()) {
      const FailureId core = graph_.insert(Error::launch("kernel failed"));
      const FailureId model = model_.engine().insert(Error::launch("kernel failed"));
      checker_.expect_equal("G1", "a new failure's id", core, model);
      fresh_.push_back(core);
      return core;
    }
    return live[in.below(live.size())];
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

  void step(std::uint8_t op, ByteReader& in) {
    const bool have = !core_handles_.empty();
    const std::size_t handle = have ? in.below(core_handles_.size()) : 0;
    switch (op) {
    case kAllocate:
      allocate(size(in));
      break;
    case kDrop:
      if (have) {
        model_.handle_dropped(model_handles_[handle]);
        model_handles_.erase(model_handles_.begin() + static_cast<std::ptrdiff_t>(handle));
        core_handles_.erase(core_handles_.begin() + static_cast<std::ptrdiff_t>(handle));
      }
      break;
    case kCopy:
      if (have) {
        model_.handle_copied(model_handles_[handle]);
        model_handles_.push_back(model_handles_[handle]);
        core_handles_.push_back(core_handles_[handle]);
      }
      break;
    case kTaint:
      if (have) {
        const Binding bytes = binding(in, handle);
        const FailureId failure = failure_for_taint(in);
        taint(bytes, failure);
        release_fresh();
      }
      break;
    case kWritten:
      if (have) {
        const Binding bytes = binding(in, handle);
        if (binding_op(bytes, [&] { memory_->written(bytes); })) {
          model_.written(bytes);
        }
      }
      break;
    case kFailures:
      if (have) {
        const Binding bytes = binding(in, handle);
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
      memory_->sweep();
      model_.manager_called();
      break;
    case kCleanup:
      memory_->cleanup();
      model_.manager_called();
      break;
    case kReset:
      if (in.below(4) == 0) { // rare: it ends everything
        memory_->reset();
        model_.reset();
        checker_.expect_equal("P1", "pages after reset", memory_->stats().reserved,
                              std::uint64_t{0});
      }
      break;
    case kStats: {
      const MemoryStats stats = memory_->stats();
      model_.manager_called();
      checker_.expect_equal("P2", "bytes in use", stats.in_use, model_.in_use());
      checker_.expect_equal("P2", "padding", stats.padding, model_.padding());
      checker_.expect_equal("P2", "allocations", stats.allocations, model_.allocations());
      checker_.expect(stats.reserved >= stats.in_use + stats.padding, "P2",
                      "reserved covers what is used");
      checker_.expect(stats.largest_free_block <= stats.free(), "P2",
                      "the largest free block fits in what is free");
      checker_.expect(stats.peak_in_use >= stats.in_use && stats.peak_reserved >= stats.reserved,
                      "P2", "peaks are peaks");
      break;
    }
    case kFaults:
      switch (in.below(3)) {
      case 0:
        storage_.fail_next(in.in(1, 3));
        break;
      case 1:
        storage_.limit_capacity(storage_.live_bytes() + in.below(200) * 1024);
        break;
      default:
        storage_.fail_next(0);
        storage_.limit_capacity(std::nullopt);
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
        held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(which));
      }
      break;
    case kForged: {
      const AllocationId id = AllocationId::from_raw(in.in(1, model_.next_id().raw() + 2));
      const Binding bytes{id, ByteRange::sized(in.below(300), in.below(300))};
      last_ += " " + show(id);
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
    std::optional<ErrorKind> got;
    bool violated = false;
    try {
      memory_->taint(bytes, failure);
    } catch (const Exception& error) {
      got = error.kind();
    } catch (const std::logic_error&) {
      violated = true;
    }
    checker_.expect_equal("P3", "a binding op's error", got ? show(*got) : std::string("none"),
                          want ? show(*want) : std::string("none"));
    if (!want) {
      checker_.expect_equal("R2", "tainting with a failure that is gone throws", violated, dead);
      if (!dead) {
        model_.taint(bytes, failure);
      }
    }
  }

  void allocate(std::uint64_t size) {
    last_ += " " + std::to_string(size);
    const std::uint64_t injected = storage_.injected_failures();
    try {
      Allocation allocation = memory_->allocate(size);
      model_.manager_called();
      checker_.expect(!model_.too_big(size), "P3", "a size above max_allocation was allocated");
      const BoundBytes bytes = memory_->resolve(allocation.whole());
      std::uint64_t extent = 0;
      memory_->for_each_allocation([&](const AllocationInfo& info) {
        if (info.id == allocation.id()) {
          extent = info.extent;
        }
      });
      try {
        model_.allocated(allocation.id(), size, reinterpret_cast<std::uintptr_t>(bytes.data),
                         extent, bytes.pool);
      } catch (const std::logic_error& error) {
        checker_.fail("P2", error.what());
      }
      model_handles_.push_back(allocation.id());
      core_handles_.push_back(std::move(allocation));
    } catch (const Exception& error) {
      model_.manager_called(); // allocate discovered releases before it refused
      if (model_.too_big(size)) {
        checker_.expect_equal("P3", "the error for a size no pool holds", show(error.kind()),
                              show(ErrorKind::BufferTooBig));
      } else {
        checker_.expect(
            storage_.injected_failures() > injected && error.kind() == ErrorKind::OutOfMemory, "P3",
            [&] {
              return "an allocation failed with no fault armed: " + std::string(error.what());
            });
        const std::string message = error.what();
        checker_.expect(message.find("in use") != std::string::npos &&
                            message.find("reserved") != std::string::npos &&
                            message.find("largest free block") != std::string::npos,
                        "P3", "the out-of-memory message gives the breakdown");
      }
    }
  }

  // ------------------------------------------------------------ comparison

  void compare() {
    std::vector<AllocationInfo> infos;
    memory_->for_each_allocation([&](const AllocationInfo& info) { infos.push_back(info); });
    checker_.expect_equal("P1", "allocations live or awaiting discovery",
                          static_cast<std::uint64_t>(infos.size()), model_.allocations());
    for (const AllocationInfo& info : infos) {
      std::vector<std::pair<FailureId, ByteRange>> claims;
      info.taint->for_each_claim(
          [&](FailureId failure, ByteRange range) { claims.emplace_back(failure, range); });
      checker_.expect_equal(
          "P1", [&] { return "claims of " + show(info.id); }, claims, model_.claims(info.id));
    }
    std::vector<FailureId> live;
    graph_.for_each([&](FailureId failure, const Error&, std::uint64_t tags) {
      live.push_back(failure);
      checker_.expect_equal(
          "R1", [&] { return "tags of " + show(failure); }, tags, model_.engine().tags(failure));
    });
    std::sort(live.begin(), live.end());
    checker_.expect_equal("R1", "live failures", live, model_.engine().live_failures());
    std::vector<FailureId> held;
    for (const FailureId failure : held_) {
      if (graph_.contains(failure)) {
        held.push_back(failure);
      }
    }
    try {
      memory_->check_invariants();
      graph_.check_invariants();
      check_refcounts(graph_, memory_->carriers(), held);
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
    storage_.fail_next(0);
    storage_.limit_capacity(std::nullopt);
    memory_->cleanup();
    checker_.expect(graph_.empty(), "R4",
                    "the graph is empty once every handle is dropped and swept");
    checker_.expect_equal("P1", "pages left after cleanup", memory_->stats().reserved,
                          std::uint64_t{0});
  }

  std::string context() const {
    return "op " + std::to_string(ops_) + ": " + last_ + "\n" +
           "model: " + std::to_string(model_.allocations()) + " allocations, " +
           std::to_string(model_.engine().live_failures().size()) + " live failures\n";
  }

  Checker checker_;
  HostStorage host_{256};
  FaultInjectingStorage storage_{host_};
  ErrorGraph graph_;
  std::unique_ptr<MemoryManager> memory_ =
      std::make_unique<MemoryManager>(storage_, graph_, ladder());
  model::PoolModel model_{ladder()};
  std::vector<Allocation> core_handles_;
  std::vector<AllocationId> model_handles_;
  std::vector<FailureId> held_;
  std::vector<FailureId> fresh_;
  std::size_t ops_ = 0;
  std::string last_;
};

} // namespace
} // namespace taintpool::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  taintpool::fuzz::ByteReader in(data, size);
  taintpool::fuzz::Harness harness;
  harness.run(in);
  return 0;
}
