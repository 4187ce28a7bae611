// Pins: Device::submit() and the plain launch path (issue 11, item 7).
//
// submit() is launch() with a one-pointer answer (LaunchVerdict), and both
// now go through the flat plain path first, which hands every launch that
// is not plain — a stale read, an output holding a claim, a binding that
// crosses streams, a body that fails, names what it wrote, or throws — to
// the general scope. What must hold: the two entry points answer the same
// and leave the same state, on every path (S1-S6, O1, O3, N1-N2, G1).
//
// Why this shape: each test runs one script twice, on two fresh Devices,
// once through launch() and once through submit(), and compares everything
// a user can observe — each launch's LaunchResult field by field, every
// buffer's reports or bytes, the failure ids minted (G1: the same sequence)
// and the graph's size. A divergence on any path fails the test that names
// the path. The scripts also assert what the rule says, so a change that
// broke both entry points alike fails too.
#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/testing/heap_allocations.hpp>
#include <taintpool/testing/launch_answer_text.hpp>
#include <taintpool/testing/scope_shape.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace taintpool {
namespace {

/// Fills every output with `value`.
LaunchOutcome fill_all(const KernelContext& context, std::uint8_t value) {
  for (std::size_t index = 0; index < context.writes(); ++index) {
    std::fill(context.write(index).begin(), context.write(index).end(),
              static_cast<std::byte>(value));
  }
  return LaunchOutcome::success();
}

/// One launch through either entry point.
using Launcher =
    std::function<LaunchResult(Device&, StreamId, std::string_view, std::span<const Binding>,
                               std::span<const Binding>, KernelBody)>;

LaunchResult via_launch(Device& device, StreamId stream, std::string_view kernel,
                        std::span<const Binding> reads, std::span<const Binding> writes,
                        KernelBody body) {
  return device.launch(stream, kernel, reads, writes, body);
}

LaunchResult via_submit(Device& device, StreamId stream, std::string_view kernel,
                        std::span<const Binding> reads, std::span<const Binding> writes,
                        KernelBody body) {
  LaunchVerdict verdict = device.submit(stream, kernel, reads, writes, body);
  const LaunchStatus status = verdict.status();
  EXPECT_EQ(verdict.result().status, status);
  EXPECT_EQ(verdict.ran(), status == LaunchStatus::Ran);
  LaunchResult result = verdict.take();
  EXPECT_EQ(result.status, status);
  EXPECT_EQ(verdict.status(), LaunchStatus::Ran); // Taken: a bare Ran is left.
  return result;
}

using testing::describe;

/// Every buffer's bytes or reports, and the graph's size.
std::string observe(Device& device, const std::vector<Allocation>& buffers) {
  std::string text;
  for (const Allocation& buffer : buffers) {
    std::vector<std::byte> bytes(static_cast<std::size_t>(buffer.size()));
    const ReadOutcome outcome = device.read(buffer.whole(), bytes);
    if (outcome.ok()) {
      text += to_string(buffer.id()) + " bytes";
      for (const std::byte byte : bytes) {
        text += " " + std::to_string(static_cast<int>(byte));
      }
    } else {
      text += to_string(buffer.id()) + " stale: " + to_string(outcome);
    }
    text += "\n";
  }
  text += "graph " + std::to_string(device.graph().size());
  device.check_invariants();
  return text;
}

/// A script: given a Device and a launcher, makes buffers, launches, and
/// returns the buffers to observe and each launch's answer (appended).
using Script =
    std::function<std::vector<Allocation>(Device&, const Launcher&, std::vector<std::string>&)>;

/// Runs `script` on two fresh Devices built by `make`, through launch() and
/// through submit(), and requires the same answers and the same state.
template <class Rig>
void expect_same(const Script& script) {
  std::string seen[2];
  std::vector<std::string> answers[2];
  for (int via = 0; via < 2; ++via) {
    Rig rig;
    const std::vector<Allocation> buffers =
        script(rig.device, via == 0 ? Launcher(via_launch) : Launcher(via_submit), answers[via]);
    seen[via] = observe(rig.device, buffers);
  }
  EXPECT_EQ(answers[0], answers[1]);
  EXPECT_EQ(seen[0], seen[1]);
}

struct HostRig {
  HostBackend backend;
  Device device{backend};
};

struct DeferredRig {
  DeferredHostBackend backend;
  Device device{backend};
};

struct NeverWrittenReportRig {
  static DeviceOptions options() {
    DeviceOptions options;
    MemoryConfig config;
    config.fresh_bytes = FreshBytes::NeverWritten;
    options.memory = config;
    options.unwritten_reads = UnwrittenReads::Report;
    return options;
  }
  HostBackend backend;
  Device device{backend, options()};
};

std::span<const Binding> none() {
  return {};
}

TEST(Submit, G10_APlainLaunchRanAndTheVerdictCarriesNothing) {
  HostRig rig;
  const Allocation a = rig.device.create_buffer(16);
  const Allocation out = rig.device.create_buffer(16);
  const Binding reads[] = {a.whole()};
  const Binding writes[] = {out.whole()};
  const LaunchVerdict verdict = rig.device.submit(
      "fill", reads, writes, [](const KernelContext& context) { return fill_all(context, 3); });
  EXPECT_TRUE(verdict.ran());
  EXPECT_EQ(verdict.status(), LaunchStatus::Ran);
  EXPECT_FALSE(verdict.result().failure.has_value());
  EXPECT_FALSE(verdict.result().error.has_value());
  EXPECT_EQ(rig.device.read_bytes(out.whole()), std::vector<std::byte>(16, std::byte{3}));
  EXPECT_TRUE(rig.device.graph().empty()); // G5: the provisional id went.
}

TEST(Submit, G10_APlainLaunchThroughEitherEntryPointAllocatesNothingOnceWarm) {
  HostRig rig;
  const testing::ScopeShape shape(rig.device);
  const auto body = [](const KernelContext&) { return LaunchOutcome::success(); };
  for (int warm = 0; warm < 16; ++warm) {
    static_cast<void>(rig.device.launch("k", shape.reads, shape.writes, body));
    static_cast<void>(rig.device.submit("k", shape.reads, shape.writes, body));
  }
  std::uint64_t ran = 0;
  const std::uint64_t allocations = testing::allocations_during([&] {
    for (int at = 0; at < 1000; ++at) {
      ran += rig.device.launch("k", shape.reads, shape.writes, body).ran() ? 1u : 0u;
      ran += rig.device.submit("k", shape.reads, shape.writes, body).ran() ? 1u : 0u;
    }
  });
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(ran, 2000u);
  EXPECT_TRUE(rig.device.graph().empty());
}

TEST(Submit, S1_AStaleReadIsSkippedExactlyAsLaunchSkipsIt) {
  expect_same<HostRig>([](Device& device, const Launcher& go, std::vector<std::string>& answers) {
    const Allocation in = device.create_buffer(32);
    const Allocation out = device.create_buffer(32);
    const Binding in_whole[] = {in.whole()};
    const Binding out_whole[] = {out.whole()};
    answers.push_back(describe(
        go(device, device.default_stream(), "load", none(), in_whole, [](const KernelContext&) {
          return LaunchOutcome::failure(Error::launch("bad config"));
        })));
    bool ran = false;
    const LaunchResult skipped =
        go(device, device.default_stream(), "use", in_whole, out_whole, [&](const KernelContext&) {
          ran = true;
          return LaunchOutcome::success();
        });
    EXPECT_FALSE(ran);
    EXPECT_EQ(skipped.status, LaunchStatus::Skipped);
    EXPECT_EQ(skipped.needed, in.id());
    answers.push_back(describe(skipped));
    return std::vector<Allocation>{in, out};
  });
}

// The plain path reads a read binding's claims only when its taint holds
// one (Taint::is_clean first, the claims out of line): a claim elsewhere in
// the buffer must not skip the launch, and one on a bound byte must.
TEST(Submit, S1_AReadIsSkippedOnlyWhenAClaimOfItsBufferLiesInsideItsBinding) {
  expect_same<HostRig>([](Device& device, const Launcher& go, std::vector<std::string>& answers) {
    const Allocation in = device.create_buffer(32);
    const Allocation out = device.create_buffer(32);
    const Binding head[] = {in.bind(0, 16)};
    const Binding tail[] = {in.bind(16, 16)};
    const Binding across[] = {in.bind(8, 16)};
    const Binding out_whole[] = {out.whole()};
    answers.push_back(describe(
        go(device, device.default_stream(), "load", none(), head, [](const KernelContext&) {
          return LaunchOutcome::failure(Error::launch("bad config"));
        })));
    int ran = 0;
    const auto count = [&](const KernelContext& context) {
      ++ran;
      return fill_all(context, 5);
    };
    const LaunchResult clean = go(device, device.default_stream(), "tail", tail, out_whole, count);
    EXPECT_EQ(clean.status, LaunchStatus::Ran);
    answers.push_back(describe(clean));
    const LaunchResult stale =
        go(device, device.default_stream(), "across", across, out_whole, count);
    EXPECT_EQ(stale.status, LaunchStatus::Skipped);
    EXPECT_EQ(stale.needed, in.id());
    answers.push_back(describe(stale));
    EXPECT_EQ(ran, 1);
    return std::vector<Allocation>{in, out};
  });
}

TEST(Submit, S2_AFailureWithWrittenRangesMatchesLaunch) {
  expect_same<HostRig>([](Device& device, const Launcher& go, std::vector<std::string>& answers) {
    const Allocation out = device.create_buffer(64);
    const Binding writes[] = {out.whole()};
    const LaunchResult result =
        go(device, device.default_stream(), "half", none(), writes, [](const KernelContext& c) {
          std::fill(c.write(0).begin(), c.write(0).begin() + 16, std::byte{9});
          return LaunchOutcome::partial(Error::launch("died"),
                                        {WrittenRange{0, ByteRange::of(0, 16)},
                                         WrittenRange{4, ByteRange::of(0, 1)}}); // Ignored.
        });
    EXPECT_EQ(result.status, LaunchStatus::Failed);
    EXPECT_TRUE(result.failure.has_value());
    answers.push_back(describe(result));
    const Binding head[] = {out.bind(0, 16)};
    const Binding copy_to[] = {out.bind(32, 16)};
    answers.push_back(describe(go(device, device.default_stream(), "copy", head, copy_to,
                                  [](const KernelContext& c) { return fill_all(c, 1); })));
    return std::vector<Allocation>{out};
  });
}

TEST(Submit, S1_AFailedBodyOnAnEmptyWriteSetIsReportedOnlyAsLaunchReportsIt) {
  expect_same<HostRig>([](Device& device, const Launcher& go, std::vector<std::string>& answers) {
    const Allocation in = device.create_buffer(8);
    const Binding reads[] = {in.whole()};
    const LaunchResult result =
        go(device, device.default_stream(), "check", reads, none(),
           [](const KernelContext&) { return LaunchOutcome::failure(Error::launch("nope")); });
    EXPECT_EQ(result.status, LaunchStatus::Failed);
    EXPECT_FALSE(result.failure.has_value()); // Nothing claimed, nothing left.
    answers.push_back(describe(result));
    return std::vector<Allocation>{in};
  });
}

TEST(Submit, S3_ABodyThatThrowsLeavesTheWriteSetTornDownAsLaunchDoes) {
  expect_same<HostRig>([](Device& device, const Launcher& go, std::vector<std::string>& answers) {
    const Allocation out = device.create_buffer(16);
    const Binding writes[] = {out.whole()};
    EXPECT_THROW(static_cast<void>(go(device, device.default_stream(), "boom", none(), writes,
                                      [](const KernelContext&) -> LaunchOutcome {
                                        throw std::runtime_error("kaboom");
                                      })),
                 std::runtime_error);
    const std::vector<Report> reports = device.stale_reports(out.whole());
    EXPECT_EQ(reports.size(), 1u);
    answers.push_back(reports.empty() ? "" : to_string(reports[0]));
    // The device is usable after: a relaunch repairs (S5).
    answers.push_back(describe(go(device, device.default_stream(), "fix", none(), writes,
                                  [](const KernelContext& c) { return fill_all(c, 4); })));
    return std::vector<Allocation>{out};
  });
}

TEST(Submit, S6_AWroteOnlySuccessKeepsTheUnnamedBytesAsLaunchDoes) {
  expect_same<HostRig>([](Device& device, const Launcher& go, std::vector<std::string>& answers) {
    const Allocation out = device.create_buffer(32);
    const Binding writes[] = {out.whole()};
    // Clean outputs (the plain path), then stale ones (the general path).
    for (int round = 0; round < 2; ++round) {
      answers.push_back(describe(
          go(device, device.default_stream(), "some", none(), writes, [](const KernelContext& c) {
            std::fill(c.write(0).begin(), c.write(0).begin() + 8, std::byte{5});
            return LaunchOutcome::wrote_only({WrittenRange{0, ByteRange::of(0, 8)}});
          })));
      answers.push_back(describe(
          go(device, device.default_stream(), "spoil", none(), writes, [](const KernelContext&) {
            return LaunchOutcome::failure(Error::launch("spoiled"));
          })));
    }
    return std::vector<Allocation>{out};
  });
}

TEST(Submit, S5_AStaleOutputIsRepairedThroughTheGeneralPathAsLaunchRepairsIt) {
  expect_same<HostRig>([](Device& device, const Launcher& go, std::vector<std::string>& answers) {
    const Allocation out = device.create_buffer(16);
    const Binding writes[] = {out.whole()};
    answers.push_back(describe(
        go(device, device.default_stream(), "spoil", none(), writes,
           [](const KernelContext&) { return LaunchOutcome::failure(Error::launch("x")); })));
    const LaunchResult fixed = go(device, device.default_stream(), "fix", none(), writes,
                                  [](const KernelContext& c) { return fill_all(c, 6); });
    EXPECT_TRUE(fixed.ran());
    answers.push_back(describe(fixed));
    return std::vector<Allocation>{out};
  });
}

TEST(Submit, O1_ACrossingBindingIsOrderedExactlyAsLaunchOrdersIt) {
  expect_same<DeferredRig>(
      [](Device& device, const Launcher& go, std::vector<std::string>& answers) {
        const StreamId s1 = device.create_stream();
        const StreamId s2 = device.create_stream();
        const Allocation x = device.create_buffer(16, s1);
        const Allocation y = device.create_buffer(16, s2);
        const Binding xs[] = {x.whole()};
        const Binding ys[] = {y.whole()};
        const std::uint64_t waits = device.stream_stats().waits_inserted;
        answers.push_back(describe(go(device, s1, "produce", none(), xs,
                                      [](const KernelContext& c) { return fill_all(c, 7); })));
        answers.push_back(describe(go(device, s2, "consume", xs, ys, [](const KernelContext& c) {
          std::copy(c.read(0).begin(), c.read(0).end(), c.write(0).begin());
          return LaunchOutcome::success();
        })));
        EXPECT_EQ(device.stream_stats().waits_inserted - waits, 1u); // O2: one wait.
        answers.push_back(std::to_string(device.stream_stats().waits_inserted - waits));
        EXPECT_EQ(device.read_bytes(y.whole()), std::vector<std::byte>(16, std::byte{7}));
        return std::vector<Allocation>{x, y};
      });
}

TEST(Submit, N2_ANeverWrittenReadIsReportedInTheVerdictAsInLaunchResult) {
  expect_same<NeverWrittenReportRig>(
      [](Device& device, const Launcher& go, std::vector<std::string>& answers) {
        const Allocation fresh = device.create_buffer(16);
        const Allocation out = device.create_buffer(16);
        const Binding reads[] = {fresh.bind(4, 8)};
        const Binding writes[] = {out.whole()};
        const LaunchResult result = go(device, device.default_stream(), "peek", reads, writes,
                                       [](const KernelContext& c) { return fill_all(c, 2); });
        EXPECT_TRUE(result.ran());
        EXPECT_EQ(result.unwritten.size(), 1u);
        answers.push_back(describe(result));
        return std::vector<Allocation>{out};
      });
}

TEST(Submit, G1_TheFailureIdsMintedAreTheSameThroughEitherEntryPoint) {
  expect_same<HostRig>([](Device& device, const Launcher& go, std::vector<std::string>& answers) {
    const Allocation out = device.create_buffer(8);
    const Binding writes[] = {out.whole()};
    for (int at = 0; at < 3; ++at) {
      static_cast<void>(go(device, device.default_stream(), "ok", none(), writes,
                           [](const KernelContext& c) { return fill_all(c, 1); }));
    }
    // The fourth scope's id: three ids were minted (and pruned) before it.
    answers.push_back(describe(
        go(device, device.default_stream(), "bad", none(), writes,
           [](const KernelContext&) { return LaunchOutcome::failure(Error::launch("4th")); })));
    return std::vector<Allocation>{out};
  });
}

TEST(Submit, G1_APlainSuccessMintsItsIdWithoutANodeAndAFailureAfterItGetsTheNextOne) {
  // The plain path mints a scope's provisional id but makes its node only
  // when the scope claims (ErrorGraph::reserve_provisional). Either way the
  // ids are those the general scope mints: with both inline slots free
  // (round 0), one held (round 1), and both held by live failures (round 2:
  // the node goes to the table).
  expect_same<HostRig>([](Device& device, const Launcher& go, std::vector<std::string>& answers) {
    const auto fails = [](const KernelContext&) {
      return LaunchOutcome::failure(Error::launch("lost"));
    };
    const auto fills = [](const KernelContext& c) { return fill_all(c, 7); };
    const Allocation clean = device.create_buffer(8);
    std::vector<Allocation> buffers{clean};
    for (std::size_t round = 0; round < 3; ++round) {
      EXPECT_EQ(device.graph().size(), round); // One live failure per round before.
      const Allocation lost = device.create_buffer(8);
      buffers.push_back(lost);
      const FailureId next = device.graph().next_id();
      const Binding ok_writes[] = {clean.whole()};
      const LaunchResult ok = go(device, device.default_stream(), "ok", none(), ok_writes, fills);
      EXPECT_EQ(ok.status, LaunchStatus::Ran);
      EXPECT_EQ(device.graph().next_id().raw(), next.raw() + 1); // G1: one id minted,
      EXPECT_EQ(device.graph().size(), round);                   // G5: and no node left.
      const Binding bad_writes[] = {lost.whole()};
      const LaunchResult bad =
          go(device, device.default_stream(), "bad", none(), bad_writes, fails);
      EXPECT_TRUE(bad.failure.has_value());
      EXPECT_EQ(bad.failure.value_or(next).raw(), next.raw() + 1);
      EXPECT_EQ(device.graph().size(), round + 1);
      answers.push_back(describe(ok));
      answers.push_back(describe(bad));
    }
    return buffers;
  });
}

TEST(Submit, P3_ABadBindingThrowsBeforeAnythingIsClaimedAsLaunchThrows) {
  HostRig rig;
  const Allocation a = rig.device.create_buffer(8);
  const Binding too_long[] = {Binding{a.id(), ByteRange::sized(0, 16)}}; // Past its end.
  bool ran = false;
  EXPECT_THROW(static_cast<void>(rig.device.submit("bad", none(), too_long,
                                                   [&](const KernelContext&) {
                                                     ran = true;
                                                     return LaunchOutcome::success();
                                                   })),
               Exception);
  EXPECT_FALSE(ran);
  EXPECT_TRUE(rig.device.graph().empty());
}

TEST(Submit, O5_SubmitFromABodyOnItsOwnDeviceIsRefused) {
  HostRig rig;
  const Allocation a = rig.device.create_buffer(8);
  const Binding writes[] = {a.whole()};
  EXPECT_THROW(
      static_cast<void>(rig.device.submit("outer", none(), writes,
                                          [&](const KernelContext&) {
                                            static_cast<void>(rig.device.submit(
                                                "inner", none(), writes, [](const KernelContext&) {
                                                  return LaunchOutcome::success();
                                                }));
                                            return LaunchOutcome::success();
                                          })),
      std::logic_error);
  EXPECT_FALSE(rig.device.stale_reports(a.whole()).empty()); // S3: torn down.
}

TEST(LaunchResult, S1_ADefaultResultIsAPlainRanWithNothingToReportInEveryForm) {
  // Its constructor is written out (launch.hpp: a defaulted one zero-filled
  // the whole struct with `rep stosq` on every plain launch()), so every
  // member's start is pinned here, in each way a caller may build one.
  const auto plain_ran = [](const LaunchResult& result) {
    return result.ran() && result.status == LaunchStatus::Ran && !result.failure.has_value() &&
           !result.needed.has_value() && !result.error.has_value() && result.unwritten.empty() &&
           result.unwritten.capacity() == 0;
  };
  const LaunchResult declared;
  const LaunchResult braced{};
  const LaunchResult parenthesized = LaunchResult();
  const auto on_heap = std::make_unique<LaunchResult>();
  EXPECT_TRUE(plain_ran(declared));
  EXPECT_TRUE(plain_ran(braced));
  EXPECT_TRUE(plain_ran(parenthesized));
  EXPECT_TRUE(plain_ran(*on_heap));
  LaunchResult filled;
  filled.status = LaunchStatus::Skipped;
  filled.failure = FailureId::from_raw(7);
  LaunchResult moved(std::move(filled));
  EXPECT_EQ(moved.status, LaunchStatus::Skipped);
  EXPECT_EQ(moved.failure, FailureId::from_raw(7));
}

// LaunchOutcome is one pointer, null for success() (the launch path's
// answer costs a store and a test); these pin that its four answers still
// say what they said, and that copies and moves hold no surprise.

TEST(LaunchOutcome, S1_SuccessIsWholeAndAllocatesNothing) {
  std::uint64_t whole = 0;
  const std::uint64_t allocations = testing::allocations_during([&] {
    const LaunchOutcome outcome = LaunchOutcome::success();
    whole += outcome.whole_success() && outcome.ok() && !outcome.wrote_only() &&
                     outcome.error() == nullptr && outcome.written().empty()
                 ? 1u
                 : 0u;
  });
  EXPECT_EQ(whole, 1u);
  EXPECT_EQ(allocations, 0u);
}

TEST(LaunchOutcome, S2_S6_EveryOtherAnswerIsNotWholeAndSaysWhatItWasGiven) {
  const LaunchOutcome only = LaunchOutcome::wrote_only({{0, ByteRange::of(0, 4)}});
  EXPECT_FALSE(only.whole_success());
  EXPECT_TRUE(only.ok());
  EXPECT_TRUE(only.wrote_only());
  EXPECT_EQ(only.error(), nullptr);
  ASSERT_EQ(only.written().size(), 1u);
  EXPECT_EQ(only.written()[0], (WrittenRange{0, ByteRange::of(0, 4)}));

  const LaunchOutcome failed = LaunchOutcome::failure(Error::launch("boom"));
  EXPECT_FALSE(failed.whole_success());
  EXPECT_FALSE(failed.ok());
  EXPECT_FALSE(failed.wrote_only());
  ASSERT_NE(failed.error(), nullptr);
  EXPECT_EQ(failed.error()->message(), "boom");
  EXPECT_TRUE(failed.written().empty());

  const LaunchOutcome partial =
      LaunchOutcome::partial(Error::launch("half"), {{1, ByteRange::of(2, 6)}});
  EXPECT_FALSE(partial.whole_success());
  EXPECT_FALSE(partial.ok());
  EXPECT_FALSE(partial.wrote_only());
  ASSERT_NE(partial.error(), nullptr);
  EXPECT_EQ(partial.error()->message(), "half");
  ASSERT_EQ(partial.written().size(), 1u);
  EXPECT_EQ(partial.written()[0], (WrittenRange{1, ByteRange::of(2, 6)}));
}

TEST(LaunchOutcome, S2_ACopyOwnsItsDetailsAndAMoveLeavesSuccessBehind) {
  auto original = std::make_unique<LaunchOutcome>(
      LaunchOutcome::partial(Error::launch("half"), {{0, ByteRange::of(0, 8)}}));
  LaunchOutcome copy = *original;
  LaunchOutcome assigned = LaunchOutcome::success();
  assigned = *original;
  original.reset(); // The copies must not share what it owned.
  for (const LaunchOutcome* outcome : {&copy, &assigned}) {
    ASSERT_NE(outcome->error(), nullptr);
    EXPECT_EQ(outcome->error()->message(), "half");
    ASSERT_EQ(outcome->written().size(), 1u);
    EXPECT_EQ(outcome->written()[0], (WrittenRange{0, ByteRange::of(0, 8)}));
  }
  LaunchOutcome moved = std::move(copy);
  EXPECT_FALSE(moved.ok());
  EXPECT_TRUE(copy.whole_success()); // NOLINT(bugprone-use-after-move): pinned on purpose.
  assigned = LaunchOutcome::success();
  EXPECT_TRUE(assigned.whole_success());
}

} // namespace
} // namespace taintpool
