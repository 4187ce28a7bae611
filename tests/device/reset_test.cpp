// Device::reset(): a reset Device is observably a freshly built one (issue
// 13), whatever the jobs before it left behind.
//
// Each test runs the same job — buffers, a second stream, host writes,
// launches that run, fail, skip and fail late, a plan, reads, stale reports,
// synchronize — on a fresh Device and on a Device reset after dirty work, and
// compares everything the job can observe, written down as text: the ids
// (allocations by their number in the id space, failures, launch numbers a
// body sees, stream numbers), every answer and report, the graph's size and
// next id, and the memory's and streams' statistics. Both Devices run in
// the same id space (the fresh one is gone before the other is built), so
// reports name the same allocations in the same words. The storage is
// counted: a reset gives every page back (P1).
//
// Then the same over streams made and destroyed out of number order; a
// reset with each of its allocations failed in turn (it throws having
// changed nothing, or ends fresh, and never ends the process); and
// StreamTable::restart on its own, against a new table, on a counting
// backend (every stream, event and pin given back once). And the heap across
// rounds of job-then-reset: flat on HostBackend; on DeferredHostBackend it
// grows only by the queues it keeps for destroyed streams.
#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/pool/counting_storage.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>
#include <taintpool/stream/stream_table.hpp>
#include <taintpool/testing/alloc_faults.hpp>
#include <taintpool/testing/heap_allocations.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace taintpool {
namespace {

/// A backend over counted host pages, scheduled by a fixed seed.
struct Rig {
  explicit Rig(std::uint64_t seed)
      : pages(host)
      , backend(pages, MemoryConfig{}) {
    backend.set_seed(seed);
  }
  HostStorage host{256};
  CountingStorage pages;
  DeferredHostBackend backend;
};

std::string show(const LaunchResult& result) {
  std::string text = result.status == LaunchStatus::Ran      ? "ran"
                     : result.status == LaunchStatus::Failed ? "failed"
                                                             : "skipped";
  text += " failure=" + (result.failure ? to_string(*result.failure) : std::string("none"));
  text += " needed=" +
          (result.needed ? std::to_string(allocation_number(*result.needed)) : std::string("none"));
  text += " error=" + (result.error ? to_string(*result.error) : std::string("none"));
  text += " unwritten=" + std::to_string(result.unwritten.size());
  return text;
}

std::string show(const std::vector<Report>& reports) {
  std::string text = std::to_string(reports.size()) + " reports";
  for (const Report& report : reports) {
    text += "\n    " + to_string(report);
  }
  return text;
}

std::string show(const MemoryStats& stats) {
  return "in_use " + std::to_string(stats.in_use) + " padding " + std::to_string(stats.padding) +
         " reserved " + std::to_string(stats.reserved) + " allocations " +
         std::to_string(stats.allocations) + " pages " + std::to_string(stats.pages) +
         " largest_free " + std::to_string(stats.largest_free_block) + " peak_in_use " +
         std::to_string(stats.peak_in_use) + " peak_reserved " +
         std::to_string(stats.peak_reserved);
}

std::string show(const StreamStats& stats) {
  return "streams " + std::to_string(stats.streams_created) + " waits " +
         std::to_string(stats.waits_inserted) + " events " + std::to_string(stats.events_recorded) +
         " races " + std::to_string(stats.races_detected) + " pins " +
         std::to_string(stats.pins_taken) + "/" + std::to_string(stats.pins_held) + " records " +
         std::to_string(stats.records_held);
}

/// Everything the job can observe of `device`, in order.
class Transcript {
 public:
  explicit Transcript(Device& device)
      : device_(device) {}
  void note(const std::string& line) { text_ += line + "\n"; }
  void state(const std::string& when) {
    note(when + ": graph " + std::to_string(device_.graph().size()) + " next " +
         to_string(device_.graph().next_id()) + "; memory " + show(device_.memory().stats()) +
         "; " + show(device_.stream_stats()));
  }
  [[nodiscard]] const std::string& text() const noexcept { return text_; }

 private:
  Device& device_;
  std::string text_;
};

/// A body that notes the launch number it sees, then answers `outcome`.
/// (Returned by value: a KernelBody only refers to its callable, which the
/// launch's full expression keeps alive.)
auto noting(Transcript& out, std::function<LaunchOutcome(const KernelContext&)>& outcome) {
  return [&out, &outcome](const KernelContext& context) {
    out.note("  body sees launch " + std::to_string(context.launch()) + " of " +
             std::string(context.kernel()));
    return outcome(context);
  };
}

/// The job: what a fuzz input or a test case does with a Device.
std::string run_job(Device& device, DeferredHostBackend& backend) {
  Transcript out(device);
  out.state("start");
  const StreamId main = device.default_stream();
  out.note("default stream number " + std::to_string(main.number()));
  Allocation a = device.create_buffer(64);
  Allocation b = device.create_buffer(32);
  Allocation c = device.create_buffer(std::vector<std::byte>(48, std::byte{7}));
  out.note("buffers " + std::to_string(allocation_number(a.id())) + " " +
           std::to_string(allocation_number(b.id())) + " " +
           std::to_string(allocation_number(c.id())));
  const StreamId side = device.create_stream();
  out.note("side stream number " + std::to_string(side.number()));
  Allocation d = device.create_buffer(16, side);
  out.note("buffer on side " + std::to_string(allocation_number(d.id())));

  std::function<LaunchOutcome(const KernelContext&)> outcome = [](const KernelContext&) {
    return LaunchOutcome::success();
  };
  out.note("host write a: " + show(device.write(a.whole(), std::vector<std::byte>(64))));
  out.note("fill b from a on side: " +
           show(device.launch(side, "fill", {a.whole()}, {b.whole()}, noting(out, outcome))));
  outcome = [](const KernelContext&) {
    return LaunchOutcome::partial(Error::launch("bad"), {WrittenRange{0, ByteRange::of(0, 8)}});
  };
  out.note("fail c from b: " +
           show(device.launch("bad", {b.whole()}, {c.whole()}, noting(out, outcome))));
  outcome = [](const KernelContext&) { return LaunchOutcome::success(); };
  out.note("skip d from c: " +
           show(device.launch(side, "next", {c.whole()}, {d.whole()}, noting(out, outcome))));
  outcome = [&backend](const KernelContext& context) {
    backend.fail_later(context, Error::launch("late"), {WrittenRange{0, ByteRange::of(0, 4)}});
    return LaunchOutcome::success();
  };
  out.note("late a from b: " +
           show(device.launch("checked", {b.whole()}, {a.whole()}, noting(out, outcome))));
  outcome = [](const KernelContext&) { return LaunchOutcome::success(); };
  const LaunchPlan plan = device.plan(side, {a.bind(0, 8)}, {b.bind(8, 8)});
  out.note("plan a into b: " + show(device.launch(plan, "planned", noting(out, outcome))));
  out.state("before synchronize");
  device.synchronize();
  out.state("after synchronize");
  std::vector<std::byte> into(64);
  out.note("read a: " + show(device.read(a.whole(), into).reports));
  out.note("stale b: " + show(device.stale_reports(b.whole())));
  out.note("stale d: " + show(device.stale_reports(d.whole())));
  device.check_invariants();
  device.destroy_stream(side);
  out.state("end");
  return out.text();
}

/// Dirty work left unfinished: live handles, a plan and a stream kept, a
/// late failure not yet taken, logged launches, claims in the graph.
struct Leftovers {
  Allocation held;
  LaunchPlan plan;
  StreamId stream;
};

Leftovers leave_dirty(Device& device, DeferredHostBackend& backend) {
  static_cast<void>(run_job(device, backend));
  Leftovers left{device.create_buffer(40), {}, device.create_stream()};
  Allocation out = device.create_buffer(24, left.stream);
  left.plan = device.plan(left.stream, {left.held.whole()}, {out.whole()});
  static_cast<void>(device.launch(left.stream, "late", {left.held.whole()}, {out.whole()},
                                  [&backend](const KernelContext& context) {
                                    backend.fail_later(context, Error::launch("left"));
                                    return LaunchOutcome::success();
                                  }));
  static_cast<void>(device.launch("broke", {}, {left.held.whole()}, [](const KernelContext&) {
    return LaunchOutcome::failure(Error::launch("left failed"));
  }));
  return left;
}

std::string fresh_job(StreamOrdering ordering) {
  Rig rig(5);
  Device device(rig.backend, DeviceOptions{std::nullopt, ordering, UnwrittenReads::Skip});
  return run_job(device, rig.backend);
}

void expect_reset_is_fresh(StreamOrdering ordering) {
  const std::string fresh = fresh_job(ordering);
  Rig rig(5);
  Device device(rig.backend, DeviceOptions{std::nullopt, ordering, UnwrittenReads::Skip});
  const Leftovers left = leave_dirty(device, rig.backend);
  const StreamId old_default = device.default_stream();
  ASSERT_NE(rig.pages.counts().live_bytes, 0u);

  device.reset();
  // P1: every page back to the storage, no allocation, no failure left.
  EXPECT_EQ(rig.pages.counts().live_bytes, 0u);
  EXPECT_EQ(device.memory().stats().allocations, 0u);
  EXPECT_TRUE(device.graph().empty());
  // What was handed out before names another Device now.
  EXPECT_NE(device.default_stream(), old_default);
  std::vector<std::byte> into(40);
  try {
    static_cast<void>(device.read(left.held.whole(), into));
    ADD_FAILURE() << "a handle from before the reset still reads";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::NotFound);
  }
  EXPECT_THROW(
      static_cast<void>(device.launch(
          left.plan, "old plan", [](const KernelContext&) { return LaunchOutcome::success(); })),
      std::invalid_argument);
  try {
    static_cast<void>(device.create_buffer(8, left.stream));
    ADD_FAILURE() << "a stream from before the reset still takes buffers";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::NotFound);
  }
  device.check_invariants();

  // The refusals above changed nothing a fresh Device would not have: the
  // job answers exactly as on one, and again after a second reset.
  rig.backend.set_seed(5);
  EXPECT_EQ(run_job(device, rig.backend), fresh);
  device.reset();
  rig.backend.set_seed(5);
  EXPECT_EQ(run_job(device, rig.backend), fresh);
}

TEST(DeviceReset, P1_R4_G1_AResetDeviceAnswersAJobExactlyAsAFreshOne) {
  expect_reset_is_fresh(StreamOrdering::Wait);
}

TEST(DeviceReset, O4_AResetDeviceInDetectModeAnswersAJobExactlyAsAFreshOne) {
  expect_reset_is_fresh(StreamOrdering::Detect);
}

TEST(DeviceReset, D1_ALateFailureOfALaunchBeforeTheResetIsNotPinnedOnALaterLaunch) {
  // Launch 1 fails late and is never synchronized before the reset; the
  // reset Device's own launch 1 must not take that failure.
  Rig rig(1);
  Device device(rig.backend);
  {
    Allocation before = device.create_buffer(8);
    static_cast<void>(
        device.launch("doomed", {}, {before.whole()}, [&rig](const KernelContext& context) {
          rig.backend.fail_later(context, Error::launch("late"));
          return LaunchOutcome::success();
        }));
  }
  device.reset();
  Allocation after = device.create_buffer(8);
  std::uint64_t seen = 0;
  const LaunchResult result =
      device.launch("fine", {}, {after.whole()}, [&seen](const KernelContext& context) {
        seen = context.launch();
        return LaunchOutcome::success();
      });
  EXPECT_EQ(seen, 1u);
  EXPECT_TRUE(result.ran());
  device.synchronize();
  EXPECT_TRUE(device.stale_reports(after.whole()).empty());
  EXPECT_TRUE(device.graph().empty());
}

TEST(DeviceReset, O5_AResetFromInsideABodyIsRefusedAndChangesNothing) {
  Rig rig(1);
  Device device(rig.backend);
  Allocation buffer = device.create_buffer(8);
  const StreamId before = device.default_stream();
  bool refused = false;
  static_cast<void>(device.launch("resets", {}, {buffer.whole()}, [&](const KernelContext&) {
    try {
      device.reset();
    } catch (const std::logic_error&) {
      refused = true;
    }
    return LaunchOutcome::success();
  }));
  EXPECT_TRUE(refused);
  EXPECT_EQ(device.default_stream(), before);
  EXPECT_TRUE(device.memory().contains(buffer.id()));
}

// ------------------------------------------------------- streams made and destroyed

/// A job over several streams, some destroyed before others are made, so
/// slots are reused out of number order (numbers 1..5 end in slots 1, 3
/// and 2) and the stream number table holds live, cleared and taken-over
/// entries: everything StreamTable::restart must leave as a new table has
/// it. Streams it makes are added to `made` and left live; its launches
/// cross streams both ways (waits, events, pins, records).
std::string run_streams_job(Device& device, std::vector<StreamId>& made) {
  Transcript out(device);
  out.state("start");
  auto create = [&](const char* what) {
    const StreamId stream = device.create_stream();
    made.push_back(stream);
    out.note(std::string(what) + " stream number " + std::to_string(stream.number()));
    return stream;
  };
  const auto ran = [](const KernelContext&) { return LaunchOutcome::success(); };
  const StreamId first = create("first");
  device.destroy_stream(first);
  const StreamId second = create("second");
  const StreamId third = create("third");
  const StreamId fourth = create("fourth");
  device.destroy_stream(third);
  const StreamId fifth = create("fifth");
  Allocation a = device.create_buffer(std::vector<std::byte>(32, std::byte{1}));
  Allocation b = device.create_buffer(32, second);
  Allocation c = device.create_buffer(32, fourth);
  Allocation d = device.create_buffer(32, fifth);
  out.note("buffers " + std::to_string(allocation_number(a.id())) + " " +
           std::to_string(allocation_number(b.id())) + " " +
           std::to_string(allocation_number(c.id())) + " " +
           std::to_string(allocation_number(d.id())));
  out.note("b from a on second: " +
           show(device.launch(second, "ab", {a.whole()}, {b.whole()}, ran)));
  out.note("c from b on fourth: " +
           show(device.launch(fourth, "bc", {b.whole()}, {c.whole()}, ran)));
  out.note("d from a, c on fifth: " +
           show(device.launch(fifth, "acd", {a.whole(), c.whole()}, {d.whole()}, ran)));
  out.note("a from d on the default stream: " +
           show(device.launch("da", {d.bind(0, 16)}, {a.bind(8, 16)}, ran)));
  out.state("crossed");
  device.synchronize();
  out.state("synchronized");
  // Each live stream still resolves to itself: a buffer made on it is
  // homed there, and destroying one leaves the others working.
  device.destroy_stream(second);
  for (const StreamId stream : {fourth, fifth}) {
    Allocation on = device.create_buffer(8, stream);
    out.note("on stream " + std::to_string(stream.number()) + ": buffer " +
             std::to_string(allocation_number(on.id())) + ", " +
             show(device.launch(stream, "on", {a.whole()}, {on.whole()}, ran)));
  }
  const StreamId sixth = create("sixth");
  out.note("a on sixth: " + show(device.launch(sixth, "a", {c.whole()}, {a.whole()}, ran)));
  device.check_invariants();
  out.state("end");
  return out.text();
}

void expect_streams_reset_is_fresh(StreamOrdering ordering) {
  const DeviceOptions options{std::nullopt, ordering, UnwrittenReads::Skip};
  std::string fresh;
  {
    Rig rig(3);
    Device device(rig.backend, options);
    std::vector<StreamId> made;
    fresh = run_streams_job(device, made);
  }
  Rig rig(3);
  Device device(rig.backend, options);
  // Dirty: streams 1-3 in slots 1-3, then 1 and 2 destroyed, so stream 3
  // holds its number's entry at a slot the job's own stream 3 will not
  // have; then the job twice over (numbers 4 on), its streams left live
  // with work and pins outstanding.
  std::vector<StreamId> before{device.create_stream(), device.create_stream(),
                               device.create_stream()};
  device.destroy_stream(before[0]);
  device.destroy_stream(before[1]);
  static_cast<void>(run_streams_job(device, before));
  static_cast<void>(run_streams_job(device, before));
  Allocation held = device.create_buffer(16);
  static_cast<void>(device.launch(before.back(), "pinned", {held.whole()}, {},
                                  [](const KernelContext&) { return LaunchOutcome::success(); }));
  ASSERT_NE(device.stream_stats().pins_held, 0u);

  device.reset();
  EXPECT_EQ(show(device.stream_stats()), show(StreamStats{}));
  for (const StreamId old : before) {
    try {
      static_cast<void>(device.create_buffer(8, old));
      ADD_FAILURE() << to_string(old) << " from before the reset still takes buffers";
    } catch (const Exception& error) {
      EXPECT_EQ(error.kind(), ErrorKind::NotFound) << to_string(old);
    }
    EXPECT_THROW(device.destroy_stream(old), Exception) << to_string(old);
  }
  EXPECT_EQ(show(device.stream_stats()), show(StreamStats{}));
  device.check_invariants();

  std::vector<StreamId> after;
  EXPECT_EQ(run_streams_job(device, after), fresh);
  device.reset();
  EXPECT_EQ(run_streams_job(device, after), fresh);
}

TEST(DeviceReset, O1_O2_O3_AResetDeviceWhoseStreamsWereMadeAndDestroyedAnswersAsAFreshOne) {
  expect_streams_reset_is_fresh(StreamOrdering::Wait);
}

TEST(DeviceReset, O4_InDetectModeAResetDeviceWhoseStreamsWereMadeAndDestroyedAnswersAsAFreshOne) {
  expect_streams_reset_is_fresh(StreamOrdering::Detect);
}

// ------------------------------------------------ the heap across resets

/// operator new calls minus operator delete calls while `fn` runs.
template <class Fn>
std::int64_t net_allocations(Fn&& fn) {
  const std::uint64_t allocations = testing::heap_allocations();
  const std::uint64_t frees = testing::heap_frees();
  fn();
  return static_cast<std::int64_t>(testing::heap_allocations() - allocations) -
         static_cast<std::int64_t>(testing::heap_frees() - frees);
}

/// Rounds of the streams job, each ended by a reset, on one Device: what
/// each round left on the heap that it did not find there. The first round
/// fills the capacity every later one reuses.
std::vector<std::int64_t> net_per_reset_round(Backend& backend) {
  Device device(backend);
  std::vector<std::int64_t> net;
  for (int round = 0; round < 6; ++round) {
    net.push_back(net_allocations([&] {
      std::vector<StreamId> made;
      static_cast<void>(run_streams_job(device, made));
      device.reset();
    }));
  }
  return net;
}

// Device::reset() keeps capacity so the next job "allocates only what it
// keeps as state" (device.hpp): a server that resets between requests must
// not grow. On HostBackend, whose streams are tokens, a round that makes and
// destroys six streams ends with exactly the heap it found.
TEST(DeviceReset,
     O1_G10_AResetDeviceRunningTheSameStreamJobAgainEndsEachRoundWithTheHeapAsItFound) {
  HostStorage host{256};
  HostBackend backend(host, MemoryConfig{});
  const std::vector<std::int64_t> net = net_per_reset_round(backend);
  for (std::size_t round = 1; round < net.size(); ++round) {
    EXPECT_EQ(net[round], 0) << "round " << round;
  }
}

// The one growth there is belongs to DeferredHostBackend, by design: it
// keeps each destroyed stream's emptied queue (one small object) so a dead
// handle never names a live stream. The job's six streams, destroyed by
// itself or by the reset, are six such objects a round — and nothing else.
TEST(DeviceReset, O1_OnTheDeferredBackendARoundGrowsOnlyByTheQueuesOfTheStreamsItDestroyed) {
  Rig rig(3);
  const std::vector<std::int64_t> net = net_per_reset_round(rig.backend);
  for (std::size_t round = 1; round < net.size(); ++round) {
    EXPECT_EQ(net[round], 6) << "round " << round;
  }
}

// ------------------------------------------------------------ out of memory

/// What a failed reset must leave as it was.
std::string observe(Device& device) {
  Transcript out(device);
  out.state("now");
  out.note("default stream " + to_string(device.default_stream()));
  return out.text();
}

/// Every allocation a reset makes, failed in turn (testing/alloc_faults):
/// the reset either throws std::bad_alloc having changed nothing the caller
/// can see, or completes and leaves a Device that answers the job as a
/// fresh one. Before StreamTable::restart, the table built again inside a
/// noexcept step ended the process (std::terminate) at such a fault.
/// `synchronized`: the dirty Device synchronized first, so that finishing
/// its streams, which a reset does before anything that can fail, changes
/// nothing and the whole state can be compared.
void expect_reset_survives_allocation_faults(bool synchronized) {
  const std::string fresh = fresh_job(StreamOrdering::Wait);
  bool fired = true;
  for (std::uint64_t n = 0; fired; ++n) {
    Rig rig(5);
    Device device(rig.backend);
    const Leftovers left = leave_dirty(device, rig.backend);
    if (synchronized) {
      device.synchronize();
    }
    const std::string before = observe(device);
    const StreamId old_default = device.default_stream();
    bool threw = false;
    testing::arm_allocation_fault(n);
    try {
      device.reset();
    } catch (const std::bad_alloc&) {
      threw = true;
    }
    fired = testing::disarm_allocation_fault() < 0;
    if (threw) {
      EXPECT_TRUE(fired);
      if (synchronized) {
        EXPECT_EQ(observe(device), before) << "fault at allocation " << n;
      }
      EXPECT_EQ(device.default_stream(), old_default) << "fault at allocation " << n;
      EXPECT_TRUE(device.memory().contains(left.held.id())) << "fault at allocation " << n;
      static_cast<void>(device.create_buffer(8, left.stream)); // The old stream lives.
      device.check_invariants();
      device.reset();
    }
    EXPECT_TRUE(device.graph().empty()) << "fault at allocation " << n;
    EXPECT_EQ(rig.pages.counts().live_bytes, 0u) << "fault at allocation " << n;
    rig.backend.set_seed(5);
    EXPECT_EQ(run_job(device, rig.backend), fresh) << "fault at allocation " << n;
  }
}

TEST(DeviceReset, P1_G10_AResetOutOfMemoryThrowsBeforeItChangesAnythingOrEndsFresh) {
  expect_reset_survives_allocation_faults(true);
}

TEST(DeviceReset, P1_G10_AResetOutOfMemoryWithWorkOutstandingNeverEndsTheProcess) {
  expect_reset_survives_allocation_faults(false);
}

// ------------------------------------------------------ StreamTable::restart

/// Counts what a table holds of the backend: live streams and events. Work
/// never completes unasked (done() says no), so kept events stay kept.
class CountingQueues final : public QueueBackend {
 public:
  [[nodiscard]] StreamHandle create_stream() override {
    ++live_streams;
    return QueueBackend::create_stream();
  }
  void destroy_stream(StreamHandle /*stream*/) noexcept override { --live_streams; }
  [[nodiscard]] EventHandle record(StreamHandle stream) override {
    ++live_events;
    return QueueBackend::record(stream);
  }
  void release(EventHandle /*event*/) noexcept override { --live_events; }
  [[nodiscard]] bool done(EventHandle /*event*/) noexcept override { return false; }
  [[nodiscard]] bool synchronous() const noexcept override { return false; }
  void finish(StreamHandle /*stream*/) override {
    if (broken) {
      throw Exception(Error::generic("the device is lost"));
    }
  }

  int live_streams = 0;
  int live_events = 0;
  bool broken = false; ///< finish() throws: a lost device.
};

/// Memory for allocations a table pins.
struct Heap {
  HostStorage storage;
  ErrorGraph graph;
  MemoryManager memory{storage, graph};
};

/// Streams made as a job makes them, one destroyed between: the ids and
/// slots, and the ordering table's width, in order.
std::string make_streams(StreamTable& table) {
  std::string text;
  std::vector<StreamId> made;
  for (int step = 0; step < 5; ++step) {
    made.push_back(table.create());
    if (step == 1) {
      table.destroy(made.front());
    }
  }
  for (const StreamId stream : made) {
    text += to_string(stream) + (stream.device() == table.default_stream().device() ? "" : "?");
    try {
      text += " at slot " + std::to_string(table.slot(stream)) + "\n";
    } catch (const Exception& error) {
      text += " " + to_string(error.error()) + "\n";
    }
  }
  return text + "ordering slots " + std::to_string(table.order().slots()) + "; " +
         show(table.stats());
}

/// `count` records of allocations homed on the default stream, each written
/// on `slot` (a crossing write, so each gets a record).
void fill_records(StreamTable& table, std::uint32_t slot, std::uint64_t count) {
  for (std::uint64_t raw = 1000; raw < 1000 + count; ++raw) {
    const StreamAccess access{AllocationId::from_raw(raw), ByteRange::of(0, 8), 8, 0};
    static_cast<void>(table.order().commit(slot, raw, {}, std::span(&access, 1)));
  }
}

TEST(StreamTableRestart, O1_O3_ARestartedTableIsANewOneUnderTheNewSerialHoldingNothingOfBefore) {
  Heap heap;
  MemoryManager& memory = heap.memory;
  CountingQueues backend;
  StreamTable fresh(backend, 9);
  fresh.order().track_every_allocation();
  StreamTable table(backend, 8);
  table.order().track_every_allocation();

  // Dirty: streams made and destroyed, a write on one stream read on
  // another (a record, a hazard, an event and a wait), pins on both the
  // reader and the default stream, events kept for them.
  std::vector<StreamId> before{table.default_stream()};
  for (int step = 0; step < 4; ++step) {
    before.push_back(table.create());
  }
  table.destroy(before[1]);
  const std::uint32_t writer = table.slot(before[2]);
  const std::uint32_t reader = table.slot(before[4]);
  Allocation a = memory.allocate(64);
  const StreamAccess access{a.id(), ByteRange::of(0, 64), 64, 0};
  table.order().created(access);
  static_cast<void>(table.order().commit(writer, 1, {}, std::span(&access, 1)));
  std::vector<Hazard> hazards;
  table.order().plan(reader, std::span(&access, 1), {}, hazards);
  ASSERT_FALSE(hazards.empty());
  ASSERT_EQ(table.order_after(reader, hazards), 1u);
  static_cast<void>(table.order().commit(reader, 2, std::span(&access, 1), {}));
  static_cast<void>(table.order().commit(0, 3, std::span(&access, 1), {}));
  fill_records(table, writer, 100); // poll() below, finding none complete, prunes later.
  table.pin(reader, table.order().tail(reader), a);
  table.pin(0, 1, a);
  table.poll();
  const AllocationId pinned = a.id();
  a = Allocation();
  ASSERT_TRUE(memory.contains(pinned)) << "held by the pins alone";
  ASSERT_EQ(backend.live_streams, 3);
  ASSERT_GT(backend.live_events, 0);
  ASSERT_NE(table.order().records(), 0u);
  ASSERT_TRUE(table.several());

  table.restart(9);
  // Everything of before given back: streams, events, pins.
  EXPECT_EQ(backend.live_streams, 0);
  EXPECT_EQ(backend.live_events, 0);
  EXPECT_FALSE(memory.contains(pinned)) << "a pin outlived the restart";
  EXPECT_EQ(table.last_pinned(0), std::nullopt);
  // No id of before resolves, the old default stream's included.
  for (const StreamId old : before) {
    try {
      static_cast<void>(table.slot(old));
      ADD_FAILURE() << to_string(old) << " of the old serial still resolves";
    } catch (const Exception& error) {
      EXPECT_EQ(error.kind(), ErrorKind::NotFound) << to_string(old);
    }
  }
  // As a new table: one stream, nothing queued, counted or recorded, the
  // tracking mode kept.
  EXPECT_EQ(table.default_stream(), fresh.default_stream());
  EXPECT_EQ(table.slot(table.default_stream()), 0u);
  EXPECT_FALSE(table.several());
  EXPECT_EQ(show(table.stats()), show(fresh.stats()));
  EXPECT_EQ(table.order().slots(), 1u);
  EXPECT_EQ(table.order().tail(0), 0u);
  EXPECT_EQ(table.order().completed(0), 0u);
  EXPECT_EQ(table.order().records(), 0u);
  EXPECT_TRUE(table.order().tracks_every_allocation());
  table.order().check_invariants();
  // And it goes on as the new one does: the same numbers in the same slots,
  // records pruned by poll() at the same count.
  EXPECT_EQ(make_streams(table), make_streams(fresh));
  EXPECT_EQ(backend.live_streams, 8);
  for (StreamTable* each : {&table, &fresh}) {
    fill_records(*each, 1, 64);
    each->finished(1);
    each->poll();
  }
  EXPECT_EQ(table.order().records(), fresh.order().records());
  EXPECT_EQ(table.order().records(), 0u) << "64 complete records are pruned";
  // Restarted again, it gives back exactly what it made since.
  table.restart(10);
  EXPECT_EQ(backend.live_streams, 4);
  EXPECT_EQ(backend.live_events, 0);
}

// A lost device cannot finish a stream. The restart, like the destructor,
// gives everything back all the same, once: nothing is released twice.
TEST(StreamTableRestart, O1_O3_ARestartOnALostDeviceStillGivesEveryStreamEventAndPinBackOnce) {
  Heap heap;
  MemoryManager& memory = heap.memory;
  CountingQueues backend;
  StreamTable table(backend, 5);
  const std::uint32_t side = table.slot(table.create());
  static_cast<void>(table.slot(table.create()));
  Allocation a = memory.allocate(64);
  const AllocationId pinned = a.id();
  const StreamAccess access{a.id(), ByteRange::of(0, 64), 64, 0};
  static_cast<void>(table.order().commit(0, 1, {}, std::span(&access, 1)));
  static_cast<void>(table.order().commit(side, 2, std::span(&access, 1), {}));
  table.pin(side, table.order().tail(side), a);
  table.pin(0, 1, a);
  a = Allocation();
  table.poll(); // An event on each stream holding pins: nothing completes them.
  ASSERT_EQ(backend.live_events, 2);
  backend.broken = true;
  EXPECT_THROW(table.finish_all(), Exception);

  table.restart(6);
  EXPECT_EQ(backend.live_streams, 0);
  EXPECT_EQ(backend.live_events, 0);
  EXPECT_FALSE(memory.contains(pinned)) << "a pin outlived the restart";
  EXPECT_EQ(show(table.stats()), show(StreamStats{}));
  table.restart(7);
  EXPECT_EQ(backend.live_events, 0) << "an event was given back twice";
  EXPECT_EQ(backend.live_streams, 0);
}

TEST(StreamTableRestart, O1_RestartingAnUntouchedTableChangesNothing) {
  CountingQueues backend;
  StreamTable fresh(backend, 4);
  StreamTable table(backend, 3);
  table.restart(4);
  EXPECT_EQ(make_streams(table), make_streams(fresh));
  EXPECT_FALSE(table.order().tracks_every_allocation());
}

} // namespace
} // namespace taintpool
