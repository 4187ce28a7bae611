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
#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/pool/counting_storage.hpp>
#include <taintpool/pool/host_storage.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
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

} // namespace
} // namespace taintpool
