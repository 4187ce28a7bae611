// Pins: the memory manager and the pool model agree after every command of
// random sequences — allocate (every pool, sizes no pool can hold, several
// lanes), copy and drop handles, taint / written / failures on bindings
// (valid, past the end, of allocations that are gone), sweep, cleanup,
// reset, stats — on which allocations are live or pending, their ids, their
// claims (P1: cleared exactly when the manager discovers their end), the
// failures alive and their tags (R1), P2 and P4 for every placement, and
// every usage figure exactly (P2: in use, padding, reserved, pages held,
// the largest free block, both peaks) — over every setup of
// model/pool_configs.hpp: the default configuration users get and the edges
// of every knob (issue 13).
//
// Why: the lifecycle tests pin each P1 point on a scenario; this walks
// sequences nobody wrote down, with RapidCheck's stateful testing
// (rc::state), and shrinks a failure to a minimal command list. Observers
// used between commands never call into the manager (that would discover
// releases the model has not yet seen): the allocation walk, the carriers,
// the graph. The figures need placements, which the rc model cannot see:
// the system under test carries a second PoolModel, a mirror fed by an
// ObservedStorage and by every placement, which predicts them.
#include <taintpool/exception.hpp>
#include <taintpool/model/observed_storage.hpp>
#include <taintpool/model/pool_configs.hpp>
#include <taintpool/model/pool_model.hpp>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "pool_fixture.hpp"

namespace taintpool {
namespace {

const std::vector<model::PoolSetup>& setups() {
  static const std::vector<model::PoolSetup> all = model::pool_setups();
  return all;
}

/// The model side: the pool model, and one entry per handle the test holds.
struct Model {
  explicit Model(std::size_t chosen)
      : setup(chosen)
      , pool(setups()[chosen].config) {}
  std::size_t setup;
  model::PoolModel pool;
  std::vector<AllocationId> handles;
};

/// The system under test: a manager and the handles, in the same order, and
/// the mirror that predicts the figures (see above).
struct Sut {
  explicit Sut(const model::PoolSetup& setup)
      : host(setup.host)
      , mirror(setup.config)
      , observed(host, mirror)
      , memory(observed, graph, setup.config) {}
  HostStorage host;
  model::PoolModel mirror;
  model::ObservedStorage observed;
  ErrorGraph graph;
  MemoryManager memory;
  std::vector<Allocation> handles;
};

using Command = rc::state::Command<Model, Sut>;

/// Checks P2 over every live placement core reports, and that core's live
/// set, claims and failures are the model's.
void compare(const Model& expected, Sut& sut) {
  std::vector<AllocationInfo> infos;
  sut.memory.for_each_allocation([&](const AllocationInfo& info) { infos.push_back(info); });
  std::sort(infos.begin(), infos.end(),
            [](const AllocationInfo& a, const AllocationInfo& b) { return a.data < b.data; });
  for (std::size_t index = 0; index < infos.size(); ++index) {
    RC_ASSERT(reinterpret_cast<std::uintptr_t>(infos[index].data) % 256 == 0u);
    RC_ASSERT(infos[index].extent >= expected.pool.aligned_extent(infos[index].size));
    RC_ASSERT(infos[index].pool == expected.pool.pool_for(infos[index].size));
    if (index > 0) {
      RC_ASSERT(infos[index - 1].data + infos[index - 1].extent <= infos[index].data);
    }
  }
  RC_ASSERT(infos.size() == expected.pool.allocations());
  for (const AllocationInfo& info : infos) {
    std::vector<std::pair<FailureId, ByteRange>> claims;
    info.taint->for_each_claim(
        [&](FailureId failure, ByteRange range) { claims.emplace_back(failure, range); });
    RC_ASSERT(claims == expected.pool.claims(info.id));
  }
  std::vector<FailureId> live;
  sut.graph.for_each([&](FailureId failure, const Error&, std::uint64_t tags) {
    live.push_back(failure);
    RC_ASSERT(tags == expected.pool.engine().tags(failure));
  });
  std::sort(live.begin(), live.end());
  RC_ASSERT(live == expected.pool.engine().live_failures());
  sut.memory.check_invariants();
  check_refcounts(sut.graph, sut.memory.carriers());
}

/// Every figure stats() gives, against the mirror's prediction (P2: exact).
void compare_figures(const MemoryStats& stats, const model::PoolModel& mirror) {
  RC_ASSERT(stats.in_use == mirror.in_use());
  RC_ASSERT(stats.padding == mirror.padding());
  RC_ASSERT(stats.allocations == mirror.allocations());
  RC_ASSERT(stats.reserved == mirror.reserved());
  RC_ASSERT(stats.pages == mirror.pages());
  RC_ASSERT(stats.largest_free_block == mirror.largest_free_block());
  RC_ASSERT(stats.peak_in_use == mirror.peak_in_use());
  RC_ASSERT(stats.peak_reserved == mirror.peak_reserved());
}

/// Runs `command`'s effect on a copy of the model, then compares.
template <class Self>
void settle(const Self& command, const Model& before, Sut& sut) {
  Model after = before;
  command.apply(after);
  compare(after, sut);
}

/// A size from one of the setup's classes: 0, each sliced pool, the arena
/// (capped as the setup says), too big.
std::uint64_t gen_size(const MemoryConfig& config, std::uint64_t largest_drawn) {
  const std::uint64_t arena_low = config.sliced.empty() ? 1 : config.sliced.back().max_slice + 1;
  const std::uint64_t arena_high = std::min(config.max_allocation, largest_drawn);
  // Classes, each a range [low, high]: 0; each sliced pool (weight 5); the
  // arena's small end (3) and all of it (1); too big (1).
  struct Class {
    std::uint32_t weight;
    std::uint64_t low;
    std::uint64_t high;
  };
  std::vector<Class> classes{{1, 0, 0}};
  std::uint64_t low = 0;
  for (const SlicedPoolConfig& pool : config.sliced) {
    classes.push_back({5, low, pool.max_slice});
    low = pool.max_slice + 1;
  }
  classes.push_back({3, arena_low, std::min(arena_high, arena_low + (256 << 10))});
  classes.push_back({1, arena_low, arena_high});
  classes.push_back({1, config.max_allocation + 1, config.max_allocation + (4 << 20)});
  std::uint32_t total = 0;
  for (const Class& each : classes) {
    total += each.weight;
  }
  std::uint32_t pick = *rc::gen::inRange<std::uint32_t>(0, total);
  for (const Class& each : classes) {
    if (pick < each.weight) {
      return *rc::gen::inRange<std::uint64_t>(each.low, each.high + 1);
    }
    pick -= each.weight;
  }
  return 0;
}

struct Allocate : Command {
  std::uint64_t size;
  std::uint32_t lane =
      *rc::gen::weightedElement<std::uint32_t>({{6, 0}, {2, 1}, {1, MemoryManager::max_lanes - 1}});
  explicit Allocate(const Model& model)
      : size(gen_size(setups()[model.setup].config, setups()[model.setup].largest_drawn)) {}
  void apply(Model& model) const override {
    model.pool.manager_called();
    if (!model.pool.too_big(size)) {
      const AllocationId id = model.pool.next_id();
      model.pool.allocated_unplaced(id, size, lane);
      model.handles.push_back(id);
    }
  }
  void run(const Model& model, Sut& sut) const override {
    sut.mirror.manager_called();
    if (model.pool.too_big(size)) {
      try {
        (void)sut.memory.allocate(size, lane);
        RC_FAIL("a size no pool can hold was allocated");
      } catch (const Exception& error) {
        RC_ASSERT(error.kind() == ErrorKind::BufferTooBig);
      }
    } else {
      sut.handles.push_back(sut.memory.allocate(size, lane));
      const AllocationId id = sut.handles.back().id();
      RC_ASSERT(id == model.pool.next_id());
      const std::optional<AllocationInfo> info = sut.memory.info(id);
      RC_ASSERT(info.has_value());
      RC_ASSERT(info->lane == lane);
      try {
        sut.mirror.allocated(id, size, reinterpret_cast<std::uintptr_t>(info->data), info->extent,
                             info->pool, lane);
      } catch (const std::logic_error& error) {
        RC_FAIL(error.what()); // P2 or P4, named by the mirror
      }
    }
    settle(*this, model, sut);
  }
  void show(std::ostream& out) const override {
    out << "Allocate(" << size << ", lane " << lane << ")";
  }
};

/// Picks one of the handles the test holds.
struct OnHandle : Command {
  std::size_t handle = 0;
  void checkPreconditions(const Model& model) const override {
    RC_PRE(handle < model.handles.size());
  }
};

struct Drop : OnHandle {
  explicit Drop(const Model& model) {
    handle = *rc::gen::inRange<std::size_t>(0, std::max<std::size_t>(model.handles.size(), 1));
  }
  void apply(Model& model) const override {
    model.pool.handle_dropped(model.handles[handle]);
    model.handles.erase(model.handles.begin() + static_cast<std::ptrdiff_t>(handle));
  }
  void run(const Model& model, Sut& sut) const override {
    sut.mirror.handle_dropped(model.handles[handle]);
    sut.handles.erase(sut.handles.begin() + static_cast<std::ptrdiff_t>(handle));
    settle(*this, model, sut);
  }
  void show(std::ostream& out) const override { out << "Drop(" << handle << ")"; }
};

struct Copy : OnHandle {
  explicit Copy(const Model& model) {
    handle = *rc::gen::inRange<std::size_t>(0, std::max<std::size_t>(model.handles.size(), 1));
  }
  void apply(Model& model) const override {
    model.pool.handle_copied(model.handles[handle]);
    model.handles.push_back(model.handles[handle]);
  }
  void run(const Model& model, Sut& sut) const override {
    sut.mirror.handle_copied(model.handles[handle]);
    sut.handles.push_back(sut.handles[handle]);
    settle(*this, model, sut);
  }
  void show(std::ostream& out) const override { out << "Copy(" << handle << ")"; }
};

/// A binding of a held handle: usually within the allocation, sometimes past
/// its end.
struct OnBinding : OnHandle {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  explicit OnBinding(const Model& model) {
    handle = *rc::gen::inRange<std::size_t>(0, std::max<std::size_t>(model.handles.size(), 1));
    // Sizes are only known once the allocation exists; draw within a span
    // that covers the small ones and reaches past them.
    begin = *rc::gen::inRange<std::uint64_t>(0, 2000);
    end = begin + *rc::gen::inRange<std::uint64_t>(0, 2000);
  }
  Binding binding(const Model& model) const {
    return Binding{model.handles[handle], ByteRange::of(begin, end)};
  }
  /// Runs `op` on core; it must throw exactly the error the model expects.
  template <class Op>
  void expect(const Model& model, Sut& sut, Op&& op) const {
    sut.mirror.manager_called();
    Model discovered = model;
    discovered.pool.manager_called();
    const auto check = discovered.pool.check(binding(model));
    try {
      op(binding(model));
      RC_ASSERT(check == model::PoolModel::BindingCheck::Ok);
    } catch (const Exception& error) {
      RC_ASSERT(check != model::PoolModel::BindingCheck::Ok);
      RC_ASSERT(error.kind() == (check == model::PoolModel::BindingCheck::NotFound
                                     ? ErrorKind::NotFound
                                     : ErrorKind::InvalidBinding));
    }
  }
};

struct TaintBytes : OnBinding {
  using OnBinding::OnBinding;
  void apply(Model& model) const override {
    model.pool.manager_called();
    const FailureId failure = model.pool.engine().insert(Error::generic("launch failed"));
    if (model.pool.check(binding(model)) == model::PoolModel::BindingCheck::Ok) {
      model.pool.taint(binding(model), failure);
    }
    model.pool.engine().prune(failure);
  }
  void run(const Model& model, Sut& sut) const override {
    const FailureId failure = sut.graph.insert(Error::generic("launch failed"));
    expect(model, sut, [&](const Binding& bytes) { sut.memory.taint(bytes, failure); });
    sut.graph.prune(failure);
    settle(*this, model, sut);
  }
  void show(std::ostream& out) const override {
    out << "Taint(" << handle << ", [" << begin << ", " << end << "))";
  }
};

struct WriteBytes : OnBinding {
  using OnBinding::OnBinding;
  void apply(Model& model) const override {
    model.pool.manager_called();
    if (model.pool.check(binding(model)) == model::PoolModel::BindingCheck::Ok) {
      model.pool.written(binding(model));
    }
  }
  void run(const Model& model, Sut& sut) const override {
    expect(model, sut, [&](const Binding& bytes) { sut.memory.written(bytes); });
    settle(*this, model, sut);
  }
  void show(std::ostream& out) const override {
    out << "Written(" << handle << ", [" << begin << ", " << end << "))";
  }
};

struct QueryBytes : OnBinding {
  using OnBinding::OnBinding;
  void apply(Model& model) const override { model.pool.manager_called(); }
  void run(const Model& model, Sut& sut) const override {
    Model discovered = model;
    discovered.pool.manager_called();
    expect(model, sut, [&](const Binding& bytes) {
      RC_ASSERT(sut.memory.failures(bytes) == discovered.pool.failures(bytes));
    });
    settle(*this, model, sut);
  }
  void show(std::ostream& out) const override {
    out << "Failures(" << handle << ", [" << begin << ", " << end << "))";
  }
};

struct Sweep : Command {
  void apply(Model& model) const override { model.pool.manager_called(); }
  void run(const Model& model, Sut& sut) const override {
    sut.mirror.manager_called();
    sut.memory.sweep();
    settle(*this, model, sut);
  }
  void show(std::ostream& out) const override { out << "Sweep"; }
};

struct Cleanup : Command {
  void apply(Model& model) const override { model.pool.manager_called(); }
  void run(const Model& model, Sut& sut) const override {
    sut.mirror.manager_called();
    sut.memory.cleanup();
    settle(*this, model, sut);
    Model after = model;
    apply(after);
    const MemoryStats stats = sut.memory.stats(); // discovers nothing new: cleanup just did
    RC_ASSERT(stats.in_use == after.pool.in_use());
    RC_ASSERT(stats.allocations == after.pool.allocations());
    compare_figures(stats, sut.mirror);
  }
  void show(std::ostream& out) const override { out << "Cleanup"; }
};

struct Reset : Command {
  void apply(Model& model) const override { model.pool.reset(); }
  void run(const Model& model, Sut& sut) const override {
    sut.mirror.reset(); // first: the storage hears of it during the call
    sut.memory.reset();
    settle(*this, model, sut);
    const MemoryStats stats = sut.memory.stats();
    RC_ASSERT(stats.reserved == 0u);
    compare_figures(stats, sut.mirror);
  }
  void show(std::ostream& out) const override { out << "Reset"; }
};

/// Every usage figure, exactly (P2).
struct Stats : Command {
  void apply(Model& model) const override { model.pool.manager_called(); }
  void run(const Model& model, Sut& sut) const override {
    sut.mirror.manager_called();
    const MemoryStats stats = sut.memory.stats();
    settle(*this, model, sut);
    compare_figures(stats, sut.mirror);
  }
  void show(std::ostream& out) const override { out << "Stats"; }
};

RC_GTEST_PROP(PoolModel, P1_P2_P3_P4_TheManagerAgreesWithTheModelAfterEveryCommandInEverySetup,
              ()) {
  std::vector<std::size_t> indices(setups().size());
  for (std::size_t index = 0; index < indices.size(); ++index) {
    indices[index] = index;
  }
  const std::size_t chosen = *rc::gen::elementOf(indices); // uniform: every setup alike
  RC_TAG(setups()[chosen].name);
  Model model(chosen);
  Sut sut(setups()[chosen]);
  rc::state::check(
      model, sut,
      rc::state::gen::execOneOfWithArgs<Allocate, Allocate, Drop, Copy, TaintBytes, TaintBytes,
                                        WriteBytes, QueryBytes, Sweep, Cleanup, Reset, Stats>());
  // R4: with every handle dropped and a sweep, no failure remains; and with
  // a cleanup, every byte is back in storage.
  for (const Allocation& handle : sut.handles) {
    sut.mirror.handle_dropped(handle.id());
  }
  sut.handles.clear();
  sut.mirror.manager_called();
  sut.memory.sweep();
  RC_ASSERT(sut.graph.empty());
  sut.memory.cleanup();
  const MemoryStats stats = sut.memory.stats();
  RC_ASSERT(stats.reserved == 0u);
  compare_figures(stats, sut.mirror);
}

// The model's own answers the fuzzer compares with in place (issue 13,
// eighteenth round): runs(id) must be claims(id) without the copy, for the
// allocation asked about, while it is live or pending, and nothing after.
TEST(PoolModel, P1_RunsAreAnAllocationsOwnClaimsInPlaceUntilItEnds) {
  model::PoolModel pool{MemoryConfig{}};
  const std::uint64_t base = std::uint64_t{1} << 20;
  pool.page_allocated(base, std::uint64_t{1} << 16);
  const AllocationId a = pool.next_id();
  pool.allocated(a, 100, base, pool.aligned_extent(100), pool.pool_for(100));
  const AllocationId b = pool.next_id();
  pool.allocated(b, 100, base + 1024, pool.aligned_extent(100), pool.pool_for(100));
  const FailureId first = pool.engine().insert(Error::generic("first"));
  const FailureId second = pool.engine().insert(Error::generic("second"));
  pool.taint(Binding{a, ByteRange::of(10, 20)}, first);
  pool.taint(Binding{a, ByteRange::of(20, 40)}, second);
  pool.taint(Binding{b, ByteRange::of(0, 5)}, second);

  const auto same = [&](AllocationId id) {
    const std::span<const model::OwnedRun> runs = pool.runs(id);
    const std::vector<std::pair<FailureId, ByteRange>> claims = pool.claims(id);
    if (runs.size() != claims.size()) {
      return false;
    }
    for (std::size_t at = 0; at < runs.size(); ++at) {
      if (runs[at].owner != claims[at].first.raw() || runs[at].begin != claims[at].second.begin() ||
          runs[at].end != claims[at].second.end()) {
        return false;
      }
    }
    return true;
  };
  ASSERT_EQ(pool.runs(a).size(), 2u);
  EXPECT_TRUE(same(a));
  ASSERT_EQ(pool.runs(b).size(), 1u);
  EXPECT_EQ(pool.runs(b)[0], (model::OwnedRun{0, 5, second.raw()}));
  EXPECT_TRUE(same(b));
  EXPECT_TRUE(pool.runs(AllocationId::from_raw(99)).empty()); // never made

  pool.handle_dropped(a); // pending: core may not clear it before the next call
  EXPECT_EQ(pool.runs(a).size(), 2u);
  EXPECT_TRUE(same(a));
  pool.manager_called(); // ended: its claims go with it (P1)
  EXPECT_TRUE(pool.runs(a).empty());
  EXPECT_TRUE(same(a));
  EXPECT_EQ(pool.runs(b).size(), 1u);
}

// P4 bookkeeping as forget_released() keeps it: a released range is cut
// exactly where the storage or a same-lane allocation takes bytes of it, a
// storage call that meets no released range (the early return) changes
// nothing, and memory the storage takes back and gives again is fresh.
TEST(PoolModel, P4_ReleasedBytesAreForgottenExactlyWhereTheyAreTakenAndNowhereElse) {
  model::PoolModel pool{MemoryConfig{}};
  const std::uint64_t base = std::uint64_t{1} << 20;
  const std::uint64_t page = std::uint64_t{1} << 16;
  const std::uint64_t extent = pool.aligned_extent(1000); // four alignment units
  const std::uint64_t unit = MemoryConfig{}.alignment;
  pool.page_allocated(base, page);
  const auto allocate = [&](std::uint64_t address, std::uint64_t size, std::uint32_t lane) {
    const AllocationId id = pool.next_id();
    pool.allocated(id, size, address, pool.aligned_extent(size), pool.pool_for(size), lane);
    return id;
  };
  const AllocationId first = allocate(base, 1000, 0);
  pool.handle_dropped(first);
  pool.manager_called(); // [base, base + extent) released by lane 0

  // Storage calls elsewhere meet no released range: it stays whole.
  pool.page_allocated(base + 4 * page, page);
  pool.page_freed(base + 4 * page);
  EXPECT_THROW((void)allocate(base + extent - unit, 1, 1), std::logic_error); // its last unit

  // Lane 0 takes its second unit back: only that unit is forgotten, and
  // the bytes either side of it stay released.
  const AllocationId reuse = allocate(base + unit, 1, 0);
  EXPECT_THROW((void)allocate(base, 1, 1), std::logic_error);
  EXPECT_THROW((void)allocate(base + 2 * unit, 1, 1), std::logic_error);
  EXPECT_THROW((void)allocate(base + extent - unit, 1, 1), std::logic_error);
  pool.handle_dropped(reuse);
  pool.manager_called(); // the second unit released again, by lane 0
  EXPECT_THROW((void)allocate(base + unit, 1, 1), std::logic_error);

  // The page goes back and comes again: every byte of it is fresh.
  pool.page_freed(base);
  pool.page_allocated(base, page);
  EXPECT_NO_THROW((void)allocate(base, 1, 1));
  EXPECT_NO_THROW((void)allocate(base + extent - unit, 1, 1));
}

// pool_fuzzer keeps one model and restarts it per input (issue 13,
// eighteenth round): a restarted model must answer exactly as one built
// fresh — ids from 1, no memory, no released bytes, peaks from 0, no
// NeverWritten failure — whatever the last input left in it.
TEST(PoolModel, P1_P2_P4_ARestartedModelAnswersExactlyAsAFreshOne) {
  MemoryConfig never_written;
  never_written.fresh_bytes = FreshBytes::NeverWritten;
  model::PoolModel kept{never_written};
  const std::uint64_t base = std::uint64_t{1} << 20;
  const std::uint64_t page = std::uint64_t{1} << 16;
  // The last input: memory, three allocations (one released by lane 0,
  // one tainted), failures, the NeverWritten failure, peaks.
  kept.page_allocated(base, page);
  kept.page_allocated(base + page, page);
  for (std::uint64_t at = 0; at < 3; ++at) {
    kept.allocated(kept.next_id(), 300, base + at * 1024, kept.aligned_extent(300),
                   kept.pool_for(300), 0);
  }
  const FailureId held = kept.engine().insert(Error::generic("held"));
  kept.taint(Binding{AllocationId::from_raw(2), ByteRange::of(0, 8)}, held);
  kept.handle_dropped(AllocationId::from_raw(1));
  kept.manager_called();
  ASSERT_TRUE(kept.never_written_failure().has_value());

  kept.restart(MemoryConfig{});
  model::PoolModel fresh{MemoryConfig{}};
  // The same next input on both: ids, figures, claims, failures must agree.
  const auto run = [&](model::PoolModel& pool) {
    EXPECT_EQ(pool.next_id(), AllocationId::from_raw(1));
    EXPECT_EQ(pool.reserved(), 0u);
    EXPECT_EQ(pool.peak_reserved(), 0u);
    EXPECT_EQ(pool.peak_in_use(), 0u);
    EXPECT_EQ(pool.allocations(), 0u);
    EXPECT_TRUE(pool.engine().live_failures().empty());
    pool.page_allocated(base + page, page); // only the second page, this time
    const FailureId first = pool.engine().insert(Error::generic("first")); // id 1 again
    EXPECT_EQ(first, FailureId::from_raw(1));
    EXPECT_FALSE(pool.never_written_failure().has_value()); // Trusted now: none
    const AllocationId a = pool.next_id();
    pool.allocated(a, 100, base + page, pool.aligned_extent(100), pool.pool_for(100), 1);
    const AllocationId b = pool.next_id();
    pool.allocated(b, 100, base + page + 256, pool.aligned_extent(100), pool.pool_for(100), 0);
    EXPECT_TRUE(pool.claims(a).empty()); // Trusted: a new allocation starts clean
    EXPECT_TRUE(pool.claims(b).empty());
    pool.taint(Binding{b, ByteRange::of(4, 12)}, first);
    EXPECT_EQ(pool.engine().tags(first), 1u);
    EXPECT_EQ(pool.runs(b).size(), 1u);
    EXPECT_TRUE(pool.runs(a).empty()); // each allocation its own map
    // Only this input's maps: the engine walks them all to count tags.
    EXPECT_EQ(pool.engine().allocations(), 2u);
  };
  run(kept);
  run(fresh);
  EXPECT_EQ(kept.reserved(), fresh.reserved());
  EXPECT_EQ(kept.pages(), fresh.pages());
  EXPECT_EQ(kept.largest_free_block(), fresh.largest_free_block());
  EXPECT_EQ(kept.in_use(), fresh.in_use());
  EXPECT_EQ(kept.padding(), fresh.padding());
  EXPECT_EQ(kept.peak_in_use(), fresh.peak_in_use());
  EXPECT_EQ(kept.peak_reserved(), fresh.peak_reserved());
  EXPECT_EQ(kept.claims(AllocationId::from_raw(2)), fresh.claims(AllocationId::from_raw(2)));
  EXPECT_EQ(kept.engine().live_failures(), fresh.engine().live_failures());
  EXPECT_EQ(kept.next_id(), fresh.next_id());
}

TEST(PoolModel, G1_TheFirstIdIsTheManagersSpacesFirstAndIdsCountUpFromItAfterARestart) {
  // A manager in id space 3 mints (3 << 52) + 1 first: a harness keeping
  // several managers alive at once tells its model so (pool_fuzzer).
  const AllocationId third = allocation_id(3, 1);
  model::PoolModel pool{MemoryConfig{}, third};
  EXPECT_EQ(pool.first_id(), third);
  EXPECT_EQ(pool.next_id(), third);
  pool.allocated_unplaced(third, 100);
  EXPECT_EQ(pool.next_id(), AllocationId::from_raw(third.raw() + 1));
  // Any other id is refused: ids count up by one from the first.
  EXPECT_THROW(pool.allocated_unplaced(AllocationId::from_raw(2), 100), std::logic_error);
  // Restarted without a first id: space 0's, 1, as a fresh model's.
  pool.restart(MemoryConfig{});
  EXPECT_EQ(pool.first_id(), AllocationId::from_raw(1));
  EXPECT_EQ(pool.next_id(), AllocationId::from_raw(1));
  pool.restart(MemoryConfig{}, third);
  EXPECT_EQ(pool.next_id(), third);
  EXPECT_EQ(pool.check(Binding{third, ByteRange::of(0, 1)}),
            model::PoolModel::BindingCheck::NotFound); // the last input's record is gone
}

// largest_free_block() works in two lists the model keeps between calls
// (issue 13, twenty-first round): each block must be measured on its own
// runs and extents only, the chunks of a reservation merged however they
// were mapped, and a second call must answer as the first — as a model
// that never asked before does.
TEST(PoolModel, P2_TheLargestFreeBlockIsMeasuredPerBlockAndAnsweredAlikeEveryTime) {
  const std::uint64_t kib = 1024;
  const std::uint64_t full = std::uint64_t{1} << 20; // a page wholly taken
  const std::uint64_t space = std::uint64_t{8} << 20;
  const std::uint64_t reservation = std::uint64_t{16} << 20;
  const auto build = [&](model::PoolModel& pool) {
    pool.page_allocated(full, 512 * kib);
    pool.allocated(pool.next_id(), 512 * kib, full, pool.aligned_extent(512 * kib),
                   pool.pool_for(512 * kib), 0);
    pool.space_reserved(reservation, space);
    // Two adjacent chunks, the higher one first: one run of 256 KiB.
    pool.chunk_mapped(reservation + 128 * kib, 128 * kib);
    pool.chunk_mapped(reservation, 128 * kib);
  };
  model::PoolModel kept{MemoryConfig{}};
  build(kept);
  // The wholly taken page comes first: its run must not count in the
  // reservation's measure.
  EXPECT_EQ(kept.largest_free_block(), 256 * kib);
  EXPECT_EQ(kept.largest_free_block(), 256 * kib) << "asked again";
  // 100 KiB 32 KiB into the run split it: 32 KiB before, 124 KiB after.
  const auto split = [&](model::PoolModel& pool) {
    pool.allocated(pool.next_id(), 100 * kib, reservation + 32 * kib,
                   pool.aligned_extent(100 * kib), pool.pool_for(100 * kib), 0);
  };
  split(kept);
  EXPECT_EQ(kept.largest_free_block(), 124 * kib);
  model::PoolModel fresh{MemoryConfig{}};
  build(fresh);
  split(fresh);
  EXPECT_EQ(fresh.largest_free_block(), kept.largest_free_block()) << "never asked before";
  // The whole page's allocation ends: the page is the largest again.
  kept.handle_dropped(AllocationId::from_raw(1));
  kept.manager_called();
  EXPECT_EQ(kept.largest_free_block(), 512 * kib);
}

} // namespace
} // namespace taintpool
