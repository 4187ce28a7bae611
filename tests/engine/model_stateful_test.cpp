// Pins: core and the reference model agree on every observable after every
// command of a random sequence — T1–T5 (claims, queries, shape), T6 (inline
// while one range, spilled otherwise), G1–G9 (ids, liveness, errors, skips,
// reports), R1–R3 (tags recounted, check_refcounts) — and R4 at the end.
//
// Why: the unit tests pin the rules on scenarios someone thought of; this
// drives several Taints and one ErrorGraph with RapidCheck's stateful testing
// (rc::state) through sequences nobody wrote down, including offsets next to
// UINT64_MAX, failures that are dead or never minted (core must throw exactly
// when the model does, and change nothing then), and skip logs past the cap.
// A failure shrinks to a minimal command sequence, printed with the diff.
#include <taintpool/model/engine_model.hpp>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine_harness.hpp"

namespace taintpool::testing {
namespace {

using Model = model::EngineModel;
using Command = rc::state::Command<Model, CoreEngine>;

constexpr std::size_t kAllocations = 3;
/// Ranges live in [0, kSpan] or in [UINT64_MAX - kSpan, UINT64_MAX]: small
/// enough that ranges collide often, with a window at the top of the offset
/// space where an overflow in hull/split arithmetic would show.
constexpr std::uint64_t kSpan = 40;
/// Skip records name allocations 1..4; reports are asked for all of them.
constexpr std::uint64_t kReportAllocations = 4;

rc::Gen<ByteRange> gen_range() {
  return rc::gen::exec([] {
    const std::uint64_t base =
        *rc::gen::weightedElement<std::uint64_t>({{5, 0}, {1, UINT64_MAX - kSpan}});
    const auto begin = *rc::gen::inRange<std::uint64_t>(0, kSpan + 1);
    const auto end = *rc::gen::inRange<std::uint64_t>(begin, kSpan + 1);
    return ByteRange::of(base + begin, base + end);
  });
}

rc::Gen<Error> gen_error() {
  return rc::gen::exec([] {
    const auto kind = *rc::gen::element(ErrorKind::Generic, ErrorKind::Launch,
                                        ErrorKind::OutOfMemory, ErrorKind::TornDown);
    std::string message = *rc::gen::element<std::string>(
        "", "x", "load_weights: 64 MiB requested, 12 MiB free on device 0");
    return Error(kind, std::move(message));
  });
}

/// Mostly a live failure; sometimes any id up to the next one (dead, or never
/// minted), where both sides must throw or ignore alike.
std::uint64_t pick_failure(const Model& model) {
  const std::vector<FailureId> live = model.live_failures();
  const std::uint64_t any = *rc::gen::inRange<std::uint64_t>(1, model.next_id().raw() + 1);
  if (live.empty() || *rc::gen::weightedElement<int>({{1, 0}, {4, 1}}) == 0) {
    return any;
  }
  return (*rc::gen::elementOf(live)).raw();
}

SkipRecord gen_skip_record() {
  auto gen_allocation = [] {
    return AllocationId::from_raw(*rc::gen::inRange<std::uint64_t>(1, kReportAllocations + 1));
  };
  SkipRecord record{
      *rc::gen::element<std::string>("linear", "softmax", "gelu", "copy"), gen_allocation(), {}};
  const auto produced = *rc::gen::inRange<std::size_t>(0, 3);
  for (std::size_t at = 0; at < produced; ++at) {
    record.produced.push_back(gen_allocation());
  }
  return record;
}

template <OpKind Kind>
Op generate(const Model& model) {
  Op op;
  op.kind = Kind;
  op.allocation = *rc::gen::inRange<std::size_t>(0, kAllocations);
  switch (Kind) {
  case OpKind::Insert:
  case OpKind::Replace:
    op.error = *gen_error();
    break;
  case OpKind::Taint:
  case OpKind::Written:
    op.range = *gen_range();
    break;
  case OpKind::Skipped: {
    // Several at once, so a failure's log passes the cap of 16 (G7) often.
    const auto count = *rc::gen::inRange<std::size_t>(1, 13);
    for (std::size_t at = 0; at < count; ++at) {
      op.skips.push_back(gen_skip_record());
    }
    break;
  }
  case OpKind::Clear:
  case OpKind::Prune:
    break;
  }
  op.failure = pick_failure(model);
  return op;
}

/// One command: the same op applied to the model (apply) and to core (run),
/// which then compares core against the model's next state.
template <OpKind Kind>
struct Step : Command {
  Op op;

  explicit Step(const Model& model)
      : op(generate<Kind>(model)) {}

  void apply(Model& model) const override { (void)testing::apply(model, op); }

  void run(const Model& before, CoreEngine& core) const override {
    Model expected = before;
    const Outcome model_outcome = testing::apply(expected, op);
    const Outcome core_outcome = testing::apply(core, op);
    const std::string outcome = compare_outcomes(core_outcome, model_outcome);
    if (!outcome.empty()) {
      RC_FAIL(describe(op) + ": " + outcome);
    }
    const std::string difference =
        first_difference(core, expected, boundary_probes(core, expected), kReportAllocations);
    if (!difference.empty()) {
      RC_FAIL("after " + describe(op) + ": " + difference);
    }
  }

  void show(std::ostream& out) const override { out << describe(op); }
};

RC_GTEST_PROP(EngineModel, T1_T6_G1_G9_R1_R3_CoreAgreesWithTheModelAfterEveryCommand, ()) {
  const Model initial = make_model(kAllocations);
  CoreEngine core(kAllocations);
  // Taint and written are listed twice: they are the operations with the
  // most cases, so they get the most draws. Sequences are scaled up four
  // times over RapidCheck's default so failures pile up, die and spill.
  const auto commands = *rc::gen::scale(
      4.0, rc::state::gen::commands(
               initial, rc::state::gen::execOneOfWithArgs<
                            Step<OpKind::Insert>, Step<OpKind::Insert>, Step<OpKind::Taint>,
                            Step<OpKind::Taint>, Step<OpKind::Taint>, Step<OpKind::Written>,
                            Step<OpKind::Written>, Step<OpKind::Clear>, Step<OpKind::Replace>,
                            Step<OpKind::Prune>, Step<OpKind::Skipped>>()));
  rc::state::runAll(commands, initial, core);

  // R4: whatever the sequence left, releasing every carrier and pruning every
  // node the driver still holds empties the graph.
  for (Taint& taint : core.taints) {
    taint.clear(core.graph);
  }
  for (std::uint64_t raw = 1; raw < core.graph.next_id().raw(); ++raw) {
    core.graph.prune(FailureId::from_raw(raw));
  }
  RC_ASSERT(core.graph.empty());
  RC_ASSERT(core.graph.size() == 0u);
}

} // namespace
} // namespace taintpool::testing
