// Pins: launch plans (device/launch_plan.hpp; issue 11, item 7).
//
// A launch through a plan must be the plain launch of the plan's bindings
// with the look-ups taken from the plan: the same answers, the same errors,
// the same state after, on every path (S1-S6, T2, P3, O1-O4, N1-N2, G1).
// The one difference a user can see is that the plan holds its buffers, so
// the plain side of every comparison holds the same handles as long as the
// plan lives.
//
// Why this shape: the differential property runs one random program twice,
// one run after the other (so both Devices mint the same ids), once with
// plain launches and once through plans, and compares the transcripts: each
// answer field by field, every exception's kind and words, every buffer's
// bytes or reports, the stream counters. Plans are made once and launched
// many times while buffers are tainted, repaired, dropped and made around
// them, which is what a cache could get wrong. The edge tests then pin one
// edge each and assert what the rule says, so a change that broke both
// paths alike fails too.
#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/testing/heap_allocations.hpp>
#include <taintpool/testing/launch_answer_text.hpp>
#include <taintpool/testing/scope_shape.hpp>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace taintpool {
namespace {

LaunchOutcome fill_all(const KernelContext& context, std::uint8_t value) {
  for (std::size_t index = 0; index < context.writes(); ++index) {
    std::fill(context.write(index).begin(), context.write(index).end(),
              static_cast<std::byte>(value));
  }
  return LaunchOutcome::success();
}

LaunchOutcome succeed(const KernelContext&) {
  return LaunchOutcome::success();
}

using testing::describe;

std::string describe(const StreamStats& stats) {
  return "streams " + std::to_string(stats.streams_created) + " waits " +
         std::to_string(stats.waits_inserted) + " events " + std::to_string(stats.events_recorded) +
         " races " + std::to_string(stats.races_detected) + " pins " +
         std::to_string(stats.pins_taken) + "/" + std::to_string(stats.pins_held) + " records " +
         std::to_string(stats.records_held);
}

/// Runs `step` and describes its answer or the exception it threw.
template <class Step>
std::string answer(Step&& step) {
  try {
    return std::forward<Step>(step)();
  } catch (const Exception& error) {
    return std::string("threw ") + std::string(name(error.kind())) + ": " + error.what();
  } catch (const std::exception& error) {
    return std::string("threw: ") + error.what();
  }
}

// ------------------------------------------------------------ the rigs

/// Which Device a program runs on.
enum class RigKind : int {
  Host,         ///< HostBackend, one stream, trusted fresh bytes.
  Streams,      ///< DeferredHostBackend, 3 streams, ordering (O1-O3).
  Detect,       ///< DeferredHostBackend, 3 streams, detect mode (O4).
  NeverReport,  ///< HostBackend, FreshBytes::NeverWritten, UnwrittenReads::Report (N1, N2).
  StreamsNever, ///< DeferredHostBackend, 3 streams, NeverWritten, Skip.
};

struct Rig {
  explicit Rig(RigKind kind)
      : deferred(kind == RigKind::Streams || kind == RigKind::Detect ||
                 kind == RigKind::StreamsNever) {
    DeviceOptions options;
    if (kind == RigKind::NeverReport || kind == RigKind::StreamsNever) {
      MemoryConfig config;
      config.fresh_bytes = FreshBytes::NeverWritten;
      options.memory = config;
      options.unwritten_reads =
          kind == RigKind::NeverReport ? UnwrittenReads::Report : UnwrittenReads::Skip;
    }
    if (kind == RigKind::Detect) {
      options.ordering = StreamOrdering::Detect;
    }
    if (deferred) {
      auto made = std::make_unique<DeferredHostBackend>();
      queue = made.get();
      backend = std::move(made);
    } else {
      backend = std::make_unique<HostBackend>();
    }
    device = std::make_unique<Device>(*backend, options);
    streams.push_back(device->default_stream());
    if (deferred) {
      streams.push_back(device->create_stream());
      streams.push_back(device->create_stream());
    }
  }

  bool deferred;
  DeferredHostBackend* queue = nullptr;
  std::unique_ptr<HostBackend> backend;
  std::unique_ptr<Device> device;
  std::vector<StreamId> streams;
};

// ------------------------------------------------------------ the differential program

/// One plan, as each side keeps it: the planned side the LaunchPlan, the
/// plain side the bindings and a handle per binding (what the plan holds).
struct PlanRecord {
  bool live = false;
  StreamId stream;
  std::vector<Binding> reads;
  std::vector<Binding> writes;
  std::vector<Allocation> held; ///< Plain side only.
  LaunchPlan plan;              ///< Planned side only.
};

/// The program's words, read in order; past the end, zeros.
class Words {
 public:
  explicit Words(const std::vector<std::uint32_t>& words)
      : words_(words) {}
  [[nodiscard]] bool done() const { return at_ >= words_.size(); }
  std::uint32_t next() { return at_ < words_.size() ? words_[at_++] : 0; }

 private:
  const std::vector<std::uint32_t>& words_;
  std::size_t at_ = 0;
};

/// A body of kind `kind` writing `value` plus the first byte of read 0:
/// succeeds (0), fails (1), throws (2), names half of output 0 (3, S6), or
/// fails having written half of output 0 (4, S2). On a deferred backend
/// the bytes move in queued work, so they show the order the Device
/// imposed.
struct BodyState {
  Rig* rig;
  std::uint32_t kind;
  std::uint8_t value;

  LaunchOutcome operator()(const KernelContext& context) const {
    const std::uint8_t mix = value;
    const auto work = [mix](const std::vector<std::span<std::byte>>& outs,
                            const std::vector<std::span<const std::byte>>& ins, std::size_t half) {
      const std::byte first = !ins.empty() && !ins[0].empty() ? ins[0][0] : std::byte{0};
      for (std::size_t index = 0; index < outs.size(); ++index) {
        const std::size_t end = index == 0 && half != 0 ? half : outs[index].size();
        std::fill(outs[index].begin(), outs[index].begin() + static_cast<std::ptrdiff_t>(end),
                  static_cast<std::byte>(static_cast<std::uint8_t>(first) + mix));
      }
    };
    std::vector<std::span<std::byte>> outs;
    std::vector<std::span<const std::byte>> ins;
    for (std::size_t index = 0; index < context.writes(); ++index) {
      outs.push_back(context.write(index));
    }
    for (std::size_t index = 0; index < context.reads(); ++index) {
      ins.push_back(context.read(index));
    }
    const std::size_t half =
        (kind == 3 || kind == 4) && !outs.empty() ? (outs[0].size() + 1) / 2 : 0;
    if (kind == 3 || kind == 4) {
      outs.resize(std::min<std::size_t>(outs.size(), 1));
    }
    if (kind != 1 && kind != 2) {
      if (rig->queue != nullptr) {
        rig->queue->enqueue(context, [work, outs, ins, half] { work(outs, ins, half); });
      } else {
        work(outs, ins, half);
      }
    }
    switch (kind) {
    case 1:
      return LaunchOutcome::failure(Error::launch("the body failed"));
    case 2:
      throw std::runtime_error("the body threw");
    case 3:
      if (context.writes() == 0) {
        return LaunchOutcome::success();
      }
      return LaunchOutcome::wrote_only({WrittenRange{0, ByteRange::of(0, half)}});
    case 4:
      if (context.writes() == 0) {
        return LaunchOutcome::failure(Error::launch("the body failed"));
      }
      return LaunchOutcome::partial(Error::launch("the body failed part way"),
                                    {WrittenRange{0, ByteRange::of(0, half)}});
    default:
      return LaunchOutcome::success();
    }
  }
};

/// Every buffer ever made (live or not), read whole, and the counters.
std::string observe(Rig& rig, const std::vector<AllocationId>& ids,
                    const std::vector<std::uint64_t>& sizes) {
  std::string text;
  for (std::size_t index = 0; index < ids.size(); ++index) {
    text += std::to_string(index) + ": " + answer([&] {
              std::vector<std::byte> bytes(static_cast<std::size_t>(sizes[index]));
              const ReadOutcome outcome =
                  rig.device->read(Binding{ids[index], ByteRange::of(0, sizes[index])}, bytes);
              if (!outcome.ok()) {
                return "stale: " + to_string(outcome);
              }
              std::string seen = "bytes";
              for (const std::byte byte : bytes) {
                seen += " " + std::to_string(static_cast<int>(byte));
              }
              return seen;
            }) +
            "\n";
  }
  text += describe(rig.device->stream_stats());
  text += " graph " + std::to_string(rig.device->graph().size());
  rig.device->check_invariants();
  return text;
}

/// Runs the program on a fresh rig, with plain launches (`planned` false)
/// or through plans, and returns what it saw.
std::vector<std::string> run_program(RigKind kind, const std::vector<std::uint32_t>& program,
                                     bool planned) {
  std::vector<std::string> seen;
  Rig rig(kind);
  Device& device = *rig.device;
  std::vector<AllocationId> ids;
  std::vector<std::uint64_t> sizes;
  std::vector<Allocation> user;
  std::vector<PlanRecord> plans;
  // A handle of `id`, as Device::plan takes one: the user's, one a plan
  // record holds, or else a share of the allocation (a stream's pin may be
  // all that keeps a dropped buffer live, O3: a launch binds it then, and a
  // plan holds it).
  const auto find_handle = [&](AllocationId id) -> Allocation {
    for (const Allocation& handle : user) {
      if (handle && handle.id() == id) {
        return handle;
      }
    }
    for (const PlanRecord& record : plans) {
      for (const Allocation& handle : record.held) {
        if (handle && handle.id() == id) {
          return handle;
        }
      }
    }
    return device.memory().share(id);
  };
  const auto pick_binding = [&](Words& words) {
    const std::uint32_t which = words.next();
    const std::size_t buffer = which % ids.size();
    // Mostly inside the buffer; now and then past its end (P3).
    const std::uint64_t size = sizes[buffer];
    const std::uint32_t shape = words.next();
    std::uint64_t begin = (shape % 10 == 0) ? (shape >> 4) % 48 : (shape >> 4) % (size + 1);
    std::uint64_t length = (shape >> 10) % 40;
    if (shape % 10 != 0) {
      length = length % (size - std::min(begin, size) + 1);
    }
    return Binding{ids[buffer], ByteRange::of(begin, begin + length)};
  };
  // Three buffers to start with, one per stream where there are three.
  for (std::size_t index = 0; index < 3; ++index) {
    Allocation made = device.create_buffer(16, rig.streams[index % rig.streams.size()]);
    ids.push_back(made.id());
    sizes.push_back(16);
    user.push_back(std::move(made));
  }
  Words words(program);
  int step = 0;
  while (!words.done() && step++ < 120) {
    const std::uint32_t word = words.next();
    const std::uint32_t a = words.next();
    const std::uint32_t b = words.next();
    const StreamId stream = rig.streams[b % rig.streams.size()];
    // Launches and plans most often: what a cached resolution could get wrong.
    constexpr std::uint32_t ops[16] = {0, 0, 1, 2, 2, 3, 4, 4, 4, 5, 5, 5, 6, 6, 7, 7};
    const std::uint32_t op = ops[word % 16];
    switch (op) {
    case 0: { // Make a buffer.
      if (ids.size() >= 10) {
        break;
      }
      const std::uint64_t size = 8 + (a % 4) * 8;
      Allocation made = device.create_buffer(size, stream);
      ids.push_back(made.id());
      sizes.push_back(size);
      user.push_back(std::move(made));
      seen.push_back("made " + to_string(ids.back()));
      break;
    }
    case 1: // Drop the user's handle (a plan may still hold the buffer).
      if (!user.empty()) {
        user[a % user.size()] = Allocation();
        seen.push_back("dropped " + std::to_string(a % user.size()));
      }
      break;
    case 2: { // Make a plan.
      if (ids.empty()) {
        break;
      }
      PlanRecord record;
      record.stream = stream;
      for (std::uint32_t count = a % 3; count > 0; --count) {
        record.reads.push_back(pick_binding(words));
      }
      for (std::uint32_t count = (a >> 2) % 3; count > 0; --count) {
        record.writes.push_back(pick_binding(words));
      }
      seen.push_back("plan: " + answer([&] {
                       if (planned) {
                         record.plan = device.plan(stream, record.reads, record.writes);
                       } else {
                         // The same sweep first, even for a plan of no
                         // binding (the order dropped buffers return to
                         // the pool decides where the next one is placed,
                         // and so what its trusted fresh bytes hold), then
                         // the same checks (P3).
                         device.memory().sweep();
                         std::vector<Binding> all = record.reads;
                         all.insert(all.end(), record.writes.begin(), record.writes.end());
                         static_cast<void>(device.awaits_verdict(all));
                         for (const Binding& binding : all) {
                           record.held.push_back(find_handle(binding.allocation));
                         }
                       }
                       record.live = true;
                       return std::string("made");
                     }));
      // At most 6 records: a new one takes the place of a dead one, or of
      // the oldest (which is dropped then, as by case 3).
      if (plans.size() < 6) {
        plans.push_back(std::move(record));
      } else {
        const auto dead = std::find_if(plans.begin(), plans.end(),
                                       [](const PlanRecord& old) { return !old.live; });
        *(dead != plans.end() ? dead
                              : plans.begin() + static_cast<std::ptrdiff_t>(b % plans.size())) =
            std::move(record);
      }
      break;
    }
    case 3: // Drop a plan (its buffers may end now, P1).
      if (!plans.empty()) {
        PlanRecord& record = plans[a % plans.size()];
        record.held.clear();
        record.plan = LaunchPlan();
        record.live = false;
      }
      break;
    case 4:
    case 5: { // Launch through a plan (launch or submit), or plainly with its bindings.
      std::vector<std::size_t> live;
      for (std::size_t index = 0; index < plans.size(); ++index) {
        if (plans[index].live) {
          live.push_back(index);
        }
      }
      if (live.empty()) {
        break;
      }
      const PlanRecord& record = plans[live[a % live.size()]];
      const BodyState body{&rig, (b >> 4) % 5, static_cast<std::uint8_t>(b >> 8)};
      const bool via_submit = op == 5;
      seen.push_back("launch: " + answer([&] {
                       if (via_submit) {
                         LaunchVerdict verdict =
                             planned ? device.submit(record.plan, "k", body)
                                     : device.submit(record.stream, "k", record.reads,
                                                     record.writes, body);
                         return describe(verdict.take());
                       }
                       return describe(planned ? device.launch(record.plan, "k", body)
                                               : device.launch(record.stream, "k", record.reads,
                                                               record.writes, body));
                     }));
      break;
    }
    case 6: { // Taint or repair a buffer's bytes, plainly on both sides.
      if (ids.empty()) {
        break;
      }
      const Binding binding = pick_binding(words);
      const BodyState body{&rig, a % 2, static_cast<std::uint8_t>(a >> 8)};
      const Binding writes[] = {binding};
      seen.push_back("plain: " + answer([&] {
                       return describe(device.launch(stream, "t", {}, writes, body));
                     }));
      break;
    }
    default:
      if (rig.queue != nullptr) {
        for (std::uint32_t count = a % 4; count > 0 && rig.queue->step(); --count) {
        }
      }
      seen.push_back(observe(rig, ids, sizes));
      break;
    }
  }
  seen.push_back(observe(rig, ids, sizes));
  return seen;
}

RC_GTEST_PROP(LaunchPlan, S1_S6_P3_O1_O4_N1_ALaunchThroughAPlanAnswersAsThePlainLaunchDoes, ()) {
  // Every rig alike, and programs long from the first case (RapidCheck's
  // size would keep most of them short): a plan is worth testing only
  // after many launches and changes around it.
  const int kind = *rc::gen::elementOf(std::vector<int>{0, 1, 2, 3, 4});
  const auto program = *rc::gen::resize(
      360, rc::gen::container<std::vector<std::uint32_t>>(rc::gen::arbitrary<std::uint32_t>()));
  const std::vector<std::string> plain = run_program(static_cast<RigKind>(kind), program, false);
  const std::vector<std::string> through_plans =
      run_program(static_cast<RigKind>(kind), program, true);
  RC_ASSERT(plain == through_plans);
}

// ------------------------------------------------------------ the edges

/// One plan's edge-test rig: a Device on HostBackend, an 8-byte input
/// written with 1s and an output of `out_size` bytes, bound whole.
struct InToOut {
  explicit InToOut(std::uint64_t out_size)
      : out(device.create_buffer(out_size)) {
    device.write(in.whole(), std::vector<std::byte>(8, std::byte{1}));
  }

  HostBackend backend;
  Device device{backend};
  Allocation in = device.create_buffer(8);
  Allocation out;
  std::array<Binding, 1> reads{in.whole()};
  std::array<Binding, 1> writes{out.whole()};
};

TEST(LaunchPlan, P3_APlanOfABadBindingThrowsAsALaunchWouldAndHoldsNothing) {
  HostBackend backend;
  Device device(backend);
  Allocation buffer = device.create_buffer(16);
  const Binding past_end{buffer.id(), ByteRange::of(8, 17)};
  const Binding reads[] = {past_end};
  try {
    static_cast<void>(device.plan(reads, {}));
    FAIL() << "a range past the end was planned";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidBinding);
  }
  const Binding whole = buffer.whole();
  const AllocationId id = buffer.id();
  buffer = Allocation(); // Dropped: nothing holds it, so the plan must not.
  const Binding writes[] = {whole};
  try {
    static_cast<void>(device.plan({}, writes));
    FAIL() << "a dropped buffer was planned";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::NotFound);
  }
  EXPECT_FALSE(device.memory().contains(id));
  EXPECT_EQ(device.memory().stats().allocations, 0u);
}

TEST(LaunchPlan, P1_ABufferDroppedUnderItsPlanLivesUntilThePlanGoes) {
  HostBackend backend;
  Device device(backend);
  Allocation in = device.create_buffer(std::vector<std::byte>(16, std::byte{7}));
  Allocation out = device.create_buffer(16);
  const Binding in_whole = in.whole();
  const Binding out_whole = out.whole();
  const Binding reads[] = {in_whole};
  const Binding writes[] = {out_whole};
  std::optional<LaunchPlan> plan = device.plan(reads, writes);
  in = Allocation();
  out = Allocation();
  device.sweep();
  const auto copy = [](const KernelContext& context) {
    std::copy(context.read(0).begin(), context.read(0).end(), context.write(0).begin());
    return LaunchOutcome::success();
  };
  EXPECT_EQ(device.launch(*plan, "copy", copy).status, LaunchStatus::Ran);
  EXPECT_EQ(device.read_bytes(out_whole), std::vector<std::byte>(16, std::byte{7}));
  EXPECT_EQ(device.memory().stats().allocations, 2u);
  plan.reset(); // The last handles go with the plan (P1).
  device.sweep();
  EXPECT_EQ(device.memory().stats().allocations, 0u);
  try {
    static_cast<void>(device.read_bytes(out_whole));
    FAIL() << "a buffer outlived its plan";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::NotFound);
  }
}

TEST(LaunchPlan, S1_ATaintedReadThroughAPlanSkipsAndARepairedOneRunsAgain) {
  HostBackend backend;
  Device device(backend);
  const Allocation in = device.create_buffer(16);
  const Allocation out = device.create_buffer(16);
  const Binding in_writes[] = {in.whole()};
  const LaunchResult failed = device.launch("load", {}, in_writes, [](const KernelContext&) {
    return LaunchOutcome::failure(Error::launch("bad config"));
  });
  ASSERT_EQ(failed.status, LaunchStatus::Failed);
  const Binding reads[] = {in.whole()};
  const Binding writes[] = {out.whole()};
  const LaunchPlan plan = device.plan(reads, writes);
  bool ran = false;
  const auto body = [&ran](const KernelContext& context) {
    ran = true;
    return fill_all(context, 5);
  };
  const LaunchResult skipped = device.launch(plan, "use", body);
  EXPECT_EQ(skipped.status, LaunchStatus::Skipped);
  EXPECT_FALSE(ran);
  EXPECT_EQ(skipped.failure, failed.failure); // S4: the root, no new failure.
  std::vector<std::byte> into(16);
  EXPECT_FALSE(device.read(out.whole(), into).ok());
  // S5: a host write repairs the input; the same plan then runs (T2).
  static_cast<void>(device.write(in.whole(), std::vector<std::byte>(16, std::byte{1})));
  EXPECT_TRUE(device.submit(plan, "use", body).ran());
  EXPECT_TRUE(ran);
  EXPECT_EQ(device.read_bytes(out.whole()), std::vector<std::byte>(16, std::byte{5}));
}

TEST(LaunchPlan, S3_ABodyThatThrowsThroughAPlanLeavesItsOutputsTornDown) {
  HostBackend backend;
  Device device(backend);
  const Allocation out = device.create_buffer(16);
  const Binding writes[] = {out.whole()};
  const LaunchPlan plan = device.plan({}, writes);
  EXPECT_THROW(static_cast<void>(device.launch(plan, "boom",
                                               [](const KernelContext&) -> LaunchOutcome {
                                                 throw std::runtime_error("boom");
                                               })),
               std::runtime_error);
  std::vector<std::byte> into(16);
  const ReadOutcome stale = device.read(out.whole(), into);
  ASSERT_EQ(stale.reports.size(), 1u);
  EXPECT_NE(to_string(stale).find("boom"), std::string::npos);
  device.check_invariants();
}

TEST(LaunchPlan, S2_AFailedBodyThroughACleanPlanClaimsAllButTheBytesItReportsWritten) {
  // The clean plan's views are adopted only where a launch leaves the plain
  // path (device.cpp, adopt_views): a failed body is such a place, and the
  // claim it makes must land on the plan's outputs, bytes it names excepted.
  InToOut rig(16);
  Device& device = rig.device;
  const Allocation& out = rig.out;
  const LaunchPlan plan = device.plan(rig.reads, rig.writes);
  ASSERT_TRUE(
      device.launch(plan, "fill", [](const KernelContext& context) { return fill_all(context, 7); })
          .ran());
  const LaunchResult failed = device.launch(plan, "half", [](const KernelContext& context) {
    static_cast<void>(fill_all(context, 9));
    return LaunchOutcome::partial(Error::launch("half done"), {{0, ByteRange::of(0, 4)}});
  });
  EXPECT_EQ(failed.status, LaunchStatus::Failed);
  ASSERT_TRUE(failed.failure.has_value());
  EXPECT_EQ(device.read_bytes(out.bind(0, 4)), std::vector<std::byte>(4, std::byte{9}));
  std::vector<std::byte> rest(12);
  const ReadOutcome stale = device.read(out.bind(4, 12), rest);
  ASSERT_EQ(stale.reports.size(), 1u);
  EXPECT_NE(to_string(stale).find("half done"), std::string::npos);
  device.check_invariants();
}

TEST(LaunchPlan, O1_ABindingThatCrossesStreamsWaitsOnceThroughAPlanAsPlainly) {
  for (const bool planned : {false, true}) {
    DeferredHostBackend backend;
    Device device(backend);
    const StreamId producer = device.create_stream();
    const StreamId consumer = device.create_stream();
    const Allocation shared = device.create_buffer(64, producer);
    const Allocation out = device.create_buffer(64, consumer);
    const Binding shared_whole[] = {shared.whole()};
    const Binding out_whole[] = {out.whole()};
    const auto produce = [&backend](const KernelContext& context) {
      const std::span<std::byte> bytes = context.write(0);
      backend.enqueue(context, [bytes] { std::fill(bytes.begin(), bytes.end(), std::byte{9}); });
      return LaunchOutcome::success();
    };
    const auto consume = [&backend](const KernelContext& context) {
      const std::span<const std::byte> in = context.read(0);
      const std::span<std::byte> bytes = context.write(0);
      backend.enqueue(context, [in, bytes] { std::copy(in.begin(), in.end(), bytes.begin()); });
      return LaunchOutcome::success();
    };
    const LaunchPlan produce_plan = device.plan(producer, {}, shared_whole);
    const LaunchPlan consume_plan = device.plan(consumer, shared_whole, out_whole);
    for (int round = 0; round < 3; ++round) {
      if (planned) {
        EXPECT_TRUE(device.launch(produce_plan, "produce", produce).ran());
        EXPECT_TRUE(device.submit(consume_plan, "consume", consume).ran());
      } else {
        EXPECT_TRUE(device.launch(producer, "produce", {}, shared_whole, produce).ran());
        EXPECT_TRUE(device.submit(consumer, "consume", shared_whole, out_whole, consume).ran());
      }
    }
    // O1: each consume waits for the produce before it (one wait each); and
    // each produce after the first waits for the consume that read (WAR).
    const StreamStats stats = device.stream_stats();
    EXPECT_EQ(stats.waits_inserted, 5u) << (planned ? "planned" : "plain");
    EXPECT_EQ(device.read_bytes(out.whole()), std::vector<std::byte>(64, std::byte{9}));
    device.check_invariants();
  }
}

TEST(LaunchPlan, O4_ARaceThroughAPlanIsReportedAsPlainly) {
  std::string seen[2];
  for (const bool planned : {false, true}) {
    DeferredHostBackend backend;
    DeviceOptions options;
    options.ordering = StreamOrdering::Detect;
    Device device(backend, options);
    const StreamId first = device.create_stream();
    const StreamId second = device.create_stream();
    const Allocation shared = device.create_buffer(32, first);
    const Allocation out = device.create_buffer(32, second);
    const Binding shared_whole[] = {shared.whole()};
    const Binding out_whole[] = {out.whole()};
    const LaunchPlan writer = device.plan(first, {}, shared_whole);
    const LaunchPlan reader = device.plan(second, shared_whole, out_whole);
    const auto body = [](const KernelContext& context) { return fill_all(context, 2); };
    if (planned) {
      EXPECT_TRUE(device.launch(writer, "write", body).ran());
      static_cast<void>(device.launch(reader, "read", body));
    } else {
      EXPECT_TRUE(device.launch(first, "write", {}, shared_whole, body).ran());
      static_cast<void>(device.launch(second, "read", shared_whole, out_whole, body));
    }
    EXPECT_EQ(device.stream_stats().races_detected, 1u);
    std::vector<std::byte> into(32);
    const ReadOutcome outcome = device.read(out.whole(), into);
    ASSERT_FALSE(outcome.ok());
    EXPECT_EQ(outcome.reports.front().root.kind(), ErrorKind::Race);
    seen[planned ? 1 : 0] = to_string(outcome);
  }
  EXPECT_EQ(seen[0], seen[1]);
}

TEST(LaunchPlan, N1_AFreshBuffersFirstWriteThroughAPlanReleasesItsBytes) {
  HostBackend backend;
  DeviceOptions options;
  MemoryConfig config;
  config.fresh_bytes = FreshBytes::NeverWritten;
  options.memory = config;
  Device device(backend, options);
  const Allocation out = device.create_buffer(16);
  std::vector<std::byte> into(16);
  EXPECT_FALSE(device.read(out.whole(), into).ok()); // N1
  const Binding half[] = {Binding{out.id(), ByteRange::of(0, 8)}};
  const LaunchPlan plan = device.plan({}, half);
  EXPECT_TRUE(
      device.launch(plan, "half", [](const KernelContext& context) { return fill_all(context, 4); })
          .ran());
  EXPECT_EQ(device.read_bytes(half[0]), std::vector<std::byte>(8, std::byte{4}));
  EXPECT_FALSE(device.read(out.whole(), into).ok()); // The rest: never written.
  device.check_invariants();
}

TEST(LaunchPlan, P3_ALaunchThroughAPlanOfADestroyedStreamIsNotFound) {
  DeferredHostBackend backend;
  Device device(backend);
  const StreamId stream = device.create_stream();
  const Allocation out = device.create_buffer(16, stream);
  const Binding writes[] = {out.whole()};
  const LaunchPlan plan = device.plan(stream, {}, writes);
  device.destroy_stream(stream);
  try {
    static_cast<void>(device.launch(plan, "late", succeed));
    FAIL() << "a launch on a destroyed stream ran";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::NotFound);
  }
  std::vector<std::byte> into(16);
  EXPECT_TRUE(device.read(out.whole(), into).ok()); // Nothing claimed.
}

TEST(LaunchPlan, AnotherDevicesOrAnEmptyPlanIsRefusedBeforeAnythingHappens) {
  HostBackend backend;
  Device device(backend);
  Device other(backend);
  const Allocation out = other.create_buffer(16);
  const Binding writes[] = {out.whole()};
  LaunchPlan plan = other.plan({}, writes);
  EXPECT_THROW(static_cast<void>(device.launch(plan, "k", succeed)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(device.submit(LaunchPlan(), "k", succeed)), std::invalid_argument);
  const LaunchPlan taken = std::move(plan);
  EXPECT_FALSE(plan.valid()); // NOLINT(bugprone-use-after-move): the moved-from state is pinned.
  EXPECT_THROW(static_cast<void>(other.launch(plan, "k", succeed)), std::invalid_argument);
  EXPECT_TRUE(other.launch(taken, "k", succeed).ran());
  EXPECT_EQ(taken.writes().size(), 1u);
  EXPECT_EQ(taken.reads().size(), 0u);
}

TEST(LaunchPlan, ACopyOrAMoveOfAPlanBindsItsOwnArraysAfterTheOriginalGoes) {
  // A plan's context and views point into its own arrays (LaunchPlan::derive):
  // a copy must make its own, a move take them along, or a launch through
  // either would read freed memory once the original went (ASan sees it).
  InToOut rig(8);
  Device& device = rig.device;
  const Allocation& out = rig.out;
  std::optional<LaunchPlan> original(device.plan(rig.reads, rig.writes));
  const LaunchPlan copy = *original;
  LaunchPlan assigned;
  assigned = *original;
  LaunchPlan moved(std::move(*original));
  original.reset();
  std::uint8_t value = 1;
  for (const LaunchPlan* plan :
       std::initializer_list<const LaunchPlan*>{&copy, &assigned, &moved}) {
    EXPECT_EQ(plan->reads().size(), 1u);
    EXPECT_EQ(plan->writes().size(), 1u);
    EXPECT_EQ(plan->writes()[0].allocation, out.id());
    const LaunchResult result = device.launch(*plan, "copy", [&](const KernelContext& context) {
      EXPECT_EQ(context.read(0)[0], std::byte{1});
      return fill_all(context, value);
    });
    EXPECT_TRUE(result.ran());
    EXPECT_EQ(device.read_bytes(out.whole()), std::vector<std::byte>(8, std::byte{value}));
    ++value;
  }
  device.check_invariants();
}

TEST(LaunchPlan, ABodyThroughAPlanSeesItsOwnLaunchsNumberAndNameBesidePlainLaunches) {
  // A clean launch through a plan hands its body the plan's own context,
  // set to the launch's number and name in place (launch_plan.hpp): every
  // body must see its launch's, not the previous one's, through the plan,
  // its copy, submit and the plain launches numbered in between — and the
  // plan's bindings, stream and backend data, which no launch changes.
  InToOut rig(8);
  Device& device = rig.device;
  const LaunchPlan plan = device.plan(rig.reads, rig.writes);
  const LaunchPlan copy = plan;
  struct Seen {
    std::uint64_t launch = 0;
    std::string kernel;
  };
  std::vector<Seen> seen;
  const auto observe = [&](const KernelContext& context) {
    seen.push_back(Seen{context.launch(), std::string(context.kernel())});
    EXPECT_EQ(context.reads(), 1u);
    EXPECT_EQ(context.writes(), 1u);
    EXPECT_EQ(context.read_binding(0).allocation, rig.in.id());
    EXPECT_EQ(context.write_binding(0).allocation, rig.out.id());
    EXPECT_EQ(context.stream(), device.default_stream());
    EXPECT_EQ(context.backend_data(), nullptr) << "the host backend passes none";
    return fill_all(context, static_cast<std::uint8_t>(seen.size()));
  };
  const std::vector<std::string> names = {"plan", "copy", "plain", "submitted", "plan again", ""};
  EXPECT_TRUE(device.launch(plan, names[0], observe).ran());
  EXPECT_TRUE(device.launch(copy, names[1], observe).ran());
  EXPECT_TRUE(device.launch(names[2], rig.reads, rig.writes, observe).ran());
  EXPECT_TRUE(device.submit(plan, names[3], observe).ran());
  EXPECT_TRUE(device.launch(plan, names[4], observe).ran());
  EXPECT_TRUE(device.submit(copy, names[5], observe).ran());
  ASSERT_EQ(seen.size(), names.size());
  for (std::size_t at = 0; at < seen.size(); ++at) {
    EXPECT_EQ(seen[at].kernel, names[at]) << "launch " << at;
    EXPECT_EQ(seen[at].launch, seen[0].launch + at) << "launch " << at;
  }
  EXPECT_EQ(device.read_bytes(rig.out.whole()), std::vector<std::byte>(8, std::byte{6}));
  device.check_invariants();
}

TEST(LaunchPlan, APlanThatOutlivedItsDeviceIsRefusedByTheNextOneEvenAtTheSameAddress) {
  HostBackend backend;
  std::optional<Device> device;
  device.emplace(backend);
  LaunchPlan plan;
  {
    const Allocation out = device->create_buffer(16);
    const Binding writes[] = {out.whole()};
    plan = device->plan({}, writes);
  }
  device.reset(); // The plan's handles outlive their manager, as any handle may.
  device.emplace(backend);
  EXPECT_THROW(static_cast<void>(device->launch(plan, "k", succeed)), std::invalid_argument);
  EXPECT_TRUE(device->graph().empty());
}

TEST(LaunchPlan, G10_ALaunchThroughAPlanAllocatesNothingOnceWarm) {
  HostBackend backend;
  Device device(backend);
  const testing::ScopeShape shape(device);
  const LaunchPlan plan = device.plan(shape.reads, shape.writes);
  for (int warm = 0; warm < 16; ++warm) {
    static_cast<void>(device.launch(plan, "k", succeed));
    static_cast<void>(device.submit(plan, "k", succeed));
  }
  std::uint64_t ran = 0;
  const std::uint64_t allocations = testing::allocations_during([&] {
    for (int at = 0; at < 1000; ++at) {
      ran += device.launch(plan, "k", succeed).ran() ? 1u : 0u;
      ran += device.submit(plan, "k", succeed).ran() ? 1u : 0u;
    }
  });
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(ran, 2000u);
  EXPECT_TRUE(device.graph().empty());
}

} // namespace
} // namespace taintpool
