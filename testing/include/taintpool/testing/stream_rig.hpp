// StreamRig: a Device with several streams on a watched DeferredHostBackend,
// and both oracles beside it, driven op by op — what stream_fuzzer and the
// RapidCheck stream test (tests/device/streams_model_stateful_test.cpp)
// share, so that both check the same things the same way.
//
// Why it is shaped so: a harness is a decoder (bytes, or RapidCheck's
// generators) in front of the same operations and checks. The rig owns the
// system — an ArenaStorage, the DeferredHostBackend behind ObservedBackend
// and StreamWatch (stream_check.hpp), the Device — and the oracles
// (model::DeviceModel, and StreamWatch's model::StreamModel), and each
// operation compares what it touched right away (the launch's result and
// failure ids, Race wording, the claims of the allocations it bound, the
// bytes of a read, the stream stats); after_op() compares everything every
// kFullEvery ops, with values when no work is queued. A failed check calls
// the harness's `fail` (the fuzzer aborts, RapidCheck throws); no text is
// built on the passing path.
//
// What each check means, in rule ids:
//   * O1: once its waits are queued a launch has no conflicting access on
//     another stream unordered before it; items run in an order the host's
//     program allows; ordering mode gives every byte of the sequential
//     program (the reference kernel, DeviceModel's values).
//   * O2: every wait needed, one per source stream per launch; the stats'
//     waits and events are those the queues saw.
//   * O3: memory handed out free of other streams' work the host does not
//     know complete, pages given back with nothing queued on them, pins
//     taken and let go as the model says (and so allocations end, P1, when
//     the model says).
//   * O4: detect mode queues no wait; a launch with unordered conflicts
//     fails with a Race, its suspect bytes claimed, its earlier readers'
//     outputs failed late; a byte without a failure holds the sequential
//     program's value; races counted iff found.
//   * S1-S6, D1, G1-G9, P1/P3, R1-R4 as DeviceModel states them.
#pragma once

#include <taintpool/device/device.hpp>
#include <taintpool/device/launch_plan.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/model/device_model.hpp>
#include <taintpool/model/stream_model.hpp>
#include <taintpool/testing/arena_storage.hpp>
#include <taintpool/testing/planned_body.hpp>
#include <taintpool/testing/stream_check.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace taintpool::testing {

class StreamRig {
  using BodyPlan = model::BodyPlan;
  using BodyKind = model::BodyKind;
  using LaunchContext = model::LaunchContext;
  using ModelLaunch = model::ModelLaunch;
  using ModelRead = model::ModelRead;
  using RaceFinding = model::RaceFinding;

  enum class Op : std::uint8_t {
    create,
    drop,
    launch,
    write,
    read,
    step,
    create_stream,
    destroy_stream,
    synchronize,
    sweep,
    launch_planned,
  };

  /// One op as decoded, kept for the failure report. Its bindings lie in
  /// logged_bindings_ (reads, then writes, from `first`): one list per rig
  /// rather than two vectors per launch, each of which cost ASan a stack
  /// trace (issue 13, twenty-seventh round).
  struct Logged {
    Op op;
    std::uint32_t stream = 0;
    std::uint64_t launch = 0;
    std::uint64_t value = 0; ///< A size, a slot, a step count, a body kind.
    std::uint32_t first = 0; ///< Its first binding in logged_bindings_.
    std::uint32_t reads = 0;
    std::uint32_t writes = 0;
  };

  /// How a core call ended.
  struct Ending {
    enum class How {
      returned,
      taintpool_exception,
      body_exception,
      invalid_argument,
      other
    } how = How::returned;
    ErrorKind kind = ErrorKind::Generic;
    std::string what;
  };

 public:
  /// Handle slots a harness fills and drops.
  static constexpr std::size_t kSlots = 6;
  /// Streams besides the default one live at once, at most.
  static constexpr std::size_t kMaxExtraStreams = 3;
  /// Ops between whole-state comparisons.
  static constexpr std::size_t kFullEvery = 8;
  /// Ops between check_invariants() calls (also at the end).
  static constexpr std::size_t kInvariantsEvery = 32;
  /// The arena's bytes: a few pages per lane, so OutOfMemory is reachable.
  static constexpr std::size_t kArenaBytes = 8192;

  /// How a failed check is reported; must not return (abort, or throw).
  using Fail = std::function<void(std::string_view rule, const std::string& what)>;

  /// A fresh system in ordering or detect mode, its scheduler seeded.
  ///
  /// Its lists start with the capacity the thread's last rig left (Room):
  /// a rig is made per fuzz input, and its lists, the watch's, the stream
  /// model's and the arena's free list, grown from empty, were about a
  /// quarter of an input's allocations (issue 13, forty-fifth round).
  /// Capacity only, never state: every list is emptied before use, so the
  /// rig starts exactly as the first one did (StreamRigRoom.* pin it).
  StreamRig(bool detect, std::uint64_t seed, Fail fail)
      : StreamRig(detect, seed, std::move(fail), std::exchange(kept_room(), Room{})) {}
  StreamRig(const StreamRig&) = delete;
  StreamRig& operator=(const StreamRig&) = delete;
  StreamRig(StreamRig&&) = delete;
  StreamRig& operator=(StreamRig&&) = delete;

  /// Members go in the order they always went — the slots' handles, then
  /// the Device (whose pages going back run what is still queued, into
  /// the watch and digests_) — made explicit here so that the lists, still
  /// whole, can then be left to the thread's next rig.
  ~StreamRig() {
    for (auto slot = slots_.rbegin(); slot != slots_.rend(); ++slot) {
      slot->reset();
    }
    device_.reset();
    Room& kept = kept_room();
    kept.watch = watch_.take_room();
    kept.free_list = storage_.take_free_list();
    kept.digests = std::move(digests_);
    kept.works = std::move(works_);
    kept.inputs = std::move(inputs_);
    kept.pieces = std::move(pieces_);
    kept.item_touches = std::move(item_touches_);
    kept.ids = std::move(ids_);
    kept.live_streams = std::move(live_streams_);
    kept.destroyed = std::move(destroyed_);
    kept.log = std::move(log_);
    kept.logged_bindings = std::move(logged_bindings_);
    kept.pins = std::move(pins_);
    kept.races = std::move(races_);
  }

  /// The pool ladder: one sliced pool of small pages carved finely, and the
  /// arena above 64 bytes growing by small pages of exactly what it needs,
  /// so the fixed block runs out soon and the out-of-memory path gives free
  /// memory back to storage, where another lane takes it (O3). One sliced
  /// pool, not more: every lane builds the whole ladder, and each pool's
  /// size bins are most of what a fresh Device costs.
  static MemoryConfig config() {
    MemoryConfig config;
    config.alignment = 16;
    config.sliced = {{256, 64}};
    config.max_allocation = 1024;
    config.arena_growth_divisor = 0;
    config.arena_min_growth = 256;
    return config;
  }

  // ------------------------------------------------------------ for decoders

  [[nodiscard]] bool detect() const noexcept { return detect_; }
  [[nodiscard]] const model::DeviceModel& model() const noexcept { return model_; }
  [[nodiscard]] std::size_t ops() const noexcept { return log_.size(); }
  [[nodiscard]] const std::vector<StreamId>& live_streams() const noexcept { return live_streams_; }
  [[nodiscard]] const Allocation& slot(std::size_t index) const { return slots_.at(index); }
  /// The system (its stats and graph are non-const calls) and the
  /// ordering oracle, to read: tests compare rigs by them.
  [[nodiscard]] Device& device() noexcept { return *device_; }
  [[nodiscard]] const model::StreamModel& streams() const noexcept { return watch_.model(); }
  /// Every allocation made so far, dropped ones included.
  [[nodiscard]] const std::vector<AllocationId>& made() const noexcept { return ids_; }

  /// A live stream by `pick`; from 250 up, a destroyed one or one naming no
  /// device (NotFound, P3).
  [[nodiscard]] StreamId stream(std::uint8_t pick) const {
    if (pick >= 250) {
      if (pick == 255 || destroyed_.empty()) {
        return StreamId{};
      }
      return destroyed_[pick % destroyed_.size()];
    }
    return live_streams_[pick % live_streams_.size()];
  }

  /// The scheduler runs up to `steps` queued items.
  void step(std::uint64_t steps) {
    log(Logged{Op::step, 0, 0, steps});
    for (std::uint64_t at = 0; at < steps && watch_.step(); ++at) {
    }
  }

  /// sweep(), or cleanup() (pages go back to storage).
  void sweep(bool cleanup) {
    log(Logged{Op::sweep, 0, 0, cleanup ? 1u : 0u});
    if (cleanup) {
      device_->cleanup();
    } else {
      device_->sweep();
    }
    drain_pins();
    model_.sweep();
  }

  /// After every op: what the watch found, the stats, ids; everything every
  /// kFullEvery ops.
  void after_op() {
    verdicts();
    if (log_.size() % kFullEvery == 0) {
      full_check();
    }
  }

  /// The ops so far and the model's state, for a failure report.
  [[nodiscard]] std::string context() const;

  /// Drops a slot's handle.
  void drop(std::size_t slot) {
    if (slots_[slot]) {
      model_.drop_handle(slots_[slot].id());
      slots_[slot].reset();
    }
  }

  /// create_stream(), while fewer than kMaxExtraStreams were made.
  void create_stream() {
    log(Logged{Op::create_stream, 0, 0, 0});
    if (live_streams_.size() > kMaxExtraStreams) {
      return;
    }
    StreamId made;
    const Ending ending = call([&] { made = device_->create_stream(); });
    expect(ending.how == Ending::How::returned, "O1",
           [&] { return "create_stream threw: " + ending.what; });
    log_.back().stream = made.number();
    watch_.stream_created(made.number());
    live_streams_.push_back(made);
    drain_pins();
  }

  /// destroy_stream of a live stream by `pick` (0 picks the default: refused).
  void destroy_stream(std::uint8_t pick) {
    const StreamId stream = live_streams_[pick % live_streams_.size()];
    log(Logged{Op::destroy_stream, stream.number(), 0, 0});
    const Ending ending = call([&] { device_->destroy_stream(stream); });
    if (stream.is_default()) {
      expect(ending.how == Ending::How::invalid_argument, "P3",
             [&] { return "destroying the default stream must be refused: " + ending.what; });
      return;
    }
    expect(ending.how == Ending::How::returned, "O1",
           [&] { return "destroy_stream threw: " + ending.what; });
    watch_.stream_destroyed(stream.number());
    live_streams_.erase(std::find(live_streams_.begin(), live_streams_.end(), stream));
    destroyed_.push_back(stream);
    drain_pins();
  }

  /// create_buffer(size, stream) into a slot (its old handle dropped).
  void create(std::size_t slot, std::uint64_t size, StreamId stream) {
    log(Logged{Op::create, stream.number(), 0, size});
    drop(slot);
    Allocation made;
    const std::uint64_t finishes = watch_.finishes();
    const Ending ending = call([&] { made = device_->create_buffer(size, stream); });
    if (watch_.finishes() != finishes) {
      // The last step before OutOfMemory finished every stream (O3).
      watch_.synchronized();
    }
    if (!live(stream)) {
      expect_not_found(ending, "create_buffer");
      return;
    }
    drain_pins(); // Before the model's discovery: the Device polled first (O3).
    if (ending.how == Ending::How::taintpool_exception && ending.kind == ErrorKind::OutOfMemory) {
      // The arena is full even after the last step (every stream finished,
      // held allocations let go, P1 discovery): nothing was made.
      model_.sweep();
      return;
    }
    expect(ending.how == Ending::How::returned, "P3",
           [&] { return "create_buffer threw: " + ending.what; });
    const AllocationId expected = model_.create(size);
    expect(made.id() == expected, "P1", [&] {
      return "create_buffer returned " + to_string(made.id()) + ", the model " +
             to_string(expected);
    });
    const taintpool::BoundBytes bytes = device_->memory().resolve_swept(made.whole());
    expect(bytes.lane == watch_.model().lane(stream.number()), "O3", [&] {
      return to_string(made.id()) + " is in lane " + std::to_string(bytes.lane) +
             ", its stream's lane is " + std::to_string(watch_.model().lane(stream.number()));
    });
    watch_.allocated(made.id(), bytes.data, size, stream.number());
    slots_[slot] = std::move(made);
    ids_.push_back(slots_[slot].id());
  }

  /// launch(stream, kernel, reads, writes) with a body doing `plan`, its
  /// device work queued as items (enqueue_work). With `through_plan`, the
  /// same launch made as Device::plan(stream, reads, writes) and one
  /// launch through it, the plan let go at once: its handles come and go
  /// within the op, so every answer, wait, pin and race must be the plain
  /// launch's (launch_plan.hpp: "from there the launch is the plain launch").
  void launch(const std::string& kernel, StreamId stream, const std::vector<Binding>& reads,
              const std::vector<Binding>& writes, const BodyPlan& plan, bool through_plan = false) {
    log(Logged{through_plan ? Op::launch_planned : Op::launch, stream.number(),
               model_.next_launch(), static_cast<std::uint64_t>(plan.kind)},
        reads, writes);
    const bool ok = live(stream) && valid(reads, writes);
    std::vector<RaceFinding>& races = races_;
    races.clear();
    if (ok) {
      watch_.begin_launch(stream.number(), model_.next_launch(), reads, writes, races);
    }
    const std::uint64_t counted = detect_ ? device_->stream_stats().races_detected : 0;

    std::optional<std::uint64_t> numbered;
    auto body = [&](const KernelContext& context) -> LaunchOutcome {
      numbered = context.launch();
      enqueue_work(context, plan);
      switch (plan.kind) {
      case BodyKind::succeed:
        return LaunchOutcome::success();
      case BodyKind::fail:
        return plan.written.empty() ? LaunchOutcome::failure(plan.error)
                                    : LaunchOutcome::partial(plan.error, plan.written);
      case BodyKind::throws:
        throw std::runtime_error(plan.what);
      case BodyKind::wrote_only:
        return LaunchOutcome::wrote_only(plan.written);
      case BodyKind::check:
        queues_.check(context);
        return LaunchOutcome::success();
      case BodyKind::fail_late:
        queues_.fail_later(context, plan.error, plan.written);
        return LaunchOutcome::success();
      }
      return LaunchOutcome::success();
    };
    LaunchResult result;
    const Ending ending = call([&] {
      if (through_plan) {
        const LaunchPlan made = device_->plan(stream, reads, writes);
        result = device_->launch(made, kernel, body);
      } else {
        result = device_->launch(stream, kernel, reads, writes, body);
      }
    });
    if (!live(stream)) {
      expect_not_found(ending, "launch");
      expect(!numbered.has_value(), "P3", "a launch on a bad stream ran its body");
      return;
    }
    const std::uint64_t number = model_.next_launch();
    const ModelLaunch expected = model_.launch(
        kernel, reads, writes, plan, launch_context(stream.number(), races, result, ending));
    compare_launch(ending, result, expected, log_.back());
    expect(!numbered || *numbered == number, "P3/S1", [&] {
      return "the body saw launch number " + std::to_string(*numbered) + ", the model " +
             std::to_string(number);
    });
    if (ok) {
      after_launch(expected.result.status != LaunchStatus::Skipped, races, counted);
    }
    drain_pins();
    compare_bound(reads, writes);
  }

  /// write(stream, into, bytes): bytes from `seed`.
  void write(StreamId stream, const Binding& into, std::uint8_t seed) {
    std::vector<std::byte> bytes(static_cast<std::size_t>(into.range.size()));
    for (std::size_t at = 0; at < bytes.size(); ++at) {
      bytes[at] = static_cast<std::byte>(seed ^ (at * 3));
    }
    const std::span<const Binding> none;
    const std::span<const Binding> bound(&into, 1);
    log(Logged{Op::write, stream.number(), model_.next_launch(), seed}, none, bound);
    const bool ok = live(stream) && valid(none, bound);
    std::vector<RaceFinding>& races = races_;
    races.clear();
    if (ok) {
      watch_.begin_launch(stream.number(), model_.next_launch(), std::span<const Binding>(),
                          std::span<const Binding>(&into, 1), races);
    }
    const std::uint64_t counted = detect_ ? device_->stream_stats().races_detected : 0;
    LaunchResult result;
    const Ending ending = call([&] { result = device_->write(stream, into, bytes); });
    if (!live(stream)) {
      expect_not_found(ending, "write");
      return;
    }
    const ModelLaunch expected =
        model_.write(into, bytes, launch_context(stream.number(), races, result, ending));
    compare_launch(ending, result, expected, log_.back());
    if (ok) {
      after_launch(true, races, counted);
    }
    drain_pins(); // After the model's write: the Device let go after its sweep.
    compare_bound(none, bound);
  }

  /// read(stream, from) (flags bit 0 clear), or stale_reports(from); a
  /// read into a buffer one byte too big when flags >= 248.
  void read(StreamId stream, const Binding& from, std::uint8_t flags) {
    const bool copy = (flags & 1u) == 0;
    const bool wrong_size = copy && flags >= 248;
    log(Logged{Op::read, stream.number(), 0, flags}, std::span<const Binding>(&from, 1), {});
    std::vector<std::byte> bytes(static_cast<std::size_t>(from.range.size()) +
                                 (wrong_size ? 1 : 0));
    std::vector<Report> reports;
    const Ending ending = call([&] {
      reports = copy ? device_->read(stream, from, bytes).reports : device_->stale_reports(from);
    });
    if (copy && !live(stream)) {
      expect_not_found(ending, "read");
      return;
    }
    drain_pins(); // Every stream was finished first: pins went (O3).
    watch_.synchronized();
    const ModelRead expected = copy ? model_.read(from, bytes.size()) : model_.stale_reports(from);
    if (!expected.binding_errors.empty()) {
      expect(ending.how == Ending::How::taintpool_exception &&
                 std::find(expected.binding_errors.begin(), expected.binding_errors.end(),
                           ending.kind) != expected.binding_errors.end(),
             "P3", [&] { return show(log_.back()) + " must be refused: " + ending.what; });
      return;
    }
    expect(ending.how == Ending::How::returned, "P3",
           [&] { return show(log_.back()) + " threw: " + ending.what; });
    std::sort(reports.begin(), reports.end(),
              [](const Report& a, const Report& b) { return a.failure < b.failure; });
    expect(reports == expected.reports, "D1/G8/G9/O4", [&] {
      std::string text = show(log_.back()) + ": reports differ\n  core:";
      for (const Report& report : reports) {
        text += "\n    " + to_string(report);
      }
      text += "\n  model:";
      for (const Report& report : expected.reports) {
        text += "\n    " + to_string(report);
      }
      return text;
    });
    if (copy && reports.empty()) {
      for (std::size_t at = 0; at < expected.bytes.size(); ++at) {
        expect(!expected.bytes[at] || static_cast<std::uint8_t>(bytes[at]) == *expected.bytes[at],
               "D1/O1/O4", [&] {
                 return show(log_.back()) + ": byte " + std::to_string(at) + " read " +
                        std::to_string(static_cast<unsigned>(bytes[at])) +
                        ", the sequential program " + std::to_string(*expected.bytes[at]);
               });
      }
    }
  }

  /// synchronize(), telling the model whether core discovered dropped
  /// handles on the way (it does when it had stale bytes to taint).
  void synchronize() {
    const Ending ending = call([&] { device_->synchronize(); });
    expect(ending.how == Ending::How::returned, "D1",
           [&] { return "synchronize threw: " + ending.what; });
    drain_pins();
    watch_.synchronized();
    const std::vector<AllocationId> dropped = model_.dropped();
    bool discovered = false;
    if (!dropped.empty()) {
      discovered = true;
      device_->memory().for_each_allocation([&](const taintpool::AllocationInfo& info) {
        if (info.id == dropped.front()) {
          discovered = false;
        }
      });
    }
    model_.synchronize(discovered);
  }

  /// End of a sequence: synchronize, everything compared, every handle
  /// dropped, swept: the graph is empty (R4) and nothing pinned (O3).
  void finish() {
    log(Logged{Op::synchronize, 0, 0, 1});
    synchronize();
    verdicts();
    full_check(true);
    for (std::size_t slot = 0; slot < kSlots; ++slot) {
      drop(slot);
    }
    device_->sweep();
    model_.sweep();
    full_check();
    expect(device_->graph().empty(), "R4", [&] {
      return "every handle dropped and swept, the graph still holds " +
             std::to_string(device_->graph().size()) + " failures";
    });
    expect(device_->stream_stats().pins_held == 0, "O3",
           "after a synchronize, no allocation may stay pinned");
  }

 private:
  template <class Call>
  static Ending call(Call&& fn) {
    Ending ending;
    try {
      fn();
    } catch (const Exception& error) {
      ending.how = Ending::How::taintpool_exception;
      ending.kind = error.kind();
      ending.what = error.what();
    } catch (const std::invalid_argument& error) {
      ending.how = Ending::How::invalid_argument;
      ending.what = error.what();
    } catch (const std::runtime_error& error) {
      ending.how = Ending::How::body_exception;
      ending.what = error.what();
    } catch (const std::exception& error) {
      ending.how = Ending::How::other;
      ending.what = error.what();
    }
    return ending;
  }

  template <class What>
  void expect(bool ok, std::string_view rule, What&& what) const {
    if (!ok) [[unlikely]] {
      if constexpr (std::is_invocable_v<What>) {
        fail_(rule, std::string(what()) + "\n" + context());
      } else {
        fail_(rule, std::string(what) + "\n" + context());
      }
    }
  }

  [[nodiscard]] std::string show(const Logged& op) const;

  /// A queued item's work (enqueue_work).
  struct Work {
    std::size_t digest;
    std::size_t first;
    std::size_t count;
    std::uint8_t seed;
  };
  /// Output bytes a write item fills: its output's index and the
  /// position of its first byte there.
  struct Piece {
    std::span<std::byte> bytes;
    std::size_t output;
    std::uint64_t position;
  };

  /// The lists one rig leaves the thread's next (see the constructor).
  struct Room {
    StreamWatch::Room watch;
    ArenaStorage::FreeList free_list;
    std::vector<std::uint32_t> digests;
    std::vector<Work> works;
    std::vector<std::span<const std::byte>> inputs;
    std::vector<Piece> pieces;
    std::vector<ItemTouch> item_touches;
    std::vector<AllocationId> ids;
    std::vector<StreamId> live_streams;
    std::vector<StreamId> destroyed;
    std::vector<Logged> log;
    std::vector<Binding> logged_bindings;
    std::vector<AllocationId> pins;
    std::vector<RaceFinding> races;
  };
  static Room& kept_room() {
    static thread_local Room room;
    return room;
  }

  /// Every list from `room`, emptied, and reserved as a fresh rig's.
  StreamRig(bool detect, std::uint64_t seed, Fail fail, Room room)
      : digests_(model::emptied(room.digests))
      , works_(model::emptied(room.works))
      , inputs_(model::emptied(room.inputs))
      , pieces_(model::emptied(room.pieces))
      , item_touches_(model::emptied(room.item_touches))
      , storage_(arena(), 16, std::move(room.free_list))
      , queues_(storage_, config())
      , watch_(detect, std::move(room.watch))
      , backend_(queues_, watch_)
      , model_(detect)
      , fail_(std::move(fail))
      , detect_(detect)
      , ids_(model::emptied(room.ids))
      , live_streams_(model::emptied(room.live_streams))
      , destroyed_(model::emptied(room.destroyed))
      , log_(model::emptied(room.log))
      , logged_bindings_(model::emptied(room.logged_bindings))
      , pins_(model::emptied(room.pins))
      , races_(model::emptied(room.races)) {
    device_.emplace(backend_, DeviceOptions{std::nullopt, detect ? StreamOrdering::Detect
                                                                 : StreamOrdering::Wait});
    storage_.on_return(
        [this](const std::byte* base, std::uint64_t size) { watch_.page_returned(base, size); });
    queues_.set_seed(seed);
    live_streams_.push_back(device_->default_stream());
    log_.reserve(64);
    logged_bindings_.reserve(64);
    digests_.reserve(32);
  }

  /// Appends `op` to the log, its bindings to logged_bindings_.
  void log(Logged op, std::span<const Binding> reads = {}, std::span<const Binding> writes = {}) {
    op.first = static_cast<std::uint32_t>(logged_bindings_.size());
    op.reads = static_cast<std::uint32_t>(reads.size());
    op.writes = static_cast<std::uint32_t>(writes.size());
    logged_bindings_.insert(logged_bindings_.end(), reads.begin(), reads.end());
    logged_bindings_.insert(logged_bindings_.end(), writes.begin(), writes.end());
    log_.push_back(op);
  }

  bool live(StreamId stream) const {
    return std::find(live_streams_.begin(), live_streams_.end(), stream) != live_streams_.end();
  }

  void expect_not_found(const Ending& ending, const char* what) const {
    expect(ending.how == Ending::How::taintpool_exception && ending.kind == ErrorKind::NotFound,
           "P3", [&] {
             return std::string(what) +
                    " on a stream not live here must be NotFound: " + ending.what;
           });
  }

  /// Whether every binding resolves now (P3), as the model sees it.
  bool valid(std::span<const Binding> reads, std::span<const Binding> writes) const {
    for (const auto* set : {&reads, &writes}) {
      for (const Binding& binding : *set) {
        if (!model_.live(binding.allocation) ||
            binding.range.end() > model_.size(binding.allocation)) {
          return false;
        }
      }
    }
    return true;
  }

  LaunchContext launch_context(std::uint32_t stream, const std::vector<RaceFinding>& races,
                               const LaunchResult& result, const Ending& ending) {
    LaunchContext context;
    if (ending.how == Ending::How::returned && result.status == LaunchStatus::Skipped &&
        result.failure && result.needed) {
      context.core_choice.emplace(*result.failure, *result.needed);
    }
    context.stream = stream;
    if (detect_) {
      context.races = races;
    }
    if (ending.how == Ending::How::returned) {
      context.core_error = result.error ? &*result.error : nullptr;
    }
    context.core_failure_error = [this](FailureId id) { return device_->graph().error(id); };
    return context;
  }

  void compare_launch(const Ending& ending, const LaunchResult& core, const ModelLaunch& model,
                      const Logged& op) const {
    if (!model.binding_errors.empty()) {
      expect(ending.how == Ending::How::taintpool_exception &&
                 std::find(model.binding_errors.begin(), model.binding_errors.end(), ending.kind) !=
                     model.binding_errors.end(),
             "P3", [&] { return show(op) + " must be refused: " + ending.what; });
      return;
    }
    if (model.body_threw) {
      expect(ending.how == Ending::How::body_exception, "S3",
             [&] { return show(op) + ": the body's exception must reach the caller"; });
      return;
    }
    expect(ending.how == Ending::How::returned, "P3/S3",
           [&] { return show(op) + " threw: " + ending.what; });
    expect(model.choice_acceptable, "S1/T3",
           [&] { return show(op) + ": core's skip root is not one S1 allows"; });
    expect(model.race_wording.empty(), "O4", [&] {
      return show(op) + ": " + (model.race_wording.empty() ? "" : model.race_wording.front());
    });
    const LaunchResult& expected = model.result;
    expect(core.status == expected.status && core.failure == expected.failure &&
               core.needed == expected.needed && core.error == expected.error,
           "S1/S2/S4/S6/O4", [&] {
             auto text = [](const LaunchResult& result) {
               return std::to_string(static_cast<int>(result.status)) + " failure " +
                      (result.failure ? to_string(*result.failure) : "none") + " needed " +
                      (result.needed ? to_string(*result.needed) : "none") + " error " +
                      (result.error ? to_string(*result.error) : "none");
             };
             return show(op) + ": launch result\n  core:  " + text(core) +
                    "\n  model: " + text(expected);
           });
  }

  /// After a launch or host write: the races core counted (O4), and what
  /// the stream model needs to know.
  void after_launch(bool queued, const std::vector<RaceFinding>& races, std::uint64_t counted) {
    watch_.end_launch(queued);
    if (detect_ && queued) {
      const std::uint64_t now = device_->stream_stats().races_detected;
      expect((now != counted) == !races.empty(), "O4", [&] {
        return "core counted " + std::to_string(now - counted) + " races, the model found " +
               std::to_string(races.size());
      });
    }
  }

  /// What a body queues: one item reading its inputs into a digest, one
  /// writing its outputs (for S6 only the ranges it names), so another
  /// stream's work can land in between.
  ///
  /// Each item is {rig, index of its Work}: small enough for a
  /// std::function to hold in place, with its inputs' or outputs' bytes in
  /// lists of the rig's (kept with their capacity, Room) — each item was
  /// three allocations, a list of spans or pieces, its touches and its
  /// closure (issue 13, forty-fifth round). The items read and write the
  /// same bytes in the same order.
  void enqueue_work(const KernelContext& context, const BodyPlan& plan) {
    // The digest the read item leaves for the write item: a slot of the
    // rig's, which outlives every item (see digests_), not a shared_ptr —
    // one allocation per body less (issue 13, twenty-seventh round).
    const std::size_t digest = digests_.size();
    digests_.push_back(plan.seed);
    std::vector<ItemTouch>& touches = item_touches_;
    if (context.reads() != 0) {
      touches.clear();
      const std::size_t first = inputs_.size();
      for (std::size_t index = 0; index < context.reads(); ++index) {
        const std::span<const std::byte> bytes = context.read(index);
        inputs_.push_back(bytes);
        touches.push_back(ItemTouch{bytes.data(), bytes.data() + bytes.size(), false,
                                    context.read_binding(index).allocation});
      }
      works_.push_back(Work{digest, first, inputs_.size() - first, plan.seed});
      watch_.enqueue(context, touches, [this, work = works_.size() - 1] { read_inputs(work); });
    }
    if (context.writes() == 0) {
      return;
    }
    const std::size_t first = pieces_.size();
    if (plan.kind == BodyKind::wrote_only) {
      for (const WrittenRange& written : plan.written) {
        if (const std::optional<std::span<std::byte>> bytes = named_bytes(context, written)) {
          pieces_.push_back(Piece{*bytes, written.output, written.range.begin()});
        }
      }
    } else {
      for (std::size_t index = 0; index < context.writes(); ++index) {
        pieces_.push_back(Piece{context.write(index), index, 0});
      }
    }
    touches.clear();
    for (std::size_t at = first; at < pieces_.size(); ++at) {
      const Piece& piece = pieces_[at];
      touches.push_back(ItemTouch{piece.bytes.data(), piece.bytes.data() + piece.bytes.size(), true,
                                  context.write_binding(piece.output).allocation});
    }
    works_.push_back(Work{digest, first, pieces_.size() - first, plan.seed});
    watch_.enqueue(context, touches, [this, work = works_.size() - 1] { write_outputs(work); });
  }

  /// A read item: its inputs' bytes into its digest.
  void read_inputs(std::size_t index) {
    const Work& work = works_[index];
    std::uint32_t value = work.seed;
    for (std::size_t at = work.first; at < work.first + work.count; ++at) {
      for (const std::byte byte : inputs_[at]) {
        value = taintpool::model::kernel_digest_step(value, static_cast<std::uint8_t>(byte));
      }
    }
    digests_[work.digest] = value;
  }

  /// A write item: its pieces from the digest its read item left.
  void write_outputs(std::size_t index) {
    const Work& work = works_[index];
    for (std::size_t at = work.first; at < work.first + work.count; ++at) {
      const Piece& piece = pieces_[at];
      for (std::size_t byte = 0; byte < piece.bytes.size(); ++byte) {
        piece.bytes[byte] = static_cast<std::byte>(taintpool::model::kernel_output_byte(
            digests_[work.digest], work.seed, piece.output, piece.position + byte));
      }
    }
  }

  /// What the watch found during the op, and the stream stats.
  void verdicts() {
    if (auto violation = watch_.violation()) {
      expect(false, violation->rule, violation->what);
    }
    const taintpool::StreamStats stats = device_->stream_stats();
    const auto& streams = watch_.model();
    expect(stats.waits_inserted == streams.waits_queued() &&
               stats.events_recorded == streams.events_recorded(),
           "O2", [&] {
             return "stream stats: waits " + std::to_string(stats.waits_inserted) + " events " +
                    std::to_string(stats.events_recorded) + "; the queues saw waits " +
                    std::to_string(streams.waits_queued()) + " events " +
                    std::to_string(streams.events_recorded());
           });
    expect(stats.pins_taken == streams.pins_taken() && stats.pins_held == streams.pins_held(), "O3",
           [&] {
             return "pins taken " + std::to_string(stats.pins_taken) + " held " +
                    std::to_string(stats.pins_held) + ", the model " +
                    std::to_string(streams.pins_taken()) + " and " +
                    std::to_string(streams.pins_held());
           });
    expect(device_->graph().next_id() == model_.next_failure(), "G1/S4", [&] {
      return "the next failure id is " + to_string(device_->graph().next_id()) + ", the model " +
             to_string(model_.next_failure());
    });
  }

  /// The whole model comparison; core's own invariant walk (which visits
  /// every size bin of every pool of every lane) only every kInvariantsEvery
  /// ops and when `invariants`.
  void full_check(bool invariants = false) {
    if (auto difference = model_.mismatch(*device_, queues_.pending() == 0)) {
      expect(false, "D1", *difference);
    }
    if (!invariants && log_.size() % kInvariantsEvery != 0) {
      return;
    }
    try {
      device_->check_invariants();
    } catch (const std::exception& error) {
      expect(false, "R1-R3/P1/P2/T5/O1", std::string("check_invariants: ") + error.what());
    }
  }

  void compare_bound(std::span<const Binding> reads, std::span<const Binding> writes) {
    for (const auto* set : {&reads, &writes}) {
      for (const Binding& binding : *set) {
        if (auto difference = model_.mismatch(*device_, binding.allocation, false)) {
          expect(false, "D1", *difference);
        }
      }
    }
  }

  /// Pins the host let go of since the last call: one handle each (O3).
  void drain_pins() {
    watch_.model().take_new_pins(pins_);
    for (const AllocationId id : pins_) {
      model_.copy_handle(id);
    }
    watch_.model().take_released_pins(pins_);
    for (const AllocationId id : pins_) {
      model_.drop_handle(id);
    }
  }

  /// The arena's block: one per thread, reused by every rig on it (a rig
  /// per fuzz input; zeroing or allocating 8 KiB each time is waste).
  static std::span<std::byte> arena() {
    alignas(256) static thread_local std::array<std::byte, kArenaBytes> bytes;
    return bytes;
  }

  /// Per body, the digest of its inputs once its read item ran (its seed
  /// until then); enqueue_work's items name theirs by index. Declared
  /// first, so destroyed last: the Device's pages going back at its
  /// destruction run what is still queued (FinishingStorage) — as are the
  /// lists below, which the items read.
  std::vector<std::uint32_t> digests_;
  /// What each queued item does: its digest, its run of inputs_ (a read
  /// item) or pieces_ (a write item), its seed. Appended per item, never
  /// removed while the rig lives (32 ops at most): indices stay valid.
  std::vector<Work> works_;
  std::vector<std::span<const std::byte>> inputs_; ///< Read items' input bytes.
  std::vector<Piece> pieces_;                      ///< Write items' output bytes.
  std::vector<ItemTouch> item_touches_;            ///< enqueue_work's scratch.
  ArenaStorage storage_;
  DeferredHostBackend queues_;
  StreamWatch watch_;
  ObservedBackend backend_;
  /// Made in the constructor's body, let go first in the destructor's.
  std::optional<Device> device_;
  model::DeviceModel model_;
  Fail fail_;
  bool detect_;
  std::array<Allocation, kSlots> slots_;
  std::vector<AllocationId> ids_;
  std::vector<StreamId> live_streams_;
  std::vector<StreamId> destroyed_;
  std::vector<Logged> log_;
  std::vector<Binding> logged_bindings_; ///< The logged ops' bindings (Logged::first).
  std::vector<AllocationId> pins_;       ///< drain_pins()'s list, kept for its capacity.
  /// The open launch's or host write's races (StreamModel::begin), kept
  /// for its capacity: a list per racing launch was an allocation each.
  std::vector<RaceFinding> races_;
};

inline std::string StreamRig::show(const Logged& op) const {
  static constexpr std::array<const char*, 11> names = {"create",
                                                        "drop",
                                                        "launch",
                                                        "host write",
                                                        "read",
                                                        "step",
                                                        "create_stream",
                                                        "destroy_stream",
                                                        "synchronize",
                                                        "sweep/cleanup",
                                                        "launch through a plan"};
  std::string text = names[static_cast<std::size_t>(op.op)];
  text += " stream " + std::to_string(op.stream) + " value " + std::to_string(op.value);
  if (op.launch != 0) {
    text += " [launch #" + std::to_string(op.launch) + "]";
  }
  auto list = [](std::span<const Binding> bindings) {
    std::string out = "[";
    for (const Binding& binding : bindings) {
      out += " A" + std::to_string(binding.allocation.raw()) + to_string(binding.range);
    }
    return out + " ]";
  };
  if (op.reads != 0 || op.writes != 0) {
    const std::span<const Binding> bound(logged_bindings_.data() + op.first, op.reads + op.writes);
    text += " reads " + list(bound.first(op.reads)) + " writes " + list(bound.last(op.writes));
  }
  return text;
}

inline std::string StreamRig::context() const {
  std::string text = std::string(detect_ ? "detect" : "ordering") + " mode; ops (" +
                     std::to_string(log_.size()) + "):\n";
  for (std::size_t at = 0; at < log_.size(); ++at) {
    text += "  #" + std::to_string(at) + " " + show(log_[at]) + "\n";
  }
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
    text += "  " + to_string(failure) + " {" + to_string(*model_.error(failure)) + "}\n";
  }
  return text;
}

} // namespace taintpool::testing
