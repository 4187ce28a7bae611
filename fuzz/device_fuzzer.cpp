// device_fuzzer: a Device on a DeferredHostBackend against the D1 oracle
// (model::DeviceModel), side by side, compared after every operation
// (DESIGN.md §3.5, §4).
//
// Why it is shaped so: the device is where every rule meets — the engine's
// claims (T1–T5), the graph's ids, refcounts and records (G1–G9, R1–R4), the
// pool's handle discovery (P1, P3) and the scope rules (S1–S5, D1–D2) — so
// the harness drives whole dataflows rather than single calls, and compares
// the whole observable state after each step, so a bug is caught at the
// operation that made it, not at some later read.
//
// # What is checked
//
// After EVERY operation (model.mismatch_touched() and the harness):
//   * the ids of the allocations the manager holds (P1), and every
//     allocation the op named or made, with every claim (D1, T5) and every
//     byte whose value the model knows (a body that ran when it should have
//     been skipped, S1, or wrote outside its bindings, changes bytes);
//   * every live failure: its error (G4, the kernel named, S2's note on
//     ignored ranges, S3's "threw before finishing"), tags (R1), skips
//     recorded and kept records, `ran` included (G7); the graph's size and
//     next id — so every minted id is predicted exactly (G1, S4).
// After reads, stale_reports and synchronize while the model holds late
// failures not yet attributed (they may land on any allocation), after a
// synchronize that is made to run out of memory, every kWholeEvery (16)
// operations and at the end of the input (model.mismatch()):
//   * every allocation the manager holds, claims and bytes, as above.
//   With no late failure pending, those ops and sweep and cleanup change
//   no allocation's claims or bytes in the model (bodies write at once; P1
//   discovery ends allocations, which the ids held show), so after them the
//   ids, the allocation read and the whole graph are compared, as after
//   any op;
// and every kWholeEvery operations and at the end:
//   * device.check_invariants() (T5, P1, P2, R1–R3): it walks every pool and
//     every graph node, whatever the op touched.
// A core bug that changes an allocation the op did not name is so caught
// within kWholeEvery ops; one in what it named, at once.
// Per operation:
//   * launch, plainly or through a LaunchPlan (the same checks: a plan's
//     launch must answer as a plain launch of its bindings does; the plan's
//     handles are the model's handle copies; making one is checked as a
//     launch's bindings are, P3): returned / threw a binding error before
//     anything was claimed
//     (P3: the state is compared unchanged, and no launch number was used:
//     every body checks the number it sees against the model's) /
//     rethrew the body's exception (S3); the status, failure, needed and
//     error; for a skip, that core's root and needed are among the pairs S1
//     allows (the model then follows core's choice);
//   * read / stale_reports: the binding errors, the reports exactly (failure
//     ids, root errors, paths, origins, stale ranges, skip counts; G8, G9),
//     and the bytes of an ok read where the model knows them (D1);
//   * synchronize: late failures attributed as the model's naive replay says.
//     When the op's high bits are not 0, heap allocation number (high bits
//     - 1) of the first attempt fails: if synchronize throws bad_alloc, the
//     device must pass check_invariants() at once, and a second, unarmed
//     synchronize must reach the model's state (no late failure is lost) —
//     exactly, or, when the failed attempt spent a failure id (G1), up to a
//     renaming of ids, after which the input ends with the R4 check.
// At the end of every input: synchronize, drop every handle, sweep: the
// graph must be empty (R4).
//
// Cost (issue 13): no op is described as text on a passing run — a failure
// runs the input again with descriptions on (common/op_log.hpp); after most
// ops only what they touched is compared; the model's comparison copies
// nothing it can compare in place; each input's model starts with the last
// one's lists (DeviceModel::Room: capacity, never contents) and every
// launch's and read's verdict is handed back for its lists' room
// (DeviceModel::recycle), so a warm input's model allocates only what it
// keeps as state; each input runs on the last one's Device of its mode,
// reset (Device::reset: observably a fresh Device, every page back), so
// core's pools, graph and lists keep their capacity too.
//
// With TAINTPOOL_TRACE_OUT set (a directory, or a scopes_<name>.tla file),
// each input's run is also written as a ScopesTrace module (proofs/TRACES.md)
// by fuzz/common/device_trace.hpp; an input that plans a late failure
// (check, fail late) leaves that format and writes none.
//
// # How the input is decoded (fuzz/common/byte_reader.hpp: past the end,
// # every byte reads as 0)
//
// Ops until the input runs out. Each op: one byte, low 4 bits the op (a
// weighted table), high bits the slot (of kSlots handle slots). Then:
//   create       size byte (mostly 0..64, else 0..255)
//   launch       kernel byte, counts byte (reads 0..3, writes 0..3, an
//                in-place flag), bindings, plan
//   binding      target byte (a slot, or the next one holding a handle; a
//                dropped id; a never-minted id), then
//                range: whole, inside, or reaching 1..4 bytes past the end
//   plan         kind byte (succeed, wrote_only, fail, partial, throw, check,
//                fail late),
//                error byte, seed byte, written ranges (output index may be
//                out of range, ranges may reach past their output)
//   plan ops     one launch entry of the table with high bits 12..15
//                (op bytes 0xC9..0xF9): a plan slot byte (of kPlanSlots
//                LaunchPlans kept across ops), then 12: make a plan (counts
//                byte and bindings, as a launch); 13, 14: launch through
//                the plan (kernel byte, plan; an empty or moved-from plan
//                is refused); 15: a byte: drop it, or copy or move it to
//                another slot
//   host write   binding, seed, and a size-mismatch flag
//   read         binding, and a wrong-size flag
//   synchronize  nothing more (its high bits pick the allocation to fail)
#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/model/device_model.hpp>
#include <taintpool/testing/many_slices_config.hpp>
#include <taintpool/testing/planned_body.hpp>
#include <taintpool/testing/recycling_storage.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/alloc_faults.hpp"
#include "common/byte_reader.hpp"
#include "common/check.hpp"
#include "common/device_trace.hpp"
#include "common/fresh_mode.hpp"
#include "common/op_log.hpp"

namespace {

using taintpool::Allocation;
using taintpool::AllocationId;
using taintpool::Binding;
using taintpool::ByteRange;
using taintpool::DeferredHostBackend;
using taintpool::Device;
using taintpool::Error;
using taintpool::ErrorKind;
using taintpool::FailureId;
using taintpool::KernelContext;
using taintpool::LaunchOutcome;
using taintpool::LaunchPlan;
using taintpool::LaunchResult;
using taintpool::LaunchStatus;
using taintpool::MemoryConfig;
using taintpool::Report;
using taintpool::to_string;
using taintpool::WrittenRange;
using taintpool::fuzz::ByteReader;
using taintpool::fuzz::Checker;
using taintpool::model::BodyKind;
using taintpool::model::BodyPlan;
using taintpool::model::DeviceModel;
using taintpool::model::ModelLaunch;
using taintpool::model::ModelRead;

constexpr std::size_t kSlots = 8;
/// Ops between whole-state comparisons and device.check_invariants() calls
/// (also at the end).
constexpr std::size_t kWholeEvery = 16;

constexpr std::array<const char*, 6> kKernels = {
    "fill", "matmul", "gelu", "softmax", "", "a_kernel_name_long_enough_for_the_heap"};
constexpr std::array<const char*, 4> kMessages = {
    "", "oom", "checked kernel found NaN",
    "a message long enough to live on the heap, past any small-string buffer"};
constexpr std::array<ErrorKind, 4> kErrorKinds = {ErrorKind::Launch, ErrorKind::OutOfMemory,
                                                  ErrorKind::Generic, ErrorKind::TornDown};
/// The plan's bytes (testing/planned_body.hpp): kinds below 112 succeed,
/// 112-127 succeed naming the only ranges they wrote (S6), then fail,
/// partial, throw (either exception), check, fail late; written ranges up
/// to three, untrusted (S2). wrote_only is here, not only in stream_fuzzer,
/// for its meeting with never-written bytes (N1 x S6: a named range that
/// ends at its output's end must release the claim there too), which no
/// other target reaches: a one-line slip there outlived every seed. Seeds
/// committed before it whose kind byte is 112-127 now decode as wrote_only
/// plans (reading their range bytes too); they still replay, as other inputs.
constexpr taintpool::testing::PlanDecoding kPlans{
    {128, 160, 192, 208, 224}, kErrorKinds, kMessages, 3, true, true, 112};

enum class Kind : std::uint8_t {
  create,
  create_bytes,
  copy,
  drop,
  launch,
  write,
  read,
  stale_reports,
  synchronize,
  sweep,
  cleanup,
};

/// The op of an op byte's low 4 bits, weighted towards launches.
constexpr std::array<Kind, 16> kOpTable = {
    Kind::create, Kind::create,        Kind::create_bytes, Kind::copy,   Kind::drop,  Kind::launch,
    Kind::launch, Kind::launch,        Kind::launch,       Kind::launch, Kind::write, Kind::read,
    Kind::read,   Kind::stale_reports, Kind::synchronize,  Kind::sweep,
};

/// The launch entry of kOpTable whose high bits 12..15 are plan ops.
constexpr unsigned kPlanOp = 9;
static_assert(kOpTable[kPlanOp] == Kind::launch);
/// LaunchPlans kept across ops (so drops under a plan and taint arriving
/// after it was made happen).
constexpr std::size_t kPlanSlots = 3;

std::string show_binding(const Binding& binding) {
  return "A" + std::to_string(binding.allocation.raw()) + to_string(binding.range);
}

std::string show_bindings(const std::vector<Binding>& bindings) {
  std::string out = "[";
  for (const Binding& binding : bindings) {
    out += (out.size() > 1 ? " " : "") + show_binding(binding);
  }
  return out + "]";
}

std::string show_written(const std::vector<WrittenRange>& written) {
  std::string out = "[";
  for (const WrittenRange& range : written) {
    out += (out.size() > 1 ? " " : "") + std::string("out") + std::to_string(range.output) +
           to_string(range.range);
  }
  return out + "]";
}

std::string show_plan(const BodyPlan& plan) {
  switch (plan.kind) {
  case BodyKind::succeed:
    return "succeed seed " + std::to_string(plan.seed);
  case BodyKind::fail:
    return "fail {" + to_string(plan.error) + "} written " + show_written(plan.written);
  case BodyKind::throws:
    return plan.std_exception ? "throw runtime_error(" + plan.what + ")" : "throw 42";
  case BodyKind::check:
    return "check";
  case BodyKind::fail_late:
    return "fail_later {" + to_string(plan.error) + "} written " + show_written(plan.written);
  case BodyKind::wrote_only:
    return "wrote_only " + show_written(plan.written);
  }
  return "?";
}

std::string show_status(LaunchStatus status) {
  switch (status) {
  case LaunchStatus::Ran:
    return "ran";
  case LaunchStatus::Failed:
    return "failed";
  case LaunchStatus::Skipped:
    return "skipped";
  }
  return "?";
}

std::string show_unwritten(const std::vector<taintpool::UnwrittenRead>& unwritten) {
  std::string out = "[";
  for (const taintpool::UnwrittenRead& read : unwritten) {
    out += " " + to_string(read.allocation) + " " + to_string(read.bytes);
  }
  return out + " ]";
}

std::string show_result(const LaunchResult& result) {
  return show_status(result.status) +
         " failure=" + (result.failure ? to_string(*result.failure) : std::string("none")) +
         " needed=" + (result.needed ? to_string(*result.needed) : std::string("none")) +
         " error=" + (result.error ? "{" + to_string(*result.error) + "}" : std::string("none")) +
         " unwritten=" + show_unwritten(result.unwritten);
}

std::string show_record(const taintpool::SkipRecord& record) {
  std::string out = "{" + record.kernel + (record.ran ? " ran" : " skipped") + " needed " +
                    to_string(record.needed) + " produced";
  for (const AllocationId id : record.produced) {
    out += " " + to_string(id);
  }
  return out + "}";
}

std::string show_report(const Report& report) {
  std::string out = "{" + to_string(report.failure) + " root {" + to_string(report.root) +
                    "} read " + to_string(report.read) + " stale " +
                    (report.stale ? to_string(*report.stale) : std::string("none")) + " path [";
  for (const auto& record : report.path) {
    out += show_record(record);
  }
  return out + "] origin " + to_string(report.origin) + " skips " +
         std::to_string(report.skips_recorded) +
         (report.path_may_be_incomplete ? " incomplete" : "") + "}";
}

std::string show_reports(const std::vector<Report>& reports) {
  std::string out;
  for (const Report& report : reports) {
    out += "\n    " + show_report(report);
  }
  return out.empty() ? " (none)" : out;
}

std::string show_kinds(const std::vector<ErrorKind>& kinds) {
  std::string out;
  for (const ErrorKind kind : kinds) {
    out += (out.empty() ? "" : " or ") + std::string(name(kind));
  }
  return out;
}

/// How a core call ended.
struct Ending {
  enum class How { returned, taintpool_exception, body_exception, other } how = How::returned;
  ErrorKind kind = ErrorKind::Generic; ///< taintpool_exception.
  /// The exception's message, in the harness's kept buffer (Kept::what):
  /// valid until the next call(). A copy per refusal was an allocation for
  /// every message past the small-string buffer (issue 13).
  std::string_view what;
  [[nodiscard]] std::string text() const { return std::string(what); }
};

/// Every input's pages (testing/recycling_storage.hpp): kept from one
/// input to the next, so no input maps, faults in or unmaps a page once the
/// first few have run. Only memory is reused, never state: each input
/// starts on a fresh (reset) Device and a fresh model.
taintpool::testing::RecyclingStorage& pages() {
  static taintpool::testing::RecyclingStorage storage(16);
  return storage;
}

/// Many slices per page: reuse, split, coalesce (testing/many_slices_config.hpp).
/// Built once for the process: each Device built copies it (for the backend
/// and the Device's options) rather than building it twice.
const MemoryConfig& config() {
  static const MemoryConfig built = taintpool::testing::many_slices_config();
  return built;
}

/// N1, N2: the input's mode (common/fresh_mode.hpp) on the pools above.
taintpool::DeviceOptions options(const taintpool::fuzz::FreshMode& mode) {
  taintpool::DeviceOptions options;
  options.memory = config();
  options.memory->fresh_bytes = mode.fresh;
  options.unwritten_reads = mode.reads;
  return options;
}

/// A Device and its backend, kept from one input to the next (issue 13):
/// each input ends with Device::reset(), which gives every page back (P1,
/// checked after every input) and leaves the Device observably a fresh one
/// (DeviceReset.* pins that), keeping only the capacity of its pools'
/// lanes, graph table, scratch and log. Built per input, they were 83 heap
/// allocations of an input's 100. The backend is kept with it (a Device
/// borrows its backend): reset() takes the late failures it still holds,
/// and each input sets its scheduling seed back to a fresh backend's, 0.
/// The Device is declared after its backend, so it goes first.
struct KeptDevice {
  explicit KeptDevice(const taintpool::fuzz::FreshMode& mode)
      : device(backend, options(mode)) {}
  DeferredHostBackend backend{pages(), config()};
  Device device;
};

/// Buffers the harness refills per op, kept from one input to the next
/// (issue 13): only their capacity carries over — every use empties or
/// refills its buffer first, and a harness empties the lists it reads when
/// it starts. A quiet run uses the process's one Kept; a describing re-run
/// (built inside a quiet run's failure, while that run's buffers are still
/// in use) its own.
struct Kept {
  std::vector<AllocationId> ids;
  std::vector<AllocationId> touched;
  std::vector<Binding> reads;     ///< launch()'s.
  std::vector<Binding> writes;    ///< launch()'s.
  std::vector<std::byte> written; ///< create()'s and host_write()'s bytes.
  std::vector<std::byte> read;    ///< read()'s buffer.
  std::vector<ErrorKind> errors;  ///< make_plan()'s expected binding errors.
  std::string what;               ///< The last call()'s exception message (Ending::what).
  /// The last input's model's lists (DeviceModel::Room): capacity only.
  DeviceModel::Room model_room;
  /// A Device per mode (common/fresh_mode.hpp), reset after each input
  /// (KeptDevice). All are built at the first input, in mode_index order,
  /// whatever its mode: each manager takes the lowest free id space when
  /// built, so the spaces (and every id and report text) do not depend on
  /// which modes ran before an input (fuzz.device_fuzzer.order pins that).
  std::array<std::unique_ptr<KeptDevice>, taintpool::fuzz::kFreshModes> devices;

  /// The mode's Device, fresh: built now, or reset at its last input's end.
  KeptDevice& device(const taintpool::fuzz::FreshMode& mode) {
    if (!devices[0]) {
      for (std::size_t index = 0; index < devices.size(); ++index) {
        devices[index] = std::make_unique<KeptDevice>(taintpool::fuzz::mode_at(index));
      }
    }
    KeptDevice& kept = *devices[taintpool::fuzz::mode_index(mode)];
    kept.backend.set_seed(0); // A fresh backend's: the same interleavings.
    return kept;
  }
  /// A Device of `mode` for one input alone (common/fresh_mode.hpp,
  /// runs_on_own_devices), built after the kept ones: it takes the first id
  /// space past theirs, whatever ran before.
  std::unique_ptr<KeptDevice> own_device(const taintpool::fuzz::FreshMode& mode) {
    static_cast<void>(device(mode)); // The kept ones first.
    return std::make_unique<KeptDevice>(mode);
  }
  /// Ends an input run on the mode's kept Device (see KeptDevice): resets it.
  void end(const taintpool::fuzz::FreshMode& mode) {
    if (const std::unique_ptr<KeptDevice>& kept = devices[taintpool::fuzz::mode_index(mode)]) {
      kept->device.reset();
    }
  }
};

Kept& kept_between_inputs() {
  static Kept kept;
  return kept;
}

class Harness {
 public:
  /// A run of `data` (its whole input, trailer included, so that a failure
  /// can run it again), quiet or describing every op (common/op_log.hpp).
  Harness(const std::uint8_t* data, std::size_t size,
          std::optional<std::filesystem::path> trace_path, taintpool::fuzz::FreshMode mode,
          bool describing)
      : data_(data)
      , size_(size)
      , trace_path_(std::move(trace_path))
      , trace_(trace_path_.has_value())
      , kept_(describing ? own_ : kept_between_inputs())
      // One input in eight runs on a Device of its own, destroyed with the
      // harness (common/fresh_mode.hpp); not a traced one, whose ids must
      // stay in the first spaces (tla_trace.hpp writes them as numbers).
      , own_device_(!describing && !trace_path_ && taintpool::fuzz::runs_on_own_devices(data, size)
                        ? kept_.own_device(mode)
                        : nullptr)
      , kept_device_(own_device_ ? *own_device_ : kept_.device(mode))
      , backend_(kept_device_.backend)
      , device_(kept_device_.device)
      // The last input's model's lists, emptied: only capacity carries over
      // (DeviceModelRoom.* pins that a model so made answers as a fresh one).
      , model_(false, std::move(kept_.model_room))
      , checker_("device_fuzzer")
      , ids_(kept_.ids)
      , ops_(describing)
      , touched_(kept_.touched)
      , launch_reads_(kept_.reads)
      , launch_writes_(kept_.writes)
      , mode_(mode) {
    ids_.clear();
    touched_.clear();
    checker_.set_context([this] { return context(); });
    model_.set_fresh_bytes(mode.fresh, mode.reads);
    // Ids name their manager's id space: a failure's describing re-run
    // builds a second Device while the first lives, in another space.
    model_.set_id_space(device_.memory().id_space());
  }

  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;
  Harness(Harness&&) = delete;
  Harness& operator=(Harness&&) = delete;
  /// The model's lists go to the next input's (a describing re-run's to
  /// its own Kept, which goes with it).
  ~Harness() { kept_.model_room = model_.take_room(); }

  void run() {
    ByteReader in(data_, mode_.size);
    while (!in.empty() && ops_.size() < 400 && !ids_diverged_) {
      step(in);
      if (ids_diverged_) {
        compare_up_to_ids();
      } else {
        // What the op touched after it; everything every kWholeEvery ops,
        // and after the ops that may change any allocation.
        const bool periodic = ++steps_ % kWholeEvery == 0;
        compare(whole_ || periodic ? nullptr : &touched_, periodic);
      }
    }
    finish();
  }

 private:
  /// A quiet run's context is a describing re-run of the same input, which
  /// fails at the same check and reports (common/op_log.hpp).
  std::string context() const {
    if (!ops_.describing()) {
      Harness again(data_, size_, std::nullopt, mode_, true);
      again.run();
      return taintpool::fuzz::rerun_did_not_fail();
    }
    std::string text = "mode " + mode_.name() + ", ops (" + std::to_string(ops_.size()) + "):\n";
    text += ops_.tail(60);
    text += "model:\n";
    for (const AllocationId id : model_.allocations()) {
      text += "  " + to_string(id) + " size " + std::to_string(model_.size(id)) +
              (model_.live(id) ? "" : " (dropped)") + " claims";
      for (const auto& [failure, range] : model_.claims(id)) {
        text += " " + to_string(failure) + to_string(range);
      }
      text += "\n";
    }
    for (const FailureId failure : model_.live_failures()) {
      text += "  " + to_string(failure) + " {" + to_string(*model_.error(failure)) + "} tags " +
              std::to_string(model_.tags(failure)) + "\n";
    }
    return text;
  }

  void fail(std::string_view rule, const std::string& what) const { checker_.fail(rule, what); }

  /// The observable state against the model: all of it, or (`touched`
  /// given) the ids held, the touched allocations and the whole graph
  /// (DeviceModel::mismatch_touched). With `invariants`,
  /// device.check_invariants() too — every kWholeEvery ops and at the end,
  /// not after every op: it walks every pool's bins and every graph node
  /// whatever the op touched. A difference in what an op touched is caught
  /// at that op; anywhere else, and a broken internal invariant, within
  /// kWholeEvery ops.
  void compare(const std::vector<AllocationId>* touched = nullptr, bool invariants = true) {
    if (auto difference = touched != nullptr ? model_.mismatch_touched(device_, *touched)
                                             : model_.mismatch(device_)) {
      fail("D1", *difference);
    }
    if (!invariants) {
      return;
    }
    try {
      device_.check_invariants();
    } catch (const std::exception& error) {
      fail("R1-R3/P1/P2/T5", std::string("check_invariants: ") + error.what());
    }
  }

  // ---- decoding

  std::size_t pick_slot(std::uint8_t bits) const { return bits % kSlots; }

  Binding decode_binding(ByteReader& in) {
    const std::uint8_t target = in.byte();
    std::optional<AllocationId> id;
    if (target < 224) {
      // A slot; an empty one falls to the next slot that holds a handle.
      for (std::size_t step = 0; step < kSlots && !id; ++step) {
        if (const Allocation& held = slots_[(target + step) % kSlots]) {
          id = held.id();
        }
      }
    }
    if (!id && target < 248 && !ids_.empty()) {
      id = ids_[in.below(ids_.size())]; // Maybe dropped: NotFound (P3).
    }
    if (!id) {
      // Never minted, in this Device's id space: a describing re-run's
      // Device (space 1) would otherwise see an id of another manager's
      // space (InvalidBinding, not the NotFound the quiet run saw).
      const std::uint64_t number = model_.holds_any() ? 100 + in.below(4) : 1 + in.below(4);
      id = taintpool::allocation_id(device_.memory().id_space(), number);
    }
    touched_.push_back(*id);
    const std::uint64_t size = model_.size(*id);
    const std::uint8_t shape = in.byte();
    const std::uint64_t a = in.byte();
    const std::uint64_t b = in.byte();
    if (shape < 64) {
      return Binding{*id, ByteRange::sized(0, size)};
    }
    if (shape < 240) {
      const std::uint64_t begin = a % (size + 1);
      return Binding{*id, ByteRange::sized(begin, b % (size - begin + 1))};
    }
    // P3: reaching 1..4 bytes past the end.
    const std::uint64_t end = size + 1 + (b % 4);
    return Binding{*id, ByteRange::of(std::min(a % (size + 1), end), end)};
  }

  // ---- ops

  void step(ByteReader& in) {
    touched_.clear();
    whole_ = false;
    const std::uint8_t op = in.byte();
    const Kind kind = kOpTable[op & 15u];
    const std::size_t slot = pick_slot(static_cast<std::uint8_t>(op >> 4));
    switch (kind) {
    case Kind::create:
    case Kind::create_bytes:
      create(in, slot, kind == Kind::create_bytes);
      break;
    case Kind::copy: {
      const std::size_t from = pick_slot(in.byte());
      ops_.add(
          [&] { return "copy slot " + std::to_string(from) + " -> slot " + std::to_string(slot); });
      if (slots_[from] && from != slot) {
        model_.copy_handle(slots_[from].id());
        drop(slot);
        slots_[slot] = slots_[from];
      }
      break;
    }
    case Kind::drop:
      ops_.add([&] { return "drop slot " + std::to_string(slot); });
      drop(slot);
      break;
    case Kind::launch:
      // One launch entry of five, with its (otherwise unused) high bits
      // 12..15, works a LaunchPlan instead: make, launch through (twice
      // the weight), or drop/copy/move one.
      if ((op & 15u) == kPlanOp && op >> 4 >= 12) {
        planned(in, static_cast<std::uint8_t>(op >> 4));
      } else {
        launch(in);
      }
      break;
    case Kind::write:
      host_write(in);
      break;
    case Kind::read:
    case Kind::stale_reports:
      // A read synchronizes first: late failures, when any are pending,
      // land anywhere.
      whole_ = model_.pending_late_failures() != 0;
      read(in, kind == Kind::read);
      break;
    case Kind::synchronize:
      ops_.add([&] {
        return op >> 4 == 0
                   ? std::string("synchronize")
                   : "synchronize, allocation " + std::to_string((op >> 4) - 1) + " failing";
      });
      // Late failures land anywhere; a retry after running out of memory
      // is compared whole in any case.
      whole_ = model_.pending_late_failures() != 0 || op >> 4 != 0;
      synchronize(static_cast<std::uint8_t>(op >> 4));
      break;
    case Kind::sweep:
    case Kind::cleanup:
      // A sweep synchronizes nothing: it ends dropped allocations (P1),
      // which the ids held, compared after every op, show.
      ops_.add((op & 0x80u) != 0 ? "cleanup" : "sweep");
      if ((op & 0x80u) != 0) {
        device_.cleanup();
      } else {
        device_.sweep();
      }
      model_.sweep();
      trace_.called(device_);
      break;
    }
  }

  void drop(std::size_t slot) {
    if (slots_[slot]) {
      model_.drop_handle(slots_[slot].id());
      slots_[slot].reset();
    }
  }

  void create(ByteReader& in, std::size_t slot, bool with_bytes) {
    const std::uint8_t byte = in.byte();
    const std::uint64_t size = byte < 192 ? byte % 65 : byte;
    const std::uint8_t seed = in.byte();
    drop(slot);
    if (with_bytes) {
      std::vector<std::byte>& bytes = kept_.written;
      bytes.resize(size);
      for (std::size_t at = 0; at < bytes.size(); ++at) {
        bytes[at] = static_cast<std::byte>(seed + at * 5);
      }
      ops_.add([&] {
        return "slot " + std::to_string(slot) + " = create_buffer(" + std::to_string(size) +
               " bytes from seed " + std::to_string(seed) + ")";
      });
      slots_[slot] = device_.create_buffer(bytes);
      const AllocationId expected = model_.create(bytes);
      check_id(slots_[slot].id(), expected);
    } else {
      ops_.add([&] {
        return "slot " + std::to_string(slot) + " = create_buffer(" + std::to_string(size) + ")";
      });
      slots_[slot] = device_.create_buffer(size);
      check_id(slots_[slot].id(), model_.create(size));
    }
    ids_.push_back(slots_[slot].id());
    touched_.push_back(slots_[slot].id());
    trace_.created(device_, slots_[slot].id(), with_bytes);
  }

  void check_id(AllocationId core, AllocationId model) const {
    if (core != model) {
      fail("P1", "create_buffer returned " + to_string(core) + ", the model " + to_string(model));
    }
  }

  template <class Call>
  Ending call(Call&& fn) {
    Ending ending;
    try {
      fn();
    } catch (const taintpool::Exception& error) {
      ending.how = Ending::How::taintpool_exception;
      ending.kind = error.kind();
      ending.what = kept_.what.assign(error.what());
    } catch (const std::runtime_error& error) {
      ending.how = Ending::How::body_exception;
      ending.what = kept_.what.assign(error.what());
    } catch (int) {
      ending.how = Ending::How::body_exception;
      ending.what = "42";
    } catch (const std::exception& error) {
      ending.how = Ending::How::other;
      ending.what = kept_.what.assign(error.what());
    }
    return ending;
  }

  // The checks below take the op's text as a callable, called only when a
  // check fails (common/op_log.hpp: no text on a passing run).

  template <class What>
  void expect_binding_error(const Ending& ending, const std::vector<ErrorKind>& kinds,
                            const What& what) const {
    if (ending.how != Ending::How::taintpool_exception ||
        std::find(kinds.begin(), kinds.end(), ending.kind) == kinds.end()) {
      fail("P3",
           what() + " must throw " + show_kinds(kinds) + " before anything is claimed; core " +
               (ending.how == Ending::How::returned ? "returned" : "threw: " + ending.text()));
    }
  }

  template <class What>
  void expect_returned(const Ending& ending, const What& what) const {
    if (ending.how != Ending::How::returned) {
      fail("P3/S3", what() + " must return; core threw: " + ending.text());
    }
  }

  template <class What>
  void compare_launch(const Ending& ending, const LaunchResult& core, const ModelLaunch& model,
                      const What& what) const {
    if (!model.binding_errors.empty()) {
      expect_binding_error(ending, model.binding_errors, what);
      return;
    }
    if (model.body_threw) {
      if (ending.how != Ending::How::body_exception) {
        fail("S3",
             what() + ": the body's exception must reach the caller; core " +
                 (ending.how == Ending::How::returned ? "returned" : "threw " + ending.text()));
      }
      return;
    }
    expect_returned(ending, what);
    if (!model.choice_acceptable) {
      std::string allowed;
      for (const auto& [root, needed] : model.acceptable_roots) {
        allowed += " (" + to_string(root) + ", " + to_string(needed) + ")";
      }
      fail("S1/T3", what() + ": core skipped with " + show_result(core) +
                        "; acceptable (root, needed):" + allowed);
    }
    const LaunchResult& expected = model.result;
    const bool same = core.status == expected.status && core.failure == expected.failure &&
                      core.needed == expected.needed && core.error == expected.error &&
                      core.unwritten == expected.unwritten; // N2
    if (!same) {
      fail("S1/S2/S4", what() + ": launch result\n  core:  " + show_result(core) +
                           "\n  model: " + show_result(expected));
    }
  }

  void launch(ByteReader& in) {
    // The name as a view and the binding lists in kept members: a copy of
    // the long name and two fresh lists cost up to seven allocations per
    // launch, about 7% of the run's allocations, each paying ASan's stack
    // trace (issue 13). Nothing checked reads them after the op: the lists
    // are cleared here, the model and core copy what they keep, and the
    // op's text is built before the next op (OpLog calls it at once).
    const std::string_view kernel = kKernels[in.byte() % kKernels.size()];
    decode_bindings(in, in.byte());
    launch_bindings(in, kernel, nullptr);
  }

  /// A launch's bindings: `counts` says how many reads and writes (0..3
  /// each) and whether a read is also written (in place); into
  /// launch_reads_ and launch_writes_.
  void decode_bindings(ByteReader& in, std::uint8_t counts) {
    std::vector<Binding>& reads = launch_reads_;
    std::vector<Binding>& writes = launch_writes_;
    reads.clear();
    writes.clear();
    for (unsigned at = 0; at < (counts & 3u); ++at) {
      reads.push_back(decode_binding(in));
    }
    for (unsigned at = 0; at < ((counts >> 2) & 3u); ++at) {
      writes.push_back(decode_binding(in));
    }
    if ((counts & 0x10u) != 0 && !reads.empty()) {
      writes.push_back(reads[in.below(reads.size())]); // In place: read-write (S5).
    }
  }

  /// Launches launch_reads_ and launch_writes_ with a body decoded from
  /// `in`: plainly, or (`through` given) through that plan, whose bindings
  /// they are. Either is compared with the model's launch of the same
  /// bindings, with the same checks: a plan resolves its bindings once, and
  /// must answer as a plain launch does (launch_plan.hpp).
  void launch_bindings(ByteReader& in, std::string_view kernel, const LaunchPlan* through) {
    const std::vector<Binding>& reads = launch_reads_;
    const std::vector<Binding>& writes = launch_writes_;
    const BodyPlan plan = taintpool::testing::decode_plan(in, writes, kPlans);
    const std::uint64_t number = model_.next_launch();
    const auto text = [&] {
      return "launch " + std::string(kernel) + (through != nullptr ? " through a plan" : "") +
             " reads " + show_bindings(reads) + " writes " + show_bindings(writes) + " body " +
             show_plan(plan) + " [launch #" + std::to_string(number) + "]";
    };
    ops_.add(text);

    std::optional<std::uint64_t> numbered; // The launch number the body saw.
    auto body = [&](const KernelContext& context) -> LaunchOutcome {
      numbered = context.launch();
      return taintpool::testing::run_planned_body(plan, context, backend_);
    };
    LaunchResult result;
    const Ending ending = call([&] {
      result = through != nullptr ? device_.launch(*through, kernel, body)
                                  : device_.launch(kernel, reads, writes, body);
    });
    std::optional<std::pair<FailureId, AllocationId>> choice;
    if (ending.how == Ending::How::returned && result.status == LaunchStatus::Skipped &&
        result.failure && result.needed) {
      choice.emplace(*result.failure, *result.needed);
    }
    ModelLaunch expected = model_.launch(kernel, reads, writes, plan, choice);
    compare_launch(ending, result, expected, text);
    model_.recycle(std::move(expected));
    trace_.launched(device_, reads, writes, traced(ending), result, plan.written,
                    plan.kind == BodyKind::check || plan.kind == BodyKind::fail_late,
                    plan.kind == BodyKind::wrote_only);
    if (numbered && *numbered != number) {
      // Late failures name launches by number: a launch refused for a bad
      // binding must not use one (P3), every other launch uses the next.
      fail("P3/S1", text() + ": the body saw launch number " + std::to_string(*numbered) +
                        ", the model " + std::to_string(number));
    }
  }

  // ---- launch plans (device/launch_plan.hpp)
  //
  // A plan holds one handle per binding, as an Allocation copy does: the
  // model is told so (copy_handle per binding when it is made or copied,
  // drop_handle when it goes), so an allocation whose slots are all
  // dropped lives on under a plan and ends (P1) when the plan goes. Taint
  // arriving after a plan was made, drops under it and a plan moved from
  // are what kPlanSlots plans kept across ops make happen.

  /// Op high bits 12..15 of the plan launch entry; a plan slot byte, then
  /// 12: make a plan (counts byte, bindings, as a launch); 13, 14: launch
  /// through one (kernel byte, body plan, as a launch); 15: drop, copy or
  /// move one (a byte: the other slot, and which).
  void planned(ByteReader& in, std::uint8_t high) {
    const std::size_t at = in.byte() % kPlanSlots;
    if (high == 12) {
      make_plan(in, at);
    } else if (high != 15) {
      launch_planned(in, at);
    } else {
      const std::uint8_t how = in.byte();
      const std::size_t to = how % kPlanSlots;
      const std::size_t what = (how / kPlanSlots) % 3;
      ops_.add([&] {
        return std::string(what == 0   ? "drop plan "
                           : what == 1 ? "copy plan "
                                       : "move plan ") +
               std::to_string(at) + (what == 0 ? "" : " -> plan " + std::to_string(to));
      });
      if (what == 0 || to == at) {
        drop_plan(at);
      } else if (what == 1) {
        drop_plan(to);
        plans_[to] = plans_[at];
        for_each_planned(plans_[to], [&](AllocationId id) { model_.copy_handle(id); });
      } else {
        drop_plan(to);
        plans_[to] = std::move(plans_[at]);
        // NOLINTNEXTLINE(bugprone-use-after-move): a moved-from plan binds nothing.
        if (plans_[at].valid() || !plans_[at].reads().empty() || !plans_[at].writes().empty()) {
          fail("P3", "a moved-from plan must bind nothing");
        }
      }
    }
  }

  template <class Each>
  static void for_each_planned(const LaunchPlan& plan, const Each& each) {
    for (const Binding& binding : plan.reads()) {
      each(binding.allocation);
    }
    for (const Binding& binding : plan.writes()) {
      each(binding.allocation);
    }
  }

  void drop_plan(std::size_t at) {
    for_each_planned(plans_[at], [&](AllocationId id) { model_.drop_handle(id); });
    plans_[at] = LaunchPlan();
  }

  /// Device::plan: sweeps, then checks every binding as a launch does
  /// (NotFound, InvalidBinding, nothing held, P3), takes no launch number.
  void make_plan(ByteReader& in, std::size_t at) {
    decode_bindings(in, in.byte());
    const std::vector<Binding>& reads = launch_reads_;
    const std::vector<Binding>& writes = launch_writes_;
    const auto text = [&] {
      return "plan " + std::to_string(at) + " = plan(reads " + show_bindings(reads) + " writes " +
             show_bindings(writes) + ")";
    };
    ops_.add(text);
    drop_plan(at);
    LaunchPlan made;
    const Ending ending = call([&] { made = device_.plan(reads, writes); });
    trace_.called(device_);
    model_.sweep();
    std::vector<ErrorKind>& errors = kept_.errors;
    errors.clear();
    for (const auto* set : {&reads, &writes}) {
      for (const Binding& binding : *set) {
        const std::optional<ErrorKind> kind =
            !model_.live(binding.allocation) ? std::optional(ErrorKind::NotFound)
            : binding.range.end() > model_.size(binding.allocation)
                ? std::optional(ErrorKind::InvalidBinding)
                : std::nullopt;
        if (kind && std::find(errors.begin(), errors.end(), *kind) == errors.end()) {
          errors.push_back(*kind);
        }
      }
    }
    if (!errors.empty()) {
      expect_binding_error(ending, errors, text);
      return;
    }
    expect_returned(ending, text);
    if (!made.valid() || made.stream() != device_.default_stream() ||
        !std::equal(reads.begin(), reads.end(), made.reads().begin(), made.reads().end()) ||
        !std::equal(writes.begin(), writes.end(), made.writes().begin(), made.writes().end())) {
      fail("P3", text() + ": the plan does not bind what it was given, on the default stream");
    }
    plans_[at] = std::move(made);
    for_each_planned(plans_[at], [&](AllocationId id) { model_.copy_handle(id); });
  }

  /// Device::launch(plan, ...): a plan that binds nothing (never made,
  /// dropped, moved from) is std::invalid_argument before anything happens
  /// (no launch number, no body); a made one launches its bindings.
  void launch_planned(ByteReader& in, std::size_t at) {
    const std::string_view kernel = kKernels[in.byte() % kKernels.size()];
    const LaunchPlan& plan = plans_[at];
    if (plan.valid()) {
      launch_reads_.assign(plan.reads().begin(), plan.reads().end());
      launch_writes_.assign(plan.writes().begin(), plan.writes().end());
      for_each_planned(plan, [&](AllocationId id) { touched_.push_back(id); });
      launch_bindings(in, kernel, &plan);
      return;
    }
    const auto text = [&] {
      return "launch " + std::string(kernel) + " through empty plan " + std::to_string(at);
    };
    ops_.add(text);
    bool ran = false;
    const Ending ending = call([&] {
      device_.launch(plan, kernel, [&](const KernelContext&) {
        ran = true;
        return LaunchOutcome::success();
      });
    });
    if (ran || ending.how != Ending::How::other) {
      fail("P3", text() + " must throw std::invalid_argument before anything runs; core " +
                     (ran                                   ? "ran the body"
                      : ending.how == Ending::How::returned ? "returned"
                                                            : "threw: " + ending.text()));
    }
  }

  void host_write(ByteReader& in) {
    const Binding into = decode_binding(in);
    const std::uint8_t seed = in.byte();
    const bool mismatch = in.byte() >= 240;
    std::vector<std::byte>& bytes = kept_.written;
    bytes.resize(into.range.size() + (mismatch ? 1 : 0));
    for (std::size_t at = 0; at < bytes.size(); ++at) {
      bytes[at] = static_cast<std::byte>(seed ^ (at * 3));
    }
    const std::uint64_t number = model_.next_launch();
    const auto text = [&] {
      return "host write " + show_binding(into) + " (" + std::to_string(bytes.size()) +
             " bytes, seed " + std::to_string(seed) + ") [launch #" + std::to_string(number) + "]";
    };
    ops_.add(text);
    LaunchResult result;
    const Ending ending = call([&] { result = device_.write(into, bytes); });
    ModelLaunch expected = model_.write(into, bytes);
    compare_launch(ending, result, expected, text);
    model_.recycle(std::move(expected));
    trace_.host_written(device_, into, traced(ending), result, mismatch);
  }

  void read(ByteReader& in, bool copy) {
    const Binding from = decode_binding(in);
    const bool wrong_size = copy && in.byte() >= 240;
    const std::uint64_t size = from.range.size() + (wrong_size ? 1 : 0);
    const auto text = [&] {
      return std::string(copy ? "read " : "stale_reports ") + show_binding(from) +
             (wrong_size ? " into a buffer one byte too big" : "");
    };
    ops_.add(text);
    // Zeroed, as a fresh vector was: a refused read leaves it as it was.
    std::vector<std::byte>& bytes = kept_.read;
    bytes.assign(size, std::byte{0});
    std::vector<Report> reports;
    const Ending ending = call([&] {
      if (copy) {
        reports = device_.read(from, bytes).reports;
      } else {
        reports = device_.stale_reports(from);
      }
    });
    trace_.read(device_, from, ending.how == Ending::How::returned, reports);
    ModelRead expected = copy ? model_.read(from, size) : model_.stale_reports(from);
    compare_read(ending, reports, bytes, expected, copy, text);
    model_.recycle(std::move(expected)); // Its lists' room serves the next read.
  }

  /// A read's or stale_reports' outcome against the model's verdict.
  template <class What>
  void compare_read(const Ending& ending, std::vector<Report>& reports,
                    const std::vector<std::byte>& bytes, const ModelRead& expected, bool copy,
                    const What& text) const {
    if (!expected.binding_errors.empty()) {
      expect_binding_error(ending, expected.binding_errors, text);
      return;
    }
    expect_returned(ending, text);
    std::sort(reports.begin(), reports.end(),
              [](const Report& a, const Report& b) { return a.failure < b.failure; });
    if (reports != expected.reports) {
      fail("D1/G8/G9", text() + ": reports\n  core:" + show_reports(reports) +
                           "\n  model:" + show_reports(expected.reports));
    }
    if (copy && reports.empty()) {
      for (std::size_t at = 0; at < expected.bytes.size(); ++at) {
        if (expected.bytes[at] && static_cast<std::uint8_t>(bytes[at]) != *expected.bytes[at]) {
          fail("D1", text() + ": byte " + std::to_string(at) + " read " +
                         std::to_string(static_cast<unsigned>(bytes[at])) + ", the model " +
                         std::to_string(*expected.bytes[at]));
        }
      }
    }
  }

  /// synchronize(), telling the model whether core discovered dropped
  /// handles on the way (it does when it had stale bytes to taint).
  void synchronize(std::uint8_t fault = 0) {
    const std::optional<AllocationId> dropped = model_.first_dropped();
    if (fault != 0) {
      taintpool::fuzz::arm_allocation_fault(fault - 1u);
      const Ending armed = call([&] { device_.synchronize(); });
      const bool fired = taintpool::fuzz::disarm_allocation_fault() < 0;
      if (armed.how != Ending::How::returned) {
        if (!fired || armed.how != Ending::How::other) {
          fail("D1", "synchronize threw without running out of memory: " + armed.text());
        }
        ops_.add(
            [&] { return "  (it ran out of memory: " + armed.text() + "; synchronize again)"; });
        try {
          device_.check_invariants();
        } catch (const std::logic_error& error) {
          fail("R1-R3", std::string("after an out-of-memory synchronize: ") + error.what());
        }
      }
    }
    const Ending ending = call([&] { device_.synchronize(); });
    expect_returned(ending, [] { return std::string("synchronize"); });
    trace_.called(device_);
    bool discovered = false;
    if (dropped) {
      discovered = true;
      device_.memory().for_each_allocation([&](const taintpool::AllocationInfo& info) {
        if (info.id == *dropped) {
          discovered = false;
        }
      });
    }
    model_.synchronize(discovered);
    if (fault != 0 && device_.graph().next_id() != model_.next_failure()) {
      // The attempt that ran out of memory had minted a failure already:
      // its id is spent (G1), so the retry's ids run one ahead of the
      // model's from there on. Compared up to a renaming of ids, then the
      // input ends (the model cannot be renumbered).
      ops_.add("  (the retry's failure ids differ from the model's: input ends)");
      ids_diverged_ = true;
    }
  }

  /// D1 and T1 up to a renaming of failure ids: every allocation core holds
  /// has the model's claims, range for range, and the ids pair one to one.
  void compare_up_to_ids() {
    std::map<std::uint64_t, std::uint64_t> core_to_model;
    std::map<std::uint64_t, std::uint64_t> model_to_core;
    const auto pair_ids = [&](FailureId core, FailureId model) {
      const auto to_model = core_to_model.emplace(core.raw(), model.raw()).first;
      const auto to_core = model_to_core.emplace(model.raw(), core.raw()).first;
      return to_model->second == model.raw() && to_core->second == core.raw();
    };
    device_.memory().for_each_allocation([&](const taintpool::AllocationInfo& info) {
      std::vector<std::pair<FailureId, ByteRange>> core;
      info.taint->for_each_claim(
          [&](FailureId failure, ByteRange range) { core.emplace_back(failure, range); });
      const std::vector<std::pair<FailureId, ByteRange>> model = model_.claims(info.id);
      bool same = core.size() == model.size();
      for (std::size_t at = 0; same && at < core.size(); ++at) {
        same = core[at].second == model[at].second && pair_ids(core[at].first, model[at].first);
      }
      if (!same) {
        fail("D1", to_string(info.id) + ": after an out-of-memory synchronize and its retry, " +
                       "the claims are not the model's up to a renaming of failure ids");
      }
    });
    try {
      device_.check_invariants();
    } catch (const std::exception& error) {
      fail("R1-R3/P1/P2/T5", std::string("check_invariants: ") + error.what());
    }
  }

  void finish() {
    if (ids_diverged_) {
      ops_.add("end of input: drop every handle, sweep (R4)");
      for (std::size_t at = 0; at < kPlanSlots; ++at) {
        drop_plan(at);
      }
      for (std::size_t slot = 0; slot < kSlots; ++slot) {
        drop(slot);
      }
      device_.sweep();
      if (!device_.graph().empty()) {
        fail("R4", "every handle dropped and swept, the graph still holds " +
                       std::to_string(device_.graph().size()) + " failures");
      }
      return;
    }
    ops_.add("end of input: synchronize, drop every handle and plan, sweep (R4)");
    synchronize();
    for (std::size_t at = 0; at < kPlanSlots; ++at) {
      drop_plan(at);
    }
    for (std::size_t slot = 0; slot < kSlots; ++slot) {
      drop(slot);
    }
    device_.sweep();
    model_.sweep();
    compare();
    if (!device_.graph().empty()) {
      fail("R4", "every handle dropped and swept, the graph still holds " +
                     std::to_string(device_.graph().size()) + " failures");
    }
    trace_.called(device_);
    if (trace_path_) {
      trace_.write(*trace_path_, {"Written by device_fuzzer: " + std::to_string(ops_.size()) +
                                  " ops, " + std::to_string(trace_.events()) + " events."});
    }
  }

  static taintpool::fuzz::tla::DeviceTrace::Ending traced(const Ending& ending) {
    using Traced = taintpool::fuzz::tla::DeviceTrace::Ending;
    return ending.how == Ending::How::body_exception        ? Traced::body_threw
           : ending.how == Ending::How::taintpool_exception ? Traced::refused
                                                            : Traced::returned;
  }

  const std::uint8_t* data_;
  std::size_t size_;
  std::optional<std::filesystem::path> trace_path_;
  taintpool::fuzz::tla::DeviceTrace trace_; ///< Records nothing unless tracing.
  Kept own_;   ///< A describing re-run's buffers (a quiet run's are shared).
  Kept& kept_; ///< The buffers this run uses (see Kept).
  /// This input's own Device, or null (see the constructor). Declared
  /// before every handle and plan, so destroyed after them: its destructor
  /// runs on the state the input left.
  std::unique_ptr<KeptDevice> own_device_;
  KeptDevice& kept_device_; ///< The Device this run uses (own_device_ or the mode's kept one).
  DeferredHostBackend& backend_;
  Device& device_;
  DeviceModel model_;
  Checker checker_;
  std::array<Allocation, kSlots> slots_;
  std::vector<AllocationId>& ids_;     ///< Every allocation ever made, dropped ones included.
  taintpool::fuzz::OpLog ops_;         ///< Text only in a describing re-run.
  std::size_t steps_ = 0;              ///< Ops run (ops_ counts notes too).
  std::vector<AllocationId>& touched_; ///< The allocations the current op named or made.
  bool whole_ = false;                 ///< The current op may have changed any allocation.
  /// launch()'s reads and writes, kept between launches and inputs (scratch only).
  std::vector<Binding>& launch_reads_;
  std::vector<Binding>& launch_writes_;
  /// Plans kept across ops; after device_, so they go first.
  std::array<taintpool::LaunchPlan, kPlanSlots> plans_;
  bool ids_diverged_ = false;       ///< See synchronize(): the rest of the input is not run.
  taintpool::fuzz::FreshMode mode_; ///< N1, N2: named in every failure's context.
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const taintpool::fuzz::FreshMode mode = taintpool::fuzz::fresh_mode(data, size);
  {
    // Scopes.tla has no NeverWritten node (proofs/ adds it): trace Trusted runs only.
    Harness harness(data, size,
                    mode.fresh == taintpool::FreshBytes::Trusted
                        ? taintpool::fuzz::tla::trace_path(data, size, "scopes_")
                        : std::nullopt,
                    mode, false);
    harness.run();
  }
  // Every handle and plan is gone with the harness, and with it an input's
  // own Device (one in eight, destroyed); the kept one is reset (already
  // fresh if unused). Either way every page the pools took is back (P1),
  // and the next input starts with none out (the storage reuses memory,
  // not state) on a fresh Device.
  kept_between_inputs().end(mode);
  if (pages().outstanding() != 0) {
    taintpool::fuzz::Checker("device_fuzzer")
        .fail("P1", "the Device was reset or rebuilt with " +
                        std::to_string(pages().outstanding()) +
                        " pages not given back to its storage");
  }
  return 0;
}
