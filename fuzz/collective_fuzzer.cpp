// collective_fuzzer: N ranks' Devices (2 to 4, in one process) joined by a
// LoopbackWorld, against the ranks model (model::RanksModel), side by side,
// compared after every operation on EVERY rank (C1-C6, D1, D2; DESIGN.md §4).
//
// Why it is shaped so: taint crossing ranks is where every rank's rules meet
// — the exchange's scope (S1, S6-like releases, G4, G7 `took_part`
// records), the summary at piece grain (C2), the agreement of all ranks on
// stale bytes (C3), the attribution (C4), and the two verdict paths (C5):
// the rank whose call completes a collective learns at once, the others at
// their next synchronize, through CollectiveBackend, as a late failure that
// reaches whatever ran on the fed bytes since — together with each rank's
// own late failures (DeferredHostBackend::fail_later) and the rule that a
// collective whose input awaits a verdict synchronizes first (C2). So the
// harness drives whole multi-rank dataflows, and compares each rank's
// whole observable state after each step.
//
// # What is checked
//
// After EVERY operation, for every rank it touched (and every 16 operations,
// for every rank, so nothing untouched may change): model.rank(r).mismatch(device) —
// every allocation's claims (D1) and every byte the model knows (after an
// op that landed no verdict on the rank — DeviceModel::verdicts_attributed
// did not move — the ids held and the allocations the op named or made,
// mismatch_touched: a collective's buffers, a launch's bindings; the others
// within 16 operations; after a sweep, or an op that landed a late verdict,
// which may rewrite any allocation, every one), so a collective that
// computed the wrong bytes is caught at once, and one that wrote outside
// its outputs within 16 operations), every live failure's error (the Remote message exactly: ranks
// cited, root texts, counts), tags (R1), skip records (G7, `took_part`
// included), the graph's size and next id (G1); check_invariants() in the
// every-rank sweep (every 16 operations, and at the end): it walks every
// pool and node of a rank whatever the op touched.
// Per operation: a launch's result as device_fuzzer checks it; a read's
// reports exactly and its bytes; a collective's result on every rank (the
// exchange ran; the stale bytes it knew at once; whether its verdict is
// late). At the end: every rank synchronized, every handle dropped, swept:
// every graph empty (R4).
//
// # How the input is decoded (fuzz/common/byte_reader.hpp)
//
//   first byte   ranks: 2 + byte % 3
//   then ops     one byte: low 4 bits the op, high 4 bits the rank (mod N)
//     create       size byte, seed byte; a slot (byte)
//     drop         a slot
//     launch       kernel, counts (reads 0..2, writes 0..2, in place), the
//                  bindings (a slot byte, a shape byte and two offsets: whole,
//                  or a range inside), the plan (as device_fuzzer's: succeed,
//                  fail, partial, throw, check, fail late)
//     write        a binding, a seed
//     read         a binding (read or stale_reports)
//     synchronize / sweep
//     collective   kind (all-reduce, all-gather, reduce-scatter, broadcast,
//                  send/recv), type (u8, i32) and op, count, root or pair,
//                  in-place flags, then per rank a slot and an offset for its
//                  buffers (a buffer too small is replaced by a fresh one of
//                  the size needed), then the call order (a permutation)
// Cost (issue 13): no op is described as text on a passing run — a failure
// runs the input again with descriptions on (common/op_log.hpp).
//
// The mode (issue 15, N1-N2; common/fresh_mode.hpp): an input that ends in
// the byte 0xD7 and a mode byte runs every rank in FreshBytes::NeverWritten
// (bit 0), under UnwrittenReads::Report when bit 1 is set, else Skip; the
// two bytes are cut off before decoding, so every older input runs trusted,
// as before. Under Report a collective lists the never-written bytes it sent
// in its CollectiveResult::launch.unwritten and carries them to no output
// (RanksModel counts them clean); under Skip they are stale like any other.
//
// Only valid bindings are made: a bad binding on one rank would leave the
// others waiting, which C6's unit tests cover.
#include <taintpool/collective/collectives.hpp>
#include <taintpool/collective/loopback.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/model/ranks_model.hpp>
#include <taintpool/testing/many_slices_config.hpp>
#include <taintpool/testing/planned_body.hpp>
#include <taintpool/testing/recycling_storage.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/byte_reader.hpp"
#include "common/check.hpp"
#include "common/fresh_mode.hpp"
#include "common/op_log.hpp"

namespace {

using namespace taintpool;
using taintpool::fuzz::ByteReader;
using taintpool::fuzz::Checker;
using taintpool::model::BodyKind;
using taintpool::model::BodyPlan;
using taintpool::model::ModelLaunch;
using taintpool::model::ModelRead;
using taintpool::model::RanksModel;

constexpr std::size_t kSlots = 6;
constexpr std::array<const char*, 4> kKernels = {"fill", "matmul", "gelu", "backward"};
constexpr std::array<const char*, 3> kMessages = {"", "oom",
                                                  "a message long enough to live on the heap"};
constexpr std::array<ErrorKind, 3> kErrorKinds = {ErrorKind::Launch, ErrorKind::OutOfMemory,
                                                  ErrorKind::Generic};
/// The plan's bytes (testing/planned_body.hpp): kinds below 112 succeed,
/// then fail, partial, throw (std::runtime_error("boom")), check, fail
/// late; written ranges up to two, inside their outputs.
constexpr taintpool::testing::PlanDecoding kPlans{
    {112, 160, 200, 212, 228}, kErrorKinds, kMessages, 2, false, false};
constexpr std::array<CollectiveKind, 5> kCollectives = {
    CollectiveKind::all_reduce, CollectiveKind::all_gather, CollectiveKind::reduce_scatter,
    CollectiveKind::broadcast, CollectiveKind::send};
constexpr std::array<ReduceOp, 4> kOps = {ReduceOp::sum, ReduceOp::max, ReduceOp::min,
                                          ReduceOp::prod};
constexpr std::array<const char*, 3> kNames = {"grads", "params",
                                               "a_name_long_enough_for_the_heap"};

/// The device fuzzer's pools (testing/many_slices_config.hpp).
MemoryConfig config() {
  return taintpool::testing::many_slices_config();
}

/// N1, N2: the input's mode (common/fresh_mode.hpp) on the pools above.
DeviceOptions options(const taintpool::fuzz::FreshMode& mode) {
  DeviceOptions options;
  options.memory = config();
  options.memory->fresh_bytes = mode.fresh;
  options.unwritten_reads = mode.reads;
  return options;
}

/// Every rank's pages, of every input (testing/recycling_storage.hpp): kept
/// from one input to the next, so no input maps, faults in or unmaps a page
/// once the first few have run. Only memory is reused, never state: each
/// input builds its world and models afresh, and runs on fresh (reset)
/// Devices (RankDevice).
taintpool::testing::RecyclingStorage& pages() {
  static taintpool::testing::RecyclingStorage storage(16);
  return storage;
}

/// A rank's Device on a CollectiveBackend around a DeferredHostBackend,
/// kept from one input to the next (issue 13): each input ends with
/// Device::reset(), which gives every page back (P1, checked after every
/// input) and leaves the Device observably a fresh one (DeviceReset.* pins
/// that), keeping the capacity of its pools' lanes, graph table, scratch,
/// log and exchange lists — built per input, they were about 400 of an
/// input's 546 heap allocations' owners. The backends go with it (a Device
/// borrows its backend): by the input's end every collective was
/// synchronized and its rank's Collectives forgotten, reset() takes what
/// late failures remain, and each input sets the scheduling seed back to a
/// fresh backend's, 0. Declared backends first, so the Device goes first.
struct RankDevice {
  explicit RankDevice(const taintpool::fuzz::FreshMode& mode)
      : device(adaptor, options(mode)) {}
  DeferredHostBackend backend{pages(), config()};
  CollectiveBackend adaptor{backend};
  Device device;
};

/// The quiet runs' rank Devices, per mode (common/fresh_mode.hpp) and rank
/// (2 to 4 ranks). All twelve are built at the first input, mode by mode in
/// mode_index order, rank by rank, whatever its mode and ranks: each manager
/// takes the lowest free id space when built, so every rank's space (and
/// every id and report text) does not depend on which inputs ran before (a
/// trusted input's rank r has space r, as before).
class KeptRanks {
 public:
  /// The Device of `rank` in `mode`, fresh: built now, or reset at the end
  /// of the last input that used it.
  RankDevice& at(const taintpool::fuzz::FreshMode& mode, int rank) {
    if (!devices_[0][0]) {
      for (std::size_t index = 0; index < devices_.size(); ++index) {
        for (std::unique_ptr<RankDevice>& kept : devices_[index]) {
          kept = std::make_unique<RankDevice>(taintpool::fuzz::mode_at(index));
        }
      }
    }
    RankDevice& kept = *slot(mode, rank);
    kept.backend.set_seed(0); // A fresh backend's: the same interleavings.
    return kept;
  }
  /// Ends an input of `ranks` ranks in `mode` run on kept Devices: every
  /// one of them reset (every handle and Collectives of the input gone
  /// first).
  void end(const taintpool::fuzz::FreshMode& mode, int ranks) {
    for (int rank = 0; rank < ranks; ++rank) {
      if (const std::unique_ptr<RankDevice>& kept = slot(mode, rank)) {
        kept->device.reset();
      }
    }
  }

 private:
  std::unique_ptr<RankDevice>& slot(const taintpool::fuzz::FreshMode& mode, int rank) {
    return devices_.at(taintpool::fuzz::mode_index(mode)).at(static_cast<std::size_t>(rank));
  }
  std::array<std::array<std::unique_ptr<RankDevice>, 4>, taintpool::fuzz::kFreshModes> devices_;
};

KeptRanks& kept_ranks() {
  static KeptRanks kept;
  return kept;
}

/// One rank of an input: its Device (the kept one of a quiet run; a
/// describing re-run, and one quiet input in eight, builds its own, `own`,
/// destroyed last: common/fresh_mode.hpp, runs_on_own_devices), its
/// Collectives and handles.
struct Rank {
  Rank(Communicator& communicator, const taintpool::fuzz::FreshMode& mode, RankDevice* kept)
      : own(kept != nullptr ? nullptr : std::make_unique<RankDevice>(mode))
      , parts(kept != nullptr ? *kept : *own)
      , backend(parts.backend)
      , device(parts.device)
      , collectives(device, communicator) {}
  std::unique_ptr<RankDevice> own;
  RankDevice& parts;
  DeferredHostBackend& backend;
  Device& device;
  Collectives collectives;
  std::array<Allocation, kSlots> slots;
};

/// An input's ranks (2 to 4), in place: a heap block per rank and the
/// list's own, per input, were some 5 of its allocations (issue 13,
/// forty-ninth round). Destroyed first to last, as the list destroyed them.
struct Ranks {
  std::array<std::optional<Rank>, 4> at;
  int size = 0;
  Ranks() = default;
  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;
  ~Ranks() {
    for (std::optional<Rank>& rank : at) {
      rank.reset();
    }
  }
};

std::string show_binding(const Binding& binding) {
  return "A" + std::to_string(binding.allocation.raw()) + to_string(binding.range);
}

std::string show_record(const SkipRecord& record) {
  std::string out = "{" + record.kernel +
                    (record.took_part ? " took part"
                     : record.ran     ? " ran"
                                      : " skipped") +
                    " needed " + to_string(record.needed) + " produced";
  for (const AllocationId id : record.produced) {
    out += " " + to_string(id);
  }
  return out + "}";
}

std::string show_reports(const std::vector<Report>& reports) {
  std::string out;
  for (const Report& report : reports) {
    out += "\n    {" + to_string(report.failure) + " root {" + to_string(report.root) + "} read " +
           to_string(report.read) + " stale " +
           (report.stale ? to_string(*report.stale) : std::string("none")) + " path [";
    for (const SkipRecord& record : report.path) {
      out += show_record(record);
    }
    out += "] origin " + to_string(report.origin) + " skips " +
           std::to_string(report.skips_recorded) + "}";
  }
  return out.empty() ? " (none)" : out;
}

/// Buffers the harness refills per op, kept from one input to the next
/// (issue 13): each held only what one op or collective put there, so only
/// their capacity carries over — every use empties or refills its buffer
/// first, and a harness empties the lists it reads when it starts. A quiet
/// run uses the process's one Kept; a describing re-run (built inside a
/// quiet run's failure, while that run's buffers are still in use) its own.
struct Kept {
  std::vector<AllocationId> named;
  std::vector<int> touched;
  std::vector<std::uint64_t> verdicts; ///< Per rank: verdicts_attributed() before the op.
  std::vector<Binding> reads;          ///< launch()'s.
  std::vector<Binding> writes;         ///< launch()'s.
  std::vector<std::byte> written;      ///< make()'s and host_write()'s bytes.
  std::vector<std::byte> read;         ///< read()'s buffer.
  RanksModel::Collective spec;         ///< collective()'s; every field set per call.
  std::vector<CollectiveResult> results;
  std::vector<RanksModel::Expected> expected;
  /// The last quiet run's RanksModel lists (RanksModel::take_room): each
  /// input's model starts with their capacity, never their contents.
  RanksModel::Room model_room;
};

Kept& kept_between_inputs() {
  static Kept kept;
  return kept;
}

class Harness {
 public:
  /// A run of `data` (kept, so that a failure can run it again), quiet or
  /// describing every op (common/op_log.hpp).
  Harness(const std::uint8_t* data, std::size_t length, bool describing)
      : data_(data)
      , size_(length)
      , mode_(taintpool::fuzz::fresh_mode(data, length))
      , world_(ranks(data, mode_.size))
      , model_(ranks(data, mode_.size),
               describing ? RanksModel::Room() : std::move(kept_between_inputs().model_room))
      , checker_("collective_fuzzer")
      , ops_(describing)
      , kept_(describing ? own_ : kept_between_inputs())
      , named_(kept_.named)
      , touched_(kept_.touched) {
    named_.clear();
    touched_.clear();
    // One quiet input in eight runs on Devices of its own, destroyed with
    // it (common/fresh_mode.hpp), built after every kept one, so in the id
    // spaces past theirs whatever ran before.
    const bool own = describing || taintpool::fuzz::runs_on_own_devices(data, length);
    if (own && !describing) {
      static_cast<void>(kept_ranks().at(mode_, 0)); // The kept ones first.
    }
    for (int rank = 0; rank < world_.size(); ++rank) {
      Rank& made = ranks_.at[static_cast<std::size_t>(rank)].emplace(
          world_.rank(rank), mode_, own ? nullptr : &kept_ranks().at(mode_, rank));
      ++ranks_.size;
      // Each rank's Device mints ids in a space of its own: so does its model.
      model_.rank(rank).set_id_space(made.device.memory().id_space());
      model_.rank(rank).set_fresh_bytes(mode_.fresh, mode_.reads);
    }
    checker_.set_context([this] { return context(); });
  }

  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;
  /// Empties the kept lists whose elements own heap memory — a collective's
  /// results and the model's expectations (their `unwritten` runs under
  /// Report, their errors) — so that what a run allocated is freed within
  /// it: a run that ends holding more than it started with looks to
  /// libFuzzer like a leak, and it runs the input again (and scans the heap
  /// if it still does). Kept through the end of the run, they made 203 of
  /// 1,500 executions from the committed corpus such re-runs (-seed=7;
  /// issue 13, fuzz/ROUNDS.md's thirty-second round). The lists' own
  /// capacity stays.
  ~Harness() {
    kept_.results.clear();
    kept_.expected.clear();
    // A describing re-run's room goes with its own Kept: the quiet run's
    // model, still alive, gives its room back when that run ends.
    kept_.model_room = model_.take_room();
  }

  void run() {
    ByteReader in(data_, mode_.size);
    in.byte(); // The ranks (ranks()).
    std::vector<std::uint64_t>& verdicts = kept_.verdicts;
    while (!in.empty() && ops_.size() < 200) {
      touched_.clear();
      named_.clear();
      whole_ = false;
      verdicts.clear();
      for (int rank = 0; rank < size(); ++rank) {
        verdicts.push_back(model_.rank(rank).verdicts_attributed());
      }
      const std::size_t before = ops_.size();
      step(in);
      if (ops_.size() == before) {
        // Nothing ran: every op is logged before it calls core or the
        // model, and the only unlogged steps are a read or host write that
        // found no live buffer to bind. The state is what the last
        // comparison saw; comparing it again (the every-rank sweep ran
        // after each such step while the count sat on a multiple of 16,
        // as it does from the start) found nothing new (issue 13).
        continue;
      }
      for (const int rank : touched_) {
        // A verdict that landed (a late failure at a synchronize: C5, S5)
        // may have rewritten any allocation of the rank; else the op
        // changed only what it named (issue 13: a read, synchronize or
        // collective compared every allocation of its ranks, though most
        // land none).
        const bool landed =
            model_.rank(rank).verdicts_attributed() != verdicts[static_cast<std::size_t>(rank)];
        compare(rank, false, whole_ || landed ? nullptr : &named_);
      }
      if (ops_.size() / 16 != before / 16) {
        // Every rank, now and then: nothing untouched may change. On
        // reaching or passing a multiple of 16 (a collective that makes
        // fresh buffers logs several ops at once, and may step over one).
        compare();
      }
    }
    finish();
  }

  /// The first byte: 2 to 4 ranks.
  static int ranks(const std::uint8_t* data, std::size_t length) {
    ByteReader in(data, length);
    return 2 + static_cast<int>(in.byte() % 3);
  }

 private:
  [[nodiscard]] int size() const { return ranks_.size; }
  Rank& at(int rank) { return *ranks_.at[static_cast<std::size_t>(rank)]; }

  /// A quiet run's context is a describing re-run of the same input, which
  /// fails at the same check and reports (common/op_log.hpp).
  std::string context() const {
    if (!ops_.describing()) {
      Harness again(data_, size_, true);
      again.run();
      return taintpool::fuzz::rerun_did_not_fail();
    }
    std::string text = "mode " + mode_.name() + ", ranks: " + std::to_string(ranks_.size) +
                       "\nops (" + std::to_string(ops_.size()) + "):\n";
    text += ops_.tail(60);
    for (int rank = 0; rank < ranks_.size; ++rank) {
      const auto& model = model_.rank(rank);
      text += "model of rank " + std::to_string(rank) + ":\n";
      for (const AllocationId id : model.allocations()) {
        text += "  " + to_string(id) + " size " + std::to_string(model.size(id)) + " claims";
        for (const auto& [failure, range] : model.claims(id)) {
          text += " " + to_string(failure) + to_string(range);
        }
        text += "\n";
      }
      for (const FailureId failure : model.live_failures()) {
        text += "  " + to_string(failure) + " {" + to_string(*model.error(failure)) + "}\n";
      }
    }
    return text;
  }

  void fail(std::string_view rule, const std::string& what) const { checker_.fail(rule, what); }

  /// One rank's whole observable state against its model; with
  /// `invariants`, its check_invariants() too — in the every-rank sweep
  /// every 16 ops and at the end, not after each op: it walks every pool
  /// and graph node of the rank whatever the op touched, and was most of
  /// the per-op cost. Every observable difference is still caught at the op
  /// that made it; a broken internal invariant within 16 ops.
  ///
  /// With `named`, only the ids held, those allocations and the whole graph
  /// (DeviceModel::mismatch_touched): after an op on one rank that named
  /// them; the every-rank sweep compares every allocation.
  void compare(int rank, bool invariants = true, const std::vector<AllocationId>* named = nullptr) {
    if (auto difference = named != nullptr
                              ? model_.rank(rank).mismatch_touched(at(rank).device, *named)
                              : model_.rank(rank).mismatch(at(rank).device)) {
      fail("D1/C3/C4", "rank " + std::to_string(rank) + ": " + *difference);
    }
    if (!invariants) {
      return;
    }
    try {
      at(rank).device.check_invariants();
    } catch (const std::exception& error) {
      fail("R1-R3/P1/P2/T5",
           "rank " + std::to_string(rank) + ": check_invariants: " + error.what());
    }
  }

  void compare() {
    for (int rank = 0; rank < size(); ++rank) {
      compare(rank);
    }
  }

  // ---- decoding

  /// A live allocation of `rank`, starting at slot `pick`; none if it has none.
  std::optional<std::size_t> live_slot(int rank, std::uint8_t pick) {
    for (std::size_t step = 0; step < kSlots; ++step) {
      const std::size_t slot = (pick + step) % kSlots;
      if (at(rank).slots[slot]) {
        return slot;
      }
    }
    return std::nullopt;
  }

  std::optional<Binding> decode_binding(int rank, ByteReader& in) {
    const std::optional<std::size_t> slot = live_slot(rank, in.byte());
    const std::uint8_t shape = in.byte();
    const std::uint64_t a = in.byte();
    const std::uint64_t b = in.byte();
    if (!slot) {
      return std::nullopt;
    }
    const Allocation& held = at(rank).slots[*slot];
    named_.push_back(held.id());
    const std::uint64_t size = held.size();
    if (shape < 96) {
      return held.whole();
    }
    const std::uint64_t begin = a % (size + 1);
    return Binding{held.id(), ByteRange::sized(begin, b % (size - begin + 1))};
  }

  // ---- ops

  void step(ByteReader& in) {
    const std::uint8_t op = in.byte();
    const int rank = (op >> 4) % size();
    touched_.push_back(rank);
    switch (op & 15u) {
    case 0:
    case 1:
      create(rank, in, (op & 1u) != 0);
      break;
    case 2: {
      const std::size_t slot = in.byte() % kSlots;
      ops_.add(
          [&] { return "rank " + std::to_string(rank) + ": drop slot " + std::to_string(slot); });
      drop(rank, slot);
      break;
    }
    case 3:
    case 4:
    case 5:
      launch(rank, in);
      break;
    case 6:
      host_write(rank, in);
      break;
    case 7:
    case 8:
      // A read synchronizes first: the verdicts it lands are counted (run()).
      read(rank, in, (op & 1u) != 0);
      break;
    case 9:
      ops_.add([&] { return "rank " + std::to_string(rank) + ": synchronize"; });
      synchronize(rank);
      break;
    case 10:
      ops_.add([&] { return "rank " + std::to_string(rank) + ": sweep"; });
      whole_ = true;
      at(rank).device.sweep();
      model_.rank(rank).sweep();
      break;
    default:
      touched_.clear();
      collective(in); // Touches its participants and names their buffers.
      break;
    }
  }

  void drop(int rank, std::size_t slot) {
    Allocation& held = at(rank).slots[slot];
    if (held) {
      model_.rank(rank).drop_handle(held.id());
      held.reset();
    }
  }

  void make(int rank, std::size_t slot, std::uint64_t size, std::optional<std::uint8_t> seed) {
    drop(rank, slot);
    Allocation& held = at(rank).slots[slot];
    AllocationId expected = AllocationId::from_raw(1);
    if (seed) {
      std::vector<std::byte>& bytes = kept_.written;
      bytes.resize(size);
      for (std::size_t index = 0; index < bytes.size(); ++index) {
        bytes[index] = static_cast<std::byte>(*seed + index * 7);
      }
      held = at(rank).device.create_buffer(bytes);
      expected = model_.rank(rank).create(bytes);
    } else {
      held = at(rank).device.create_buffer(size);
      expected = model_.rank(rank).create(size);
    }
    named_.push_back(held.id());
    if (held.id() != expected) {
      fail("P1", "rank " + std::to_string(rank) + ": create_buffer returned " +
                     to_string(held.id()) + ", the model " + to_string(expected));
    }
  }

  void create(int rank, ByteReader& in, bool with_bytes) {
    const std::uint8_t byte = in.byte();
    const std::uint64_t size = byte % 97;
    const std::uint8_t seed = in.byte();
    const std::size_t slot = in.byte() % kSlots;
    ops_.add([&] {
      return "rank " + std::to_string(rank) + ": slot " + std::to_string(slot) +
             " = create_buffer(" + std::to_string(size) +
             (with_bytes ? " bytes from seed " + std::to_string(seed) : std::string()) + ")";
    });
    make(rank, slot, size, with_bytes ? std::optional<std::uint8_t>(seed) : std::nullopt);
  }

  /// `what` names the op: a callable, called only when a check fails.
  template <class What>
  void compare_launch(bool threw, const LaunchResult& core, const ModelLaunch& model,
                      const What& what) const {
    if (model.body_threw != threw) {
      fail("S3",
           what() + (threw ? ": core threw, the model did not" : ": the body's throw was lost"));
    }
    if (threw) {
      return;
    }
    if (!model.choice_acceptable) {
      fail("S1/T3", what() + ": core skipped with a root the model does not allow");
    }
    if (core.status != model.result.status || core.failure != model.result.failure ||
        core.needed != model.result.needed || core.error != model.result.error ||
        core.unwritten != model.result.unwritten) { // N2: reads of never-written bytes, listed.
      fail("S1/S2/S4/N2", what() + ": the launch result differs from the model's");
    }
  }

  void launch(int rank, ByteReader& in) {
    const std::string kernel = kKernels[in.byte() % kKernels.size()];
    const std::uint8_t counts = in.byte();
    std::vector<Binding>& reads = kept_.reads;
    std::vector<Binding>& writes = kept_.writes;
    reads.clear();
    writes.clear();
    for (unsigned index = 0; index < (counts % 3u); ++index) {
      if (auto binding = decode_binding(rank, in)) {
        reads.push_back(*binding);
      }
    }
    for (unsigned index = 0; index < ((counts >> 2) % 3u); ++index) {
      if (auto binding = decode_binding(rank, in)) {
        writes.push_back(*binding);
      }
    }
    if ((counts & 0x10u) != 0 && !reads.empty()) {
      writes.push_back(reads.front()); // In place.
    }
    const BodyPlan plan = taintpool::testing::decode_plan(in, writes, kPlans);
    const std::uint64_t number = model_.rank(rank).next_launch();
    const auto text = [&] {
      std::string out = "rank " + std::to_string(rank) + ": launch " + kernel + " reads";
      for (const Binding& binding : reads) {
        out += " " + show_binding(binding);
      }
      out += " writes";
      for (const Binding& binding : writes) {
        out += " " + show_binding(binding);
      }
      return out + " plan " + std::to_string(static_cast<int>(plan.kind)) + " {" +
             to_string(plan.error) + "} [launch #" + std::to_string(number) + "]";
    };
    ops_.add(text);
    DeferredHostBackend& backend = at(rank).backend;
    auto body = [&](const KernelContext& context) -> LaunchOutcome {
      return taintpool::testing::run_planned_body(plan, context, backend);
    };
    LaunchResult result;
    bool threw = false;
    try {
      result = at(rank).device.launch(kernel, reads, writes, body);
    } catch (const std::runtime_error&) {
      threw = true;
    }
    std::optional<std::pair<FailureId, AllocationId>> choice;
    if (!threw && result.status == LaunchStatus::Skipped && result.failure && result.needed) {
      choice.emplace(*result.failure, *result.needed);
    }
    compare_launch(threw, result, model_.rank(rank).launch(kernel, reads, writes, plan, choice),
                   text);
  }

  void host_write(int rank, ByteReader& in) {
    const std::optional<Binding> into = decode_binding(rank, in);
    const std::uint8_t seed = in.byte();
    if (!into) {
      return;
    }
    std::vector<std::byte>& bytes = kept_.written;
    bytes.resize(into->range.size());
    for (std::size_t index = 0; index < bytes.size(); ++index) {
      bytes[index] = static_cast<std::byte>(seed ^ (index * 3));
    }
    const auto text = [&] {
      return "rank " + std::to_string(rank) + ": host write " + show_binding(*into) + " seed " +
             std::to_string(seed);
    };
    ops_.add(text);
    const LaunchResult result = at(rank).device.write(*into, bytes);
    compare_launch(false, result, model_.rank(rank).write(*into, bytes), text);
  }

  void read(int rank, ByteReader& in, bool copy) {
    const std::optional<Binding> from = decode_binding(rank, in);
    if (!from) {
      return;
    }
    const auto text = [&] {
      return "rank " + std::to_string(rank) + ": " + (copy ? "read " : "stale_reports ") +
             show_binding(*from);
    };
    ops_.add(text);
    // Zeroed, as a fresh vector was: the read overwrites it only on success.
    std::vector<std::byte>& bytes = kept_.read;
    bytes.assign(from->range.size(), std::byte{0});
    std::vector<Report> reports =
        copy ? at(rank).device.read(*from, bytes).reports : at(rank).device.stale_reports(*from);
    const ModelRead expected = copy ? model_.rank(rank).read(*from, from->range.size())
                                    : model_.rank(rank).stale_reports(*from);
    std::sort(reports.begin(), reports.end(),
              [](const Report& a, const Report& b) { return a.failure < b.failure; });
    if (reports != expected.reports) {
      fail("D1/G8/G9/C4", text() + ": reports\n  core:" + show_reports(reports) +
                              "\n  model:" + show_reports(expected.reports));
    }
    if (copy && reports.empty()) {
      for (std::size_t index = 0; index < expected.bytes.size(); ++index) {
        if (expected.bytes[index] &&
            static_cast<std::uint8_t>(bytes[index]) != *expected.bytes[index]) {
          fail("D1/C3", text() + ": byte " + std::to_string(index) + " read " +
                            std::to_string(static_cast<unsigned>(bytes[index])) + ", the model " +
                            std::to_string(*expected.bytes[index]));
        }
      }
    }
  }

  void synchronize(int rank) {
    const std::vector<AllocationId> dropped = model_.rank(rank).dropped();
    at(rank).device.synchronize();
    bool discovered = false;
    if (!dropped.empty()) {
      discovered = true;
      at(rank).device.memory().for_each_allocation([&](const AllocationInfo& info) {
        if (info.id == dropped.front()) {
          discovered = false;
        }
      });
    }
    model_.rank(rank).synchronize(discovered);
  }

  /// A binding of `bytes` bytes in `rank`'s slot `pick`, at an offset; a
  /// fresh buffer when that slot's is too small or empty.
  Binding buffer(int rank, std::uint8_t pick, std::uint8_t offset, std::uint64_t bytes) {
    const std::size_t slot = pick % kSlots;
    const Allocation& held = at(rank).slots[slot];
    if (!held || held.size() < bytes) {
      ops_.add([&] {
        return "rank " + std::to_string(rank) + ": slot " + std::to_string(slot) +
               " = create_buffer(" + std::to_string(bytes + offset % 8) + ") for the collective";
      });
      make(rank, slot, bytes + offset % 8, std::nullopt);
    }
    const Allocation& fresh = at(rank).slots[slot];
    return Binding{fresh.id(), ByteRange::sized(offset % (fresh.size() - bytes + 1), bytes)};
  }

  void collective(ByteReader& in) {
    const std::uint8_t kind_byte = in.byte();
    const CollectiveKind kind = kCollectives[kind_byte % kCollectives.size()];
    const DataType type = (kind_byte & 0x80u) != 0 ? DataType::i32 : DataType::u8;
    const ReduceOp op = kOps[(kind_byte >> 3) % kOps.size()];
    const std::uint64_t width = type == DataType::i32 ? 4 : 1;
    const std::uint64_t count = 1u + in.byte() % (type == DataType::i32 ? 24u : 80u);
    const std::uint8_t flags = in.byte();
    const bool in_place = (flags & 1u) != 0;
    const int root = static_cast<int>(in.byte()) % size();
    const auto ranks = static_cast<std::uint64_t>(size());
    RanksModel::Collective& spec = kept_.spec; // Every field set below.
    spec.name = kNames[(flags >> 1) % kNames.size()];
    spec.type = type;
    spec.op = op;
    spec.root = root;
    spec.count = count;
    spec.calls.clear();
    const std::uint64_t block = count * width;
    if (kind == CollectiveKind::send) {
      const int sender = root;
      const int receiver = (root + 1 + static_cast<int>(in.byte()) % (size() - 1)) % size();
      RanksModel::Call send{sender, CollectiveKind::send,
                            buffer(sender, in.byte(), in.byte(), block), std::nullopt};
      RanksModel::Call recv{receiver, CollectiveKind::recv, std::nullopt,
                            buffer(receiver, in.byte(), in.byte(), block)};
      if ((flags & 0x40u) != 0) {
        spec.calls.push_back(recv);
        spec.calls.push_back(send);
      } else {
        spec.calls.push_back(send);
        spec.calls.push_back(recv);
      }
    } else {
      for (int rank = 0; rank < size(); ++rank) {
        RanksModel::Call call;
        call.rank = rank;
        call.kind = kind;
        const std::uint8_t pick = in.byte();
        const std::uint8_t offset = in.byte();
        switch (kind) {
        case CollectiveKind::all_reduce:
          call.send = buffer(rank, pick, offset, block);
          call.recv = in_place ? *call.send : buffer(rank, pick + 1, in.byte(), block);
          break;
        case CollectiveKind::all_gather:
          call.send = buffer(rank, pick, offset, block);
          call.recv = buffer(rank, pick + 1, in.byte(), ranks * block);
          break;
        case CollectiveKind::reduce_scatter:
          call.send = buffer(rank, pick, offset, ranks * block);
          call.recv = buffer(rank, pick + 1, in.byte(), block);
          break;
        case CollectiveKind::broadcast:
          call.recv = buffer(rank, pick, offset, block);
          if (rank == root) {
            call.send = in_place ? *call.recv : buffer(rank, pick + 1, in.byte(), block);
          }
          break;
        default:
          break;
        }
        spec.calls.push_back(call);
      }
      // The call order: a permutation drawn from the input.
      for (std::size_t index = spec.calls.size(); index > 1; --index) {
        std::swap(spec.calls[index - 1], spec.calls[in.below(index)]);
      }
    }
    const auto text = [&] {
      std::string out = std::string(name(kind)) + "(" + spec.name + ") " + std::string(name(type)) +
                        " " + std::string(name(op)) + " x" + std::to_string(count) + " root " +
                        std::to_string(root) + ", calls:";
      for (const RanksModel::Call& call : spec.calls) {
        out += " [rank " + std::to_string(call.rank) + " " + std::string(name(call.kind)) +
               (call.send ? " send " + show_binding(*call.send) : std::string()) +
               (call.recv ? " recv " + show_binding(*call.recv) : std::string()) + "]";
      }
      return out;
    };
    ops_.add(text);

    // A pair's other half.
    const auto other = [&](const RanksModel::Call& call) {
      return spec.calls.front().rank == call.rank ? spec.calls.back().rank
                                                  : spec.calls.front().rank;
    };
    std::vector<CollectiveResult>& results = kept_.results;
    results.clear();
    for (const RanksModel::Call& call : spec.calls) {
      touched_.push_back(call.rank);
      // Each rank's ids are of its own space: one list serves every rank.
      for (const std::optional<Binding>* binding : {&call.send, &call.recv}) {
        if (*binding) {
          named_.push_back((*binding)->allocation);
        }
      }
      Collectives& collectives = at(call.rank).collectives;
      const StreamId stream = at(call.rank).device.default_stream();
      try {
        switch (call.kind) {
        case CollectiveKind::all_reduce:
          results.push_back(
              collectives.all_reduce(stream, spec.name, *call.send, *call.recv, type, op));
          break;
        case CollectiveKind::all_gather:
          results.push_back(
              collectives.all_gather(stream, spec.name, *call.send, *call.recv, type));
          break;
        case CollectiveKind::reduce_scatter:
          results.push_back(
              collectives.reduce_scatter(stream, spec.name, *call.send, *call.recv, type, op));
          break;
        case CollectiveKind::broadcast:
          results.push_back(collectives.broadcast(
              stream, spec.name, call.send ? *call.send : *call.recv, *call.recv, type, root));
          break;
        case CollectiveKind::send:
          results.push_back(collectives.send(stream, spec.name, *call.send, type, other(call)));
          break;
        case CollectiveKind::recv:
          results.push_back(collectives.recv(stream, spec.name, *call.recv, type, other(call)));
          break;
        }
      } catch (const std::exception& error) {
        fail("C1/C6", text() + ": rank " + std::to_string(call.rank) + " threw: " + error.what());
      }
    }
    std::vector<RanksModel::Expected>& expected = kept_.expected;
    model_.collective(spec, expected);
    for (std::size_t index = 0; index < results.size(); ++index) {
      const CollectiveResult& core = results[index];
      const RanksModel::Expected& model = expected[index];
      // N2: under Report, the never-written bytes the call sent are listed
      // (and carried to no output); under Skip they are stale as any other.
      if (core.launch.status != model.launch.result.status || core.launch.failure ||
          core.launch.unwritten != model.launch.result.unwritten ||
          core.stale_bytes != model.stale_bytes || core.verdict_pending != model.verdict_pending) {
        fail("C4/C5", text() + ": rank " + std::to_string(model.rank) + " returned status " +
                          std::to_string(static_cast<int>(core.launch.status)) + ", " +
                          std::to_string(core.launch.unwritten.size()) + " unwritten runs, " +
                          std::to_string(core.stale_bytes) + " stale bytes, verdict " +
                          (core.verdict_pending ? "pending" : "applied") + "; the model " +
                          std::to_string(model.launch.result.unwritten.size()) +
                          " unwritten runs, " + std::to_string(model.stale_bytes) +
                          " stale bytes, verdict " +
                          (model.verdict_pending ? "pending" : "applied"));
      }
    }
  }

  void finish() {
    ops_.add("end of input: synchronize every rank, drop every handle, sweep (R4)");
    for (int rank = 0; rank < size(); ++rank) {
      synchronize(rank);
      for (std::size_t slot = 0; slot < kSlots; ++slot) {
        drop(rank, slot);
      }
      at(rank).device.sweep();
      model_.rank(rank).sweep();
    }
    compare();
    for (int rank = 0; rank < size(); ++rank) {
      if (!at(rank).device.graph().empty()) {
        fail("R4", "rank " + std::to_string(rank) + ": every handle dropped and swept, the " +
                       "graph still holds " + std::to_string(at(rank).device.graph().size()) +
                       " failures");
      }
    }
  }

  const std::uint8_t* data_;
  std::size_t size_;
  taintpool::fuzz::FreshMode mode_; ///< N1, N2: named in every failure's context.
  LoopbackWorld world_;
  RanksModel model_;
  Ranks ranks_;
  Checker checker_;
  taintpool::fuzz::OpLog ops_;       ///< Text only in a describing re-run.
  Kept own_;                         ///< A describing re-run's buffers (a quiet run's are shared).
  Kept& kept_;                       ///< The buffers this run uses (see Kept).
  std::vector<AllocationId>& named_; ///< The allocations a one-rank op named or made.
  bool whole_ = false;               ///< The op may have changed any allocation of its ranks.
                                     ///< (a sweep); a landed verdict is counted apart (run()).
  std::vector<int>& touched_;        ///< The ranks the current op touched.
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  {
    Harness harness(data, size, false);
    harness.run();
  }
  // Every handle and Collectives is gone with the harness, and with it an
  // input's own Devices (one in eight, destroyed); the kept ones are reset
  // (already fresh if unused). Either way every page the pools took is back
  // (P1), and the next input starts with none out, on fresh Devices.
  kept_ranks().end(taintpool::fuzz::fresh_mode(data, size),
                   Harness::ranks(data, taintpool::fuzz::fresh_mode(data, size).size));
  if (pages().outstanding() != 0) {
    taintpool::fuzz::Checker("collective_fuzzer")
        .fail("P1", "the Devices were reset or rebuilt with " +
                        std::to_string(pages().outstanding()) +
                        " pages not given back to their storage");
  }
  return 0;
}
