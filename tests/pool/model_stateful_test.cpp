// Pins: the memory manager and the pool model agree after every command of
// random sequences — allocate (every pool, and sizes no pool can hold),
// copy and drop handles, taint / written / failures on bindings (valid, past
// the end, of allocations that are gone), sweep, cleanup, reset — on which
// allocations are live or pending, their ids, their claims (P1: cleared
// exactly when the manager discovers their end), the failures alive and
// their tags (R1), and on P2 for every placement.
//
// Why: the lifecycle tests pin each P1 point on a scenario; this walks
// sequences nobody wrote down, with RapidCheck's stateful testing
// (rc::state), and shrinks a failure to a minimal command list. Observers
// used between commands never call into the manager (that would discover
// releases the model has not yet seen): the allocation walk, the carriers,
// the graph.
#include <taintpool/exception.hpp>
#include <taintpool/model/pool_model.hpp>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <ostream>
#include <vector>

#include "pool_fixture.hpp"

namespace taintpool {
namespace {

/// The model side: the pool model, and one entry per handle the test holds.
struct Model {
  model::PoolModel pool{testing::small_ladder()};
  std::vector<AllocationId> handles;
};

/// The system under test: a manager and the handles, in the same order.
struct Sut {
  HostStorage host{256};
  ErrorGraph graph;
  MemoryManager memory{host, graph, testing::small_ladder()};
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

/// Runs `command`'s effect on a copy of the model, then compares.
template <class Self>
void settle(const Self& command, const Model& before, Sut& sut) {
  Model after = before;
  command.apply(after);
  compare(after, sut);
}

std::uint64_t gen_size() {
  return *rc::gen::weightedElement<std::uint64_t>({
      {6, *rc::gen::inRange<std::uint64_t>(0, 1500)},
      {3, *rc::gen::inRange<std::uint64_t>(1500, 20000)},
      {2, *rc::gen::inRange<std::uint64_t>(20000, 300000)},
      {1, *rc::gen::inRange<std::uint64_t>((1 << 20) + 1, 1 << 22)},
  });
}

struct Allocate : Command {
  std::uint64_t size = gen_size();
  void apply(Model& model) const override {
    model.pool.manager_called();
    if (!model.pool.too_big(size)) {
      const AllocationId id = model.pool.next_id();
      model.pool.allocated_unplaced(id, size);
      model.handles.push_back(id);
    }
  }
  void run(const Model& model, Sut& sut) const override {
    if (model.pool.too_big(size)) {
      try {
        (void)sut.memory.allocate(size);
        RC_FAIL("a size no pool can hold was allocated");
      } catch (const Exception& error) {
        RC_ASSERT(error.kind() == ErrorKind::BufferTooBig);
      }
    } else {
      sut.handles.push_back(sut.memory.allocate(size));
      RC_ASSERT(sut.handles.back().id() == model.pool.next_id());
    }
    settle(*this, model, sut);
  }
  void show(std::ostream& out) const override { out << "Allocate(" << size << ")"; }
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
  void expect(const Model& model, Op&& op) const {
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
    expect(model, [&](const Binding& bytes) { sut.memory.taint(bytes, failure); });
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
    expect(model, [&](const Binding& bytes) { sut.memory.written(bytes); });
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
    expect(model, [&](const Binding& bytes) {
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
    sut.memory.sweep();
    settle(*this, model, sut);
  }
  void show(std::ostream& out) const override { out << "Sweep"; }
};

struct Cleanup : Command {
  void apply(Model& model) const override { model.pool.manager_called(); }
  void run(const Model& model, Sut& sut) const override {
    sut.memory.cleanup();
    settle(*this, model, sut);
    Model after = model;
    apply(after);
    const MemoryStats stats = sut.memory.stats(); // discovers nothing new: cleanup just did
    RC_ASSERT(stats.in_use == after.pool.in_use());
    RC_ASSERT(stats.allocations == after.pool.allocations());
  }
  void show(std::ostream& out) const override { out << "Cleanup"; }
};

struct Reset : Command {
  void apply(Model& model) const override { model.pool.reset(); }
  void run(const Model& model, Sut& sut) const override {
    sut.memory.reset();
    settle(*this, model, sut);
    RC_ASSERT(sut.memory.stats().reserved == 0u);
  }
  void show(std::ostream& out) const override { out << "Reset"; }
};

RC_GTEST_PROP(PoolModel, P1_P2_P3_TheManagerAgreesWithTheModelAfterEveryCommand, ()) {
  Model model;
  Sut sut;
  rc::state::check(
      model, sut,
      rc::state::gen::execOneOfWithArgs<Allocate, Allocate, Drop, Copy, TaintBytes, TaintBytes,
                                        WriteBytes, QueryBytes, Sweep, Cleanup, Reset>());
  // R4: with every handle dropped and a sweep, no failure remains.
  sut.handles.clear();
  sut.memory.sweep();
  RC_ASSERT(sut.graph.empty());
}

} // namespace
} // namespace taintpool
