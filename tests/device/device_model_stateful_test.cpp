// Pins: a Device and the D1 oracle (model::DeviceModel) agree after every
// command of a random sequence — S1–S5 (skips, partial failures, throws,
// read-write bindings), D1 (claims, byte values, reports), G1/S4 (every id
// predicted), G7–G9 (records and reports), R1–R3 (tags, check_invariants),
// P1/P3 (handles dropped and discovered, bad bindings) and the late-failure
// replay of an asynchronous device — and R4 once every handle is dropped.
// After every command that attributed no verdict, the oracle left every
// allocation the command did not name as it was (Sut::unnamed_unchanged:
// what collective_fuzzer's per-op comparison of the named allocations
// relies on, issue 13).
//
// The same commands run in the never-written mode (issue 15; proposed
// N1-N3) under both launch policies: N1 every fresh allocation of size > 0
// is claimed wholly by the memory's one NeverWritten failure, gone exactly
// with its last carrier (the graph compared after every command, none left
// at the end); N2 Skip skips a launch that reads never-written bytes (S1),
// Report runs it and lists what it read (`unwritten`, compared exactly);
// N3 a read of never-written bytes fails with the oracle's report text.
//
// Why: the fuzzer covers the same ground at volume; this runs in the normal
// test suite on every build, and RapidCheck shrinks a failure to a short
// command list a person can read.
//
// How: rc::state's model is only the *shape* the generators need (which
// slots hold a handle, of what size). The oracle lives in the system under
// test next to the Device, because where the contract lets core choose (the
// root a skip names) the oracle follows core's choice, which is only known
// once core has run.
#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/model/device_model.hpp>
#include <taintpool/testing/planned_body.hpp>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace taintpool {
namespace {

using model::BodyKind;
using model::BodyPlan;
using model::DeviceModel;

constexpr std::size_t kSlots = 4;

/// What the generators know: each slot's handle size, or none.
struct Shape {
  std::array<std::optional<std::uint64_t>, kSlots> sizes;
};

DeviceOptions never_written(UnwrittenReads reads) {
  DeviceOptions options;
  options.memory = MemoryConfig{};
  options.memory->fresh_bytes = FreshBytes::NeverWritten;
  options.unwritten_reads = reads;
  return options;
}

/// The system under test and its oracle, side by side: trusted mode (the
/// default), or the never-written mode with one launch policy (N1-N3).
struct Sut {
  Sut()
      : device(backend) {}
  explicit Sut(UnwrittenReads reads)
      : device(backend, never_written(reads)) {
    oracle.set_fresh_bytes(FreshBytes::NeverWritten, reads);
  }
  DeferredHostBackend backend;
  Device device;
  DeviceModel oracle;
  std::array<Allocation, kSlots> handles;
  std::vector<AllocationId> dropped; ///< Ids whose handles are gone: NotFound (P3).

  /// The oracle's claims and bytes of every allocation before a command,
  /// and its verdict count (see unnamed_unchanged).
  struct Before {
    AllocationId id;
    std::vector<std::pair<FailureId, ByteRange>> claims;
    std::vector<std::optional<std::uint8_t>> bytes;
  };
  std::vector<Before> before;
  std::uint64_t verdicts_before = 0;

  void begin() {
    before.clear();
    for (const AllocationId id : oracle.allocations()) {
      before.push_back(Before{id, oracle.claims(id), oracle.bytes(id)});
    }
    verdicts_before = oracle.verdicts_attributed();
  }

  /// C5/S5 (what collective_fuzzer's per-op comparison relies on): a
  /// command that attributed no verdict (verdicts_attributed() did not
  /// move) left every allocation it did not name as it was — only a late
  /// failure landing rewrites bytes elsewhere. So comparing the named
  /// allocations after such a command, and every one after the others,
  /// misses no change the oracle makes.
  void unnamed_unchanged(const std::string& after, std::span<const Binding> named) {
    if (oracle.verdicts_attributed() != verdicts_before) {
      return;
    }
    for (const Before& was : before) {
      const bool is_named = std::any_of(named.begin(), named.end(), [&](const Binding& binding) {
        return binding.allocation == was.id;
      });
      if (is_named || !oracle.live(was.id)) {
        continue;
      }
      if (oracle.claims(was.id) != was.claims || oracle.bytes(was.id) != was.bytes) {
        RC_FAIL("after " + after + ": " + to_string(was.id) +
                ", not named, changed though no verdict was attributed");
      }
    }
  }

  void compare(const std::string& after, std::span<const Binding> named = {}) {
    unnamed_unchanged(after, named);
    if (auto difference = oracle.mismatch(device)) {
      RC_FAIL("after " + after + ": " + *difference);
    }
    try {
      device.check_invariants();
    } catch (const std::exception& error) {
      RC_FAIL("after " + after + ": check_invariants: " + error.what());
    }
  }

  void drop(std::size_t slot) {
    if (handles[slot]) {
      oracle.drop_handle(handles[slot].id());
      dropped.push_back(handles[slot].id());
      handles[slot].reset();
    }
  }
};

using Command = rc::state::Command<Shape, Sut>;

/// A binding by slot; resolved against the handles when the command runs.
/// An empty slot names a dropped allocation (or one never made).
struct BindSpec {
  std::size_t slot = 0;
  std::uint64_t begin = 0;
  std::uint64_t size = 0;
  bool past_end = false;

  [[nodiscard]] Binding resolve(const Sut& sut) const {
    if (!sut.handles[slot]) {
      const AllocationId id =
          sut.dropped.empty() ? AllocationId::from_raw(999) : sut.dropped.back();
      return Binding{id, ByteRange::sized(begin, size)};
    }
    const std::uint64_t end = sut.handles[slot].size();
    if (past_end) {
      return Binding{sut.handles[slot].id(), ByteRange::of(std::min(begin, end), end + 1)};
    }
    const std::uint64_t from = std::min(begin, end);
    return Binding{sut.handles[slot].id(), ByteRange::sized(from, std::min(size, end - from))};
  }
};

std::ostream& operator<<(std::ostream& out, const BindSpec& spec) {
  return out << "slot" << spec.slot << "[" << spec.begin << "+" << spec.size
             << (spec.past_end ? " past the end" : "") << ")";
}

rc::Gen<BindSpec> gen_binding(const Shape& shape) {
  return rc::gen::exec([shape] {
    BindSpec spec;
    spec.slot = *rc::gen::inRange<std::size_t>(0, kSlots);
    const std::uint64_t size = shape.sizes[spec.slot].value_or(8);
    if (*rc::gen::weightedElement<int>({{3, 0}, {1, 1}}) == 0) {
      spec.size = size; // Whole.
    } else {
      spec.begin = *rc::gen::inRange<std::uint64_t>(0, size + 1);
      spec.size = *rc::gen::inRange<std::uint64_t>(0, size - spec.begin + 1);
    }
    spec.past_end = *rc::gen::weightedElement<int>({{30, 0}, {1, 1}}) == 1;
    return spec;
  });
}

std::string show_bindings(const std::vector<Binding>& bindings) {
  std::string out;
  for (const Binding& binding : bindings) {
    out += " " + to_string(binding.allocation) + to_string(binding.range);
  }
  return out;
}

struct Create : Command {
  std::size_t slot;
  std::uint64_t size;
  explicit Create(const Shape&)
      : slot(*rc::gen::inRange<std::size_t>(0, kSlots))
      , size(*rc::gen::weightedElement<std::uint64_t>({{1, 0}, {6, 16}, {3, 40}, {1, 257}})) {}
  void apply(Shape& shape) const override { shape.sizes[slot] = size; }
  void run(const Shape&, Sut& sut) const override {
    sut.begin();
    sut.drop(slot);
    sut.handles[slot] = sut.device.create_buffer(size);
    RC_ASSERT(sut.handles[slot].id() == sut.oracle.create(size));
    sut.compare("create");
  }
  void show(std::ostream& out) const override {
    out << "slot" << slot << " = create_buffer(" << size << ")";
  }
};

struct Drop : Command {
  std::size_t slot;
  explicit Drop(const Shape&)
      : slot(*rc::gen::inRange<std::size_t>(0, kSlots)) {}
  void apply(Shape& shape) const override { shape.sizes[slot].reset(); }
  void run(const Shape&, Sut& sut) const override {
    sut.begin();
    sut.drop(slot);
    sut.compare("drop");
  }
  void show(std::ostream& out) const override { out << "drop slot" << slot; }
};

struct Launch : Command {
  std::string kernel;
  std::vector<BindSpec> reads;
  std::vector<BindSpec> writes;
  BodyPlan plan;

  explicit Launch(const Shape& shape)
      : kernel(*rc::gen::element<std::string>("fill", "matmul", "gelu")) {
    const auto read_count = *rc::gen::inRange<std::size_t>(0, 3);
    const auto write_count = *rc::gen::inRange<std::size_t>(0, 3);
    for (std::size_t at = 0; at < read_count; ++at) {
      reads.push_back(*gen_binding(shape));
    }
    for (std::size_t at = 0; at < write_count; ++at) {
      writes.push_back(*gen_binding(shape));
    }
    if (!reads.empty() && *rc::gen::weightedElement<int>({{3, 0}, {1, 1}}) == 1) {
      writes.push_back(*rc::gen::elementOf(reads)); // In place (S5).
    }
    plan.kind = *rc::gen::weightedElement<BodyKind>({{8, BodyKind::succeed},
                                                     {3, BodyKind::fail},
                                                     {1, BodyKind::throws},
                                                     {1, BodyKind::check},
                                                     {2, BodyKind::fail_late}});
    plan.seed = *rc::gen::arbitrary<std::uint8_t>();
    plan.error = Error(*rc::gen::element(ErrorKind::Launch, ErrorKind::OutOfMemory),
                       *rc::gen::element<std::string>("", "bad tile"));
    if (plan.kind == BodyKind::fail || plan.kind == BodyKind::fail_late) {
      const auto count = *rc::gen::inRange<std::size_t>(0, 3);
      for (std::size_t at = 0; at < count; ++at) {
        const auto output = *rc::gen::inRange<std::uint32_t>(0, 3);
        const auto begin = *rc::gen::inRange<std::uint64_t>(0, 20);
        const auto length = *rc::gen::inRange<std::uint64_t>(0, 20);
        plan.written.push_back(WrittenRange{output, ByteRange::sized(begin, length)});
      }
    }
    plan.std_exception = *rc::gen::arbitrary<bool>();
  }

  void apply(Shape&) const override {}

  void run(const Shape&, Sut& sut) const override {
    sut.begin();
    std::vector<Binding> in;
    std::vector<Binding> out;
    for (const BindSpec& spec : reads) {
      in.push_back(spec.resolve(sut));
    }
    for (const BindSpec& spec : writes) {
      out.push_back(spec.resolve(sut));
    }
    auto body = [&](const KernelContext& context) -> LaunchOutcome {
      return taintpool::testing::run_planned_body(plan, context, sut.backend);
    };

    LaunchResult result;
    std::optional<ErrorKind> binding_error;
    bool body_threw = false;
    try {
      result = sut.device.launch(kernel, in, out, body);
    } catch (const Exception& error) {
      binding_error = error.kind();
    } catch (const std::runtime_error&) {
      body_threw = true;
    } catch (int) {
      body_threw = true;
    }
    std::optional<std::pair<FailureId, AllocationId>> choice;
    if (result.status == LaunchStatus::Skipped && result.failure && result.needed) {
      choice.emplace(*result.failure, *result.needed);
    }
    const model::ModelLaunch expected = sut.oracle.launch(kernel, in, out, plan, choice);
    if (!expected.binding_errors.empty()) {
      RC_ASSERT(binding_error.has_value());
      RC_ASSERT(std::find(expected.binding_errors.begin(), expected.binding_errors.end(),
                          *binding_error) != expected.binding_errors.end());
    } else {
      RC_ASSERT(!binding_error.has_value());
      RC_ASSERT(body_threw == expected.body_threw); // S3.
      if (!body_threw) {
        RC_ASSERT(expected.choice_acceptable); // S1/T3: a root S1 allows.
        RC_ASSERT(result.status == expected.result.status);
        RC_ASSERT(result.failure == expected.result.failure); // G1, S4.
        RC_ASSERT(result.needed == expected.result.needed);
        RC_ASSERT(result.error == expected.result.error);
        RC_ASSERT(result.unwritten == expected.result.unwritten); // N2.
      }
    }
    std::vector<Binding> named = in;
    named.insert(named.end(), out.begin(), out.end());
    sut.compare("launch " + kernel + " reads" + show_bindings(in) + " writes" + show_bindings(out),
                named);
  }

  void show(std::ostream& out) const override {
    out << "launch " << kernel << " reads";
    for (const BindSpec& spec : reads) {
      out << " " << spec;
    }
    out << " writes";
    for (const BindSpec& spec : writes) {
      out << " " << spec;
    }
    out << " body kind " << static_cast<int>(plan.kind) << " seed " << int{plan.seed} << " written "
        << plan.written.size();
  }
};

struct HostWrite : Command {
  BindSpec into;
  std::uint8_t seed;
  explicit HostWrite(const Shape& shape)
      : into(*gen_binding(shape))
      , seed(*rc::gen::arbitrary<std::uint8_t>()) {}
  void apply(Shape&) const override {}
  void run(const Shape&, Sut& sut) const override {
    sut.begin();
    const Binding binding = into.resolve(sut);
    std::vector<std::byte> bytes(static_cast<std::size_t>(binding.range.size()),
                                 static_cast<std::byte>(seed));
    std::optional<ErrorKind> error;
    LaunchResult result;
    try {
      result = sut.device.write(binding, bytes);
    } catch (const Exception& thrown) {
      error = thrown.kind();
    }
    const model::ModelLaunch expected = sut.oracle.write(binding, bytes);
    RC_ASSERT(error.has_value() == !expected.binding_errors.empty());
    if (!error) {
      RC_ASSERT(result.status == expected.result.status);
    }
    sut.compare("host write", std::span<const Binding>(&binding, 1));
  }
  void show(std::ostream& out) const override { out << "host write " << into; }
};

struct Read : Command {
  BindSpec from;
  explicit Read(const Shape& shape)
      : from(*gen_binding(shape)) {}
  void apply(Shape&) const override {}
  void run(const Shape&, Sut& sut) const override {
    sut.begin();
    const Binding binding = from.resolve(sut);
    std::vector<std::byte> bytes(static_cast<std::size_t>(binding.range.size()));
    std::optional<ErrorKind> error;
    ReadOutcome outcome;
    try {
      outcome = sut.device.read(binding, bytes);
    } catch (const Exception& thrown) {
      error = thrown.kind();
    }
    const model::ModelRead expected = sut.oracle.read(binding, bytes.size());
    if (!expected.binding_errors.empty()) {
      RC_ASSERT(error == expected.binding_errors.front());
    } else {
      RC_ASSERT(!error.has_value());
      RC_ASSERT(outcome.reports == expected.reports); // D1, G8, G9: exactly.
      if (outcome.ok()) {
        for (std::size_t at = 0; at < bytes.size(); ++at) {
          if (expected.bytes[at]) {
            RC_ASSERT(static_cast<std::uint8_t>(bytes[at]) == *expected.bytes[at]);
          }
        }
      }
    }
    sut.compare("read", std::span<const Binding>(&binding, 1));
  }
  void show(std::ostream& out) const override { out << "read " << from; }
};

struct Synchronize : Command {
  explicit Synchronize(const Shape&) {}
  void apply(Shape&) const override {}
  void run(const Shape&, Sut& sut) const override {
    sut.begin();
    const std::vector<AllocationId> waiting = sut.oracle.dropped();
    sut.device.synchronize();
    bool discovered = !waiting.empty();
    sut.device.memory().for_each_allocation([&](const AllocationInfo& info) {
      if (!waiting.empty() && info.id == waiting.front()) {
        discovered = false;
      }
    });
    sut.oracle.synchronize(discovered);
    sut.compare("synchronize");
  }
  void show(std::ostream& out) const override { out << "synchronize"; }
};

struct Sweep : Command {
  explicit Sweep(const Shape&) {}
  void apply(Shape&) const override {}
  void run(const Shape&, Sut& sut) const override {
    sut.begin();
    sut.device.sweep();
    sut.oracle.sweep();
    sut.compare("sweep");
  }
  void show(std::ostream& out) const override { out << "sweep"; }
};

/// One random command sequence against the oracle, then R4 (and N1 for
/// the NeverWritten failure): synchronised, every handle dropped and swept,
/// no failure is left.
void run_sequence(Sut& sut) {
  const Shape initial;
  const auto commands = *rc::gen::scale(
      3.0, rc::state::gen::commands(
               initial, rc::state::gen::execOneOfWithArgs<Create, Create, Drop, Launch, Launch,
                                                          Launch, Launch, HostWrite, HostWrite,
                                                          Read, Read, Synchronize, Sweep>()));
  rc::state::runAll(commands, initial, sut);

  sut.begin();
  sut.device.synchronize();
  sut.oracle.synchronize(true);
  for (std::size_t slot = 0; slot < kSlots; ++slot) {
    sut.drop(slot);
  }
  sut.device.sweep();
  sut.oracle.sweep();
  sut.compare("the end: drop everything, sweep");
  RC_ASSERT(sut.device.graph().empty());
  RC_ASSERT(!sut.device.memory().never_written_failure().has_value());
}

RC_GTEST_PROP(DeviceModel, S1_S5_D1_D2_G1_G9_R1_R4_TheDeviceAgreesWithTheOracleAfterEveryCommand,
              ()) {
  Sut sut;
  run_sequence(sut);
}

RC_GTEST_PROP(NeverWrittenModel, N1_N2_N3_UnderSkipTheDeviceAgreesWithTheOracleAfterEveryCommand,
              ()) {
  Sut sut(UnwrittenReads::Skip);
  run_sequence(sut);
}

RC_GTEST_PROP(NeverWrittenModel, N1_N2_N3_UnderReportTheDeviceAgreesWithTheOracleAfterEveryCommand,
              ()) {
  Sut sut(UnwrittenReads::Report);
  run_sequence(sut);
}

} // namespace
} // namespace taintpool
