// Pins: a Device with several streams on DeferredHostBackend's seeded
// interleavings agrees with the ordering oracle (model::StreamModel) and the
// D1 oracle (model::DeviceModel) after every command of a random sequence,
// in ordering mode and in detect mode — O1 (no unordered conflicting access,
// the sequential program's bytes), O2 (waits needed, one per source stream),
// O3 (memory handed over and given back free of other streams' work, pins),
// O4 (detect mode: no wait, races as Race failures, unclaimed bytes right),
// S1-S6, D1, G1-G9, P1/P3, and R4 once every handle is dropped.
//
// Why: stream_fuzzer covers the same ground at volume; this runs in the
// normal test suite on every build, and RapidCheck shrinks a failure to a
// short command list a person can read.
//
// How: the system and both oracles are testing/include/taintpool/testing/stream_rig.hpp's
// StreamRig — the same operations and checks the fuzzer runs, so the two
// cannot drift apart. rc::state's model is only the shape the generators
// need (none: every choice is a pick resolved against the rig when the
// command runs, as the fuzzer's decoder resolves its bytes).
#include <taintpool/model/device_model.hpp>
#include <taintpool/testing/stream_rig.hpp>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace taintpool {
namespace {

using model::BodyKind;
using model::BodyPlan;
using testing::StreamRig;

/// Nothing: every choice is resolved against the rig when a command runs.
struct Shape {};

/// The system under test: the rig, whose failures become RapidCheck's.
struct Sut {
  explicit Sut(bool detect, std::uint64_t seed)
      : rig(detect, seed, [](std::string_view rule, const std::string& what) {
        RC_FAIL("[" + std::string(rule) + "] " + what);
      }) {}
  StreamRig rig;
};

using Command = rc::state::Command<Shape, Sut>;

/// A binding by picks, resolved when the command runs: a slot (an empty one
/// names an allocation made before, maybe dropped: NotFound, P3), and a
/// shape (whole, inside, rarely past the end: InvalidBinding).
struct BindSpec {
  std::uint8_t target = 0;
  std::uint8_t shape = 0;
  std::uint8_t a = 0;
  std::uint8_t b = 0;

  [[nodiscard]] Binding resolve(const StreamRig& rig) const {
    std::optional<AllocationId> id;
    for (std::size_t step = 0; step < StreamRig::kSlots && !id; ++step) {
      if (const Allocation& held = rig.slot((target + step) % StreamRig::kSlots)) {
        id = held.id();
      }
    }
    if (!id) {
      id = rig.made().empty() ? AllocationId::from_raw(1) : rig.made()[target % rig.made().size()];
    }
    const std::uint64_t size = rig.model().size(*id);
    if (shape < 128) {
      return Binding{*id, ByteRange::sized(0, size)};
    }
    if (shape < 250) {
      const std::uint64_t begin = a % (size + 1);
      return Binding{*id, ByteRange::sized(begin, b % (size - begin + 1))};
    }
    return Binding{*id, ByteRange::of(std::min<std::uint64_t>(a % (size + 1), size + 1), size + 1)};
  }
};

std::ostream& operator<<(std::ostream& out, const BindSpec& spec) {
  return out << "binding(" << int{spec.target} << "," << int{spec.shape} << "," << int{spec.a}
             << "," << int{spec.b} << ")";
}

rc::Gen<BindSpec> gen_binding() {
  return rc::gen::exec([] {
    return BindSpec{*rc::gen::arbitrary<std::uint8_t>(), *rc::gen::arbitrary<std::uint8_t>(),
                    *rc::gen::arbitrary<std::uint8_t>(), *rc::gen::arbitrary<std::uint8_t>()};
  });
}

/// A stream pick: mostly a live one, rarely a destroyed one or none (P3).
rc::Gen<std::uint8_t> gen_stream() {
  return rc::gen::weightedOneOf<std::uint8_t>({{30, rc::gen::inRange<std::uint8_t>(0, 250)},
                                               {1, rc::gen::inRange<std::uint8_t>(250, 255)}});
}

struct CreateStream : Command {
  explicit CreateStream(const Shape&) {}
  void run(const Shape&, Sut& sut) const override {
    sut.rig.create_stream();
    sut.rig.after_op();
  }
  void show(std::ostream& out) const override { out << "create_stream"; }
};

struct DestroyStream : Command {
  std::uint8_t pick = *rc::gen::inRange<std::uint8_t>(0, 8);
  explicit DestroyStream(const Shape&) {}
  void run(const Shape&, Sut& sut) const override {
    sut.rig.destroy_stream(pick);
    sut.rig.after_op();
  }
  void show(std::ostream& out) const override { out << "destroy_stream " << int{pick}; }
};

struct Create : Command {
  std::size_t slot = *rc::gen::inRange<std::size_t>(0, StreamRig::kSlots);
  std::uint64_t size = *rc::gen::weightedElement<std::uint64_t>(
      {{1, 0}, {6, 16}, {4, 40}, {2, 64}, {1, 200}, {1, 700}});
  std::uint8_t stream = *gen_stream();
  explicit Create(const Shape&) {}
  void run(const Shape&, Sut& sut) const override {
    sut.rig.create(slot, size, sut.rig.stream(stream));
    sut.rig.after_op();
  }
  void show(std::ostream& out) const override {
    out << "slot" << slot << " = create_buffer(" << size << ", stream pick " << int{stream} << ")";
  }
};

struct Drop : Command {
  std::size_t slot = *rc::gen::inRange<std::size_t>(0, StreamRig::kSlots);
  explicit Drop(const Shape&) {}
  void run(const Shape&, Sut& sut) const override {
    sut.rig.drop(slot);
    sut.rig.after_op();
  }
  void show(std::ostream& out) const override { out << "drop slot" << slot; }
};

struct Launch : Command {
  std::string kernel = *rc::gen::element<std::string>("fill", "mix", "copy");
  std::uint8_t stream = *gen_stream();
  std::vector<BindSpec> reads = *rc::gen::container<std::vector<BindSpec>>(
      *rc::gen::inRange<std::size_t>(0, 3), gen_binding());
  std::vector<BindSpec> writes = *rc::gen::container<std::vector<BindSpec>>(
      *rc::gen::inRange<std::size_t>(0, 3), gen_binding());
  bool in_place = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
  BodyKind kind = *rc::gen::weightedElement<BodyKind>({{10, BodyKind::succeed},
                                                       {2, BodyKind::fail},
                                                       {1, BodyKind::throws},
                                                       {2, BodyKind::wrote_only},
                                                       {1, BodyKind::check},
                                                       {1, BodyKind::fail_late}});
  std::uint8_t seed = *rc::gen::arbitrary<std::uint8_t>();
  std::vector<std::pair<std::uint32_t, std::pair<std::uint8_t, std::uint8_t>>> written =
      *rc::gen::container<
          std::vector<std::pair<std::uint32_t, std::pair<std::uint8_t, std::uint8_t>>>>(
          *rc::gen::inRange<std::size_t>(0, 3),
          rc::gen::pair(rc::gen::inRange<std::uint32_t>(0, 4),
                        rc::gen::pair(rc::gen::arbitrary<std::uint8_t>(),
                                      rc::gen::arbitrary<std::uint8_t>())));
  explicit Launch(const Shape&) {}

  void run(const Shape&, Sut& sut) const override {
    std::vector<Binding> in;
    std::vector<Binding> out;
    for (const BindSpec& spec : reads) {
      in.push_back(spec.resolve(sut.rig));
    }
    for (const BindSpec& spec : writes) {
      out.push_back(spec.resolve(sut.rig));
    }
    if (in_place && !in.empty()) {
      out.push_back(in.front()); // Read and written (S5).
    }
    BodyPlan plan;
    plan.kind = kind;
    plan.seed = seed;
    plan.error = Error::launch(kind == BodyKind::fail_late ? "late" : "boom");
    if (kind == BodyKind::fail || kind == BodyKind::wrote_only || kind == BodyKind::fail_late) {
      for (const auto& [output, range] : written) {
        // S2/S6 ranges are untrusted: some name no output, some reach past.
        const std::uint64_t size = output < out.size() ? out[output].range.size() : 4;
        const std::uint64_t begin = range.first % (size + 1);
        plan.written.push_back(
            WrittenRange{output, ByteRange::sized(begin, range.second % (size - begin + 2))});
      }
    }
    sut.rig.launch(kernel, sut.rig.stream(stream), in, out, plan);
    sut.rig.after_op();
  }

  void show(std::ostream& out) const override {
    out << "launch " << kernel << " stream pick " << int{stream} << " reads";
    for (const BindSpec& spec : reads) {
      out << " " << spec;
    }
    out << " writes";
    for (const BindSpec& spec : writes) {
      out << " " << spec;
    }
    out << (in_place ? " +in place" : "") << " body kind " << static_cast<int>(kind) << " seed "
        << int{seed} << " written " << written.size();
  }
};

struct HostWrite : Command {
  std::uint8_t stream = *gen_stream();
  BindSpec into = *gen_binding();
  std::uint8_t seed = *rc::gen::arbitrary<std::uint8_t>();
  explicit HostWrite(const Shape&) {}
  void run(const Shape&, Sut& sut) const override {
    sut.rig.write(sut.rig.stream(stream), into.resolve(sut.rig), seed);
    sut.rig.after_op();
  }
  void show(std::ostream& out) const override {
    out << "host write stream pick " << int{stream} << " " << into;
  }
};

struct Read : Command {
  std::uint8_t stream = *gen_stream();
  BindSpec from = *gen_binding();
  std::uint8_t flags = *rc::gen::arbitrary<std::uint8_t>();
  explicit Read(const Shape&) {}
  void run(const Shape&, Sut& sut) const override {
    sut.rig.read(sut.rig.stream(stream), from.resolve(sut.rig), flags);
    sut.rig.after_op();
  }
  void show(std::ostream& out) const override {
    out << "read stream pick " << int{stream} << " " << from << " flags " << int{flags};
  }
};

struct Step : Command {
  std::uint64_t steps = *rc::gen::inRange<std::uint64_t>(1, 9);
  explicit Step(const Shape&) {}
  void run(const Shape&, Sut& sut) const override {
    sut.rig.step(steps);
    sut.rig.after_op();
  }
  void show(std::ostream& out) const override { out << "step " << steps; }
};

struct Synchronize : Command {
  explicit Synchronize(const Shape&) {}
  void run(const Shape&, Sut& sut) const override {
    sut.rig.synchronize();
    sut.rig.after_op();
  }
  void show(std::ostream& out) const override { out << "synchronize"; }
};

struct Sweep : Command {
  bool cleanup = *rc::gen::arbitrary<bool>();
  explicit Sweep(const Shape&) {}
  void run(const Shape&, Sut& sut) const override {
    sut.rig.sweep(cleanup);
    sut.rig.after_op();
  }
  void show(std::ostream& out) const override { out << (cleanup ? "cleanup" : "sweep"); }
};

void run_commands(bool detect) {
  const Shape initial;
  Sut sut(detect, *rc::gen::arbitrary<std::uint16_t>());
  const auto commands = *rc::gen::scale(
      2.0,
      rc::state::gen::commands(
          initial, rc::state::gen::execOneOfWithArgs<CreateStream, CreateStream, DestroyStream,
                                                     Create, Create, Create, Drop, Launch, Launch,
                                                     Launch, Launch, Launch, HostWrite, Read, Step,
                                                     Step, Step, Synchronize, Sweep>()));
  rc::state::runAll(commands, initial, sut);
  sut.rig.finish(); // Synchronize, compare, drop everything: R4, nothing pinned.
}

RC_GTEST_PROP(StreamsModel,
              O1_O2_O3_S6_OrderingModeGivesTheSequentialBytesWithMinimalWaitsAfterEveryCommand,
              ()) {
  run_commands(false);
}

RC_GTEST_PROP(StreamsModel,
              O3_O4_S6_DetectModeReportsEveryRaceTheModelFindsAndNoOtherAfterEveryCommand, ()) {
  run_commands(true);
}

} // namespace
} // namespace taintpool
