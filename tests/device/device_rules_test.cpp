// Pins: the device rules of DESIGN.md §3.5 by name — S1 decide before
// claiming, S2 partial failure, S3 a body that throws, S4 a skip mints
// nothing, S5 only reads are checked, D1 the oracle, D2 isolation — plus the
// report (G8, G9), refcount (R1, R4) and bad-input (P3) rules as a Device
// user meets them, and the scenarios issue 4 names: interleaved workflows,
// a read two hops downstream, a rewrite that repairs, a loop failing the
// same way, a throw mid-launch, an in-place kernel on a stale buffer, a late
// failure on an asynchronous device, zero-sized bindings, the report text.
//
// Why: the differential fuzzer and the stateful test compare the device
// with the model on sequences nobody wrote down; these tests are the
// sequences a reader can check by hand, one rule each, so that a broken rule
// fails a test whose name says which.
//
// Every kernel here does real work on bytes (fill, copy, add), so a test can
// tell a body that ran from one that was skipped by the bytes, not only by
// the status.
#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/host/host_backend.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace taintpool {
namespace {

std::vector<std::byte> bytes_of(std::size_t size, std::uint8_t value) {
  return std::vector<std::byte>(size, static_cast<std::byte>(value));
}

/// Fills every output with `value`.
auto fill(std::uint8_t value) {
  return [value](const KernelContext& context) {
    for (std::size_t index = 0; index < context.writes(); ++index) {
      std::fill(context.write(index).begin(), context.write(index).end(),
                static_cast<std::byte>(value));
    }
    return LaunchOutcome::success();
  };
}

/// Output 0 = input 0 + `delta`, byte by byte (input and output the same size).
auto add(std::uint8_t delta) {
  return [delta](const KernelContext& context) {
    const auto in = context.read(0);
    const auto out = context.write(0);
    for (std::size_t at = 0; at < out.size(); ++at) {
      out[at] = static_cast<std::byte>(static_cast<std::uint8_t>(in[at]) + delta);
    }
    return LaunchOutcome::success();
  };
}

/// Fails without writing anything.
auto fails(Error error) {
  return [error](const KernelContext&) { return LaunchOutcome::failure(error); };
}

/// A read into a buffer of exactly the binding's size.
ReadOutcome read_all(Device& device, const Binding& binding) {
  std::vector<std::byte> out(static_cast<std::size_t>(binding.range.size()));
  return device.read(binding, out);
}

/// A body that is a plain function rather than a lambda.
LaunchOutcome fill_with_twos(const KernelContext& context) {
  std::fill(context.write(0).begin(), context.write(0).end(), std::byte{2});
  return LaunchOutcome::success();
}

struct DeviceTest : ::testing::Test {
  HostBackend host;
  Device device{host};

  std::uint8_t byte_at(const Allocation& allocation, std::uint64_t at) {
    return static_cast<std::uint8_t>(device.read_bytes(allocation.bind(at, 1))[0]);
  }
};

struct DeferredDeviceTest : ::testing::Test {
  DeferredHostBackend deferred;
  Device device{deferred};
};

// ---- S1 ---------------------------------------------------------------------

TEST_F(DeviceTest, S1_ALaunchReadingAStaleByteIsSkippedAndItsBodyNeverRuns) {
  Allocation input = device.create_buffer(bytes_of(16, 1));
  Allocation output = device.create_buffer(bytes_of(16, 7));
  const LaunchResult failed =
      device.launch("load", {}, {input.bind(15, 1)}, fails(Error::out_of_memory("staging")));
  bool ran = false;
  const LaunchResult skipped =
      device.launch("linear", {input.whole()}, {output.whole()}, [&](const KernelContext&) {
        ran = true;
        return LaunchOutcome::success();
      });
  EXPECT_FALSE(ran);
  EXPECT_EQ(skipped.status, LaunchStatus::Skipped);
  EXPECT_EQ(skipped.failure, failed.failure);
  EXPECT_EQ(skipped.needed, input.id());
  EXPECT_FALSE(skipped.error.has_value());
}

TEST_F(DeviceTest, S1_ASkippedLaunchTaintsItsWholeWriteSetWithTheRoot) {
  Allocation input = device.create_buffer(8);
  Allocation output = device.create_buffer(bytes_of(32, 5));
  const LaunchResult failed =
      device.launch("load", {}, {input.whole()}, fails(Error::launch("bad config")));
  device.launch("copy", {input.whole()}, {output.bind(8, 16)}, add(1));
  const std::vector<Report> reports = device.stale_reports(output.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].failure, *failed.failure);
  EXPECT_EQ(reports[0].stale, ByteRange::of(8, 24));
  // The bytes outside the skipped write set are untouched and readable.
  EXPECT_EQ(byte_at(output, 0), 5);
  EXPECT_EQ(byte_at(output, 31), 5);
}

TEST_F(DeviceTest, S1_ASuccessfulLaunchReleasesItsWriteSetAndLeavesNoFailure) {
  Allocation a = device.create_buffer(64);
  Allocation b = device.create_buffer(64);
  const LaunchResult result = device.launch("fill", {}, {a.whole(), b.bind(0, 32)}, fill(3));
  EXPECT_TRUE(result.ran());
  EXPECT_FALSE(result.failure.has_value());
  EXPECT_TRUE(device.graph().empty()); // G5: the provisional failure was pruned.
  EXPECT_EQ(byte_at(a, 63), 3);
  EXPECT_EQ(byte_at(b, 31), 3);
  device.check_invariants();
}

TEST_F(DeviceTest, S1_AFailedLaunchLeavesItsWriteSetCarryingTheRealErrorNamingTheKernel) {
  Allocation a = device.create_buffer(64);
  const LaunchResult result =
      device.launch("gemm", {}, {a.whole()}, fails(Error::launch("too many registers")));
  EXPECT_EQ(result.status, LaunchStatus::Failed);
  ASSERT_TRUE(result.failure.has_value());
  ASSERT_TRUE(result.error.has_value());
  EXPECT_EQ(result.error->kind(), ErrorKind::Launch);
  EXPECT_EQ(result.error->message(), "gemm: too many registers");
  const Error* stored = device.graph().error(*result.failure);
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(*stored, *result.error); // G4: the provisional TornDown was replaced.
  EXPECT_EQ(device.graph().tags(*result.failure), 1u);
}

TEST_F(DeviceTest, S1_AnEmptyWriteSetClaimsNothingAndAFailureThereLeavesNothingBehind) {
  Allocation a = device.create_buffer(bytes_of(8, 1));
  const FailureId next = device.graph().next_id();
  const LaunchResult result =
      device.launch("check_norm", {a.whole()}, {}, fails(Error::launch("norm is NaN")));
  EXPECT_EQ(result.status, LaunchStatus::Failed);
  EXPECT_FALSE(result.failure.has_value());
  ASSERT_TRUE(result.error.has_value());
  EXPECT_EQ(result.error->message(), "check_norm: norm is NaN");
  EXPECT_EQ(device.graph().next_id(), next); // Nothing minted: nothing to claim.
  EXPECT_TRUE(device.graph().empty());
  EXPECT_TRUE(read_all(device, a.whole()).ok());
}

TEST_F(DeviceTest, S1_APlainFunctionIsABodyToo) {
  Allocation a = device.create_buffer(4);
  EXPECT_TRUE(device.launch("twos", {}, {a.whole()}, fill_with_twos).ran());
  EXPECT_EQ(byte_at(a, 3), 2);
}

// ---- S2 ---------------------------------------------------------------------

TEST_F(DeviceTest, S2_APartialFailureReleasesTheReportedRangesAndTaintsTheRest) {
  Allocation a = device.create_buffer(64);
  Allocation b = device.create_buffer(16);
  const LaunchResult result =
      device.launch("tiles", {}, {a.whole(), b.whole()}, [](const KernelContext& context) {
        std::fill_n(context.write(0).begin(), 16, std::byte{9});
        return LaunchOutcome::partial(Error::launch("tile 2 faulted"),
                                      {{0, ByteRange::of(0, 16)}, {1, ByteRange::of(4, 8)}});
      });
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_EQ(byte_at(a, 15), 9);
  EXPECT_FALSE(read_all(device, a.bind(0, 16)).reports.size());
  const std::vector<Report> stale_a = device.stale_reports(a.whole());
  ASSERT_EQ(stale_a.size(), 1u);
  EXPECT_EQ(stale_a[0].stale, ByteRange::of(16, 64));
  EXPECT_TRUE(device.stale_reports(b.bind(4, 4)).empty());
  EXPECT_EQ(device.stale_reports(b.whole()).size(), 1u);
  EXPECT_EQ(device.graph().tags(*result.failure), 2u); // R1: two carriers.
}

TEST_F(DeviceTest, S2_AFailureThatReportsEveryByteWrittenLeavesNoFailure) {
  Allocation a = device.create_buffer(16);
  const LaunchResult result = device.launch("all_done", {}, {a.whole()}, [](const KernelContext&) {
    return LaunchOutcome::partial(Error::launch("late check"), {{0, ByteRange::of(0, 16)}});
  });
  EXPECT_EQ(result.status, LaunchStatus::Failed);
  EXPECT_FALSE(result.failure.has_value());
  EXPECT_TRUE(device.graph().empty());
}

TEST_F(DeviceTest, S2_ReportedRangesOutsideTheirOutputAreIgnoredAndCountedInTheMessage) {
  Allocation a = device.create_buffer(16);
  const LaunchResult result = device.launch("liar", {}, {a.bind(0, 8)}, [](const KernelContext&) {
    return LaunchOutcome::partial(Error::launch("fault"),
                                  {{0, ByteRange::of(4, 12)}, {3, ByteRange::of(0, 1)}});
  });
  ASSERT_TRUE(result.failure.has_value());
  // Neither range released anything: the whole write set is still stale.
  const std::vector<Report> reports = device.stale_reports(a.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].stale, ByteRange::of(0, 8));
  EXPECT_EQ(result.error->message(),
            "liar: fault (2 reported written ranges lay outside their outputs and were ignored)");
}

// ---- S3 ---------------------------------------------------------------------

TEST_F(DeviceTest, S3_AThrowMidLaunchLeavesTheWholeWriteSetClaimedByTornDown) {
  Allocation a = device.create_buffer(bytes_of(32, 1));
  Allocation b = device.create_buffer(bytes_of(32, 1));
  EXPECT_THROW(device.launch("half", {}, {a.whole(), b.whole()},
                             [](const KernelContext& context) -> LaunchOutcome {
                               std::fill(context.write(0).begin(), context.write(0).end(),
                                         std::byte{2});
                               throw std::runtime_error("driver lost");
                             }),
               std::runtime_error);
  for (const Allocation* buffer : {&a, &b}) {
    const std::vector<Report> reports = device.stale_reports(buffer->whole());
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_EQ(reports[0].root.kind(), ErrorKind::TornDown);
    EXPECT_EQ(reports[0].root.message(), "half threw before finishing: driver lost");
    EXPECT_EQ(reports[0].stale, ByteRange::of(0, 32));
  }
  EXPECT_EQ(device.graph().size(), 1u);
  device.check_invariants(); // Nothing half-updated: R1-R3 hold.
}

TEST_F(DeviceTest, S3_TheBodysExceptionReachesTheCallerUnchanged) {
  Allocation a = device.create_buffer(4);
  try {
    device.launch("k", {}, {a.whole()},
                  [](const KernelContext&) -> LaunchOutcome { throw std::length_error("mine"); });
    FAIL() << "the body's exception was swallowed";
  } catch (const std::length_error& error) {
    EXPECT_STREQ(error.what(), "mine");
  }
}

TEST_F(DeviceTest, S3_ABodyThatLaunchesOnItsOwnDeviceIsRefusedAndItsScopeStaysClaimed) {
  Allocation a = device.create_buffer(8);
  Allocation b = device.create_buffer(8);
  bool inner_ran = false;
  EXPECT_THROW(device.launch("outer", {}, {a.whole()},
                             [&](const KernelContext&) {
                               (void)device.launch("inner", {}, {b.whole()},
                                                   [&](const KernelContext&) {
                                                     inner_ran = true;
                                                     return LaunchOutcome::success();
                                                   });
                               return LaunchOutcome::success();
                             }),
               std::logic_error);
  EXPECT_FALSE(inner_ran);
  EXPECT_EQ(device.stale_reports(a.whole()).size(), 1u); // S3: the outer write set.
  EXPECT_TRUE(device.stale_reports(b.whole()).empty());  // The inner one claimed nothing.
  device.check_invariants();
}

// ---- S4 ---------------------------------------------------------------------

TEST_F(DeviceTest, S4_ASkipMintsNoFailure) {
  Allocation input = device.create_buffer(8);
  Allocation output = device.create_buffer(8);
  device.launch("load", {}, {input.whole()}, fails(Error::launch("x")));
  const FailureId next = device.graph().next_id();
  const std::size_t nodes = device.graph().size();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(device.launch("use", {input.whole()}, {output.whole()}, add(1)).status,
              LaunchStatus::Skipped);
  }
  EXPECT_EQ(device.graph().next_id(), next);
  EXPECT_EQ(device.graph().size(), nodes);
}

TEST_F(DeviceTest, S4_EveryLaunchThatEntersWithOutputsMintsOneFailureEvenWhenItSucceeds) {
  Allocation a = device.create_buffer(8);
  Allocation empty = device.create_buffer(0);
  const std::uint64_t first = device.graph().next_id().raw();
  device.launch("ok", {}, {a.whole()}, fill(1));
  device.launch("ok_empty_binding", {}, {empty.whole()}, fill(1));
  device.launch("no_outputs", {a.whole()}, {}, fill(1));
  EXPECT_EQ(device.graph().next_id().raw(), first + 2);
  EXPECT_TRUE(device.graph().empty());
}

// ---- S5 ---------------------------------------------------------------------

TEST_F(DeviceTest, S5_ARelaunchIntoAStaleBufferRepairsIt) {
  Allocation a = device.create_buffer(16);
  device.launch("load", {}, {a.whole()}, fails(Error::launch("first try")));
  ASSERT_FALSE(read_all(device, a.whole()).ok());
  EXPECT_TRUE(device.launch("load", {}, {a.whole()}, fill(4)).ran()); // A pure output: unchecked.
  EXPECT_EQ(byte_at(a, 0), 4);
  EXPECT_TRUE(device.graph().empty());
}

TEST_F(DeviceTest, S5_AHostWriteRepairsExactlyTheBytesItCovers) {
  Allocation a = device.create_buffer(16);
  device.launch("load", {}, {a.whole()}, fails(Error::launch("x")));
  EXPECT_TRUE(device.write(a.bind(0, 8), bytes_of(8, 6)).ran());
  EXPECT_EQ(byte_at(a, 7), 6);
  const std::vector<Report> reports = device.stale_reports(a.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].stale, ByteRange::of(8, 16));
}

TEST_F(DeviceTest, S5_AnInPlaceKernelOnAStaleBufferIsSkipped) {
  Allocation a = device.create_buffer(bytes_of(8, 1));
  const LaunchResult failed = device.launch("load", {}, {a.bind(0, 1)}, fails(Error::launch("x")));
  bool ran = false;
  const LaunchResult in_place =
      device.launch("relu_", {a.whole()}, {a.whole()}, [&](const KernelContext&) {
        ran = true;
        return LaunchOutcome::success();
      });
  EXPECT_FALSE(ran);
  EXPECT_EQ(in_place.status, LaunchStatus::Skipped);
  // The read-write binding is claimed too: every byte now carries the root.
  const std::vector<Report> reports = device.stale_reports(a.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].failure, *failed.failure);
  EXPECT_EQ(reports[0].stale, ByteRange::of(0, 8));
}

TEST_F(DeviceTest, S5_AnAliasedReadWriteBindingOfCleanBytesRunsAndIsReleased) {
  Allocation a = device.create_buffer(bytes_of(8, 10));
  EXPECT_TRUE(device.launch("inc_", {a.whole()}, {a.whole()}, add(1)).ran());
  EXPECT_EQ(byte_at(a, 3), 11);
  EXPECT_TRUE(device.graph().empty());
}

// ---- D1 ---------------------------------------------------------------------

TEST_F(DeviceTest, D1_FreshMemoryCountsAsWritten) {
  Allocation a = device.create_buffer(128);
  std::vector<std::byte> out(128);
  EXPECT_TRUE(device.read(a.whole(), out).ok());
  EXPECT_TRUE(device.stale_reports(a.whole()).empty());
}

TEST_F(DeviceTest, D1_ReadingCleanBytesOfAPartlyStaleBufferSucceedsAtBytePrecision) {
  Allocation a = device.create_buffer(bytes_of(64, 8));
  device.launch("load", {}, {a.bind(10, 1)}, fails(Error::launch("x")));
  EXPECT_TRUE(read_all(device, a.bind(0, 10)).ok());
  EXPECT_TRUE(read_all(device, a.bind(11, 53)).ok());
  EXPECT_FALSE(read_all(device, a.bind(9, 2)).ok());
}

TEST_F(DeviceTest, D1_AFailedReadCopiesNothingAndReturnsOneReportPerDistinctFailure) {
  Allocation a = device.create_buffer(bytes_of(30, 1));
  const LaunchResult first = device.launch("f1", {}, {a.bind(0, 10)}, fails(Error::launch("a")));
  const LaunchResult second = device.launch("f2", {}, {a.bind(20, 5)}, fails(Error::launch("b")));
  device.write(a.bind(5, 1), bytes_of(1, 0)); // Splits f1's claim in two.
  std::vector<std::byte> out(30, std::byte{0xEE});
  const ReadOutcome outcome = device.read(a.whole(), out);
  ASSERT_EQ(outcome.reports.size(), 2u); // G9: f1 once, though it claims two ranges.
  EXPECT_EQ(outcome.reports[0].failure, *first.failure);
  EXPECT_EQ(outcome.reports[0].stale, ByteRange::of(0, 5)); // Its first stale range.
  EXPECT_EQ(outcome.reports[1].failure, *second.failure);
  EXPECT_EQ(outcome.reports[1].stale, ByteRange::of(20, 25));
  EXPECT_TRUE(
      std::all_of(out.begin(), out.end(), [](std::byte b) { return b == std::byte{0xEE}; }));
  try {
    (void)device.read_bytes(a.whole());
    FAIL() << "read_bytes returned stale bytes";
  } catch (const StaleRead& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Unwritten);
    EXPECT_EQ(error.reports(), outcome.reports);
  }
}

TEST_F(DeviceTest, D1_ReadsOfZeroSizedBindingsSucceedEvenInsideAStaleRange) {
  Allocation empty = device.create_buffer(0);
  EXPECT_TRUE(device.read(empty.whole(), {}).ok());
  EXPECT_TRUE(device.read_bytes(empty.whole()).empty());
  Allocation a = device.create_buffer(16);
  device.launch("load", {}, {a.whole()}, fails(Error::launch("x")));
  EXPECT_TRUE(device.read(a.bind(8, 0), {}).ok()); // No byte, so no stale byte.
  EXPECT_TRUE(device.stale_reports(a.bind(8, 0)).empty());
  // And a launch whose only read is empty is not skipped.
  Allocation out = device.create_buffer(4);
  EXPECT_TRUE(device.launch("k", {a.bind(3, 0)}, {out.whole()}, fill(1)).ran());
}

// ---- D2 ---------------------------------------------------------------------

TEST_F(DeviceTest, D2_TwoInterleavedWorkflowsNeverContaminateEachOther) {
  // Workflow A fails at its first stage; workflow B shares no buffer with it
  // and runs every stage, interleaved launch by launch with A.
  Allocation a0 = device.create_buffer(16);
  Allocation a1 = device.create_buffer(16);
  Allocation a2 = device.create_buffer(16);
  Allocation b0 = device.create_buffer(16);
  Allocation b1 = device.create_buffer(16);
  Allocation b2 = device.create_buffer(16);
  EXPECT_EQ(device.launch("a.load", {}, {a0.whole()}, fails(Error::launch("bad"))).status,
            LaunchStatus::Failed);
  EXPECT_TRUE(device.launch("b.load", {}, {b0.whole()}, fill(1)).ran());
  EXPECT_EQ(device.launch("a.mid", {a0.whole()}, {a1.whole()}, add(1)).status,
            LaunchStatus::Skipped);
  EXPECT_TRUE(device.launch("b.mid", {b0.whole()}, {b1.whole()}, add(1)).ran());
  EXPECT_EQ(device.launch("a.out", {a1.whole()}, {a2.whole()}, add(1)).status,
            LaunchStatus::Skipped);
  EXPECT_TRUE(device.launch("b.out", {b1.whole()}, {b2.whole()}, add(1)).ran());
  EXPECT_EQ(byte_at(b2, 15), 3);
  for (const Allocation* buffer : {&b0, &b1, &b2}) {
    EXPECT_TRUE(device.stale_reports(buffer->whole()).empty());
  }
  EXPECT_FALSE(device.stale_reports(a2.whole()).empty());
}

// ---- G8, G9: reports ----------------------------------------------------------

TEST_F(DeviceTest, G8_AReadTwoHopsDownstreamNamesTheRootAndTheWholePath) {
  Allocation weights = device.create_buffer(64);
  Allocation hidden = device.create_buffer(64);
  Allocation probs = device.create_buffer(64);
  const LaunchResult root = device.launch("load_weights", {}, {weights.whole()},
                                          fails(Error::out_of_memory("staging buffer")));
  device.launch("linear", {weights.whole()}, {hidden.whole()}, add(1));
  device.launch("softmax", {hidden.whole()}, {probs.whole()}, add(1));
  const std::vector<Report> reports = device.stale_reports(probs.whole());
  ASSERT_EQ(reports.size(), 1u);
  const Report& report = reports[0];
  EXPECT_EQ(report.failure, *root.failure);
  EXPECT_EQ(report.root, Error::out_of_memory("load_weights: staging buffer"));
  EXPECT_EQ(report.read, probs.id());
  EXPECT_EQ(report.origin, weights.id());
  ASSERT_EQ(report.path.size(), 2u);
  EXPECT_EQ(report.path[0].kernel, "softmax");
  EXPECT_EQ(report.path[0].needed, hidden.id());
  EXPECT_EQ(report.path[1].kernel, "linear");
  EXPECT_EQ(report.path[1].needed, weights.id());
  EXPECT_EQ(report.skips_recorded, 2u);
  EXPECT_FALSE(report.path_may_be_incomplete);
}

TEST_F(DeviceTest, G8_TheReportTextNamesKernelAllocationByteRangeRootCauseAndPath) {
  Allocation weights = device.create_buffer(4096);
  Allocation hidden = device.create_buffer(4096);
  device.launch("load_weights", {}, {weights.whole()},
                fails(Error::out_of_memory("staging buffer")));
  device.launch("linear", {weights.whole()}, {hidden.whole()}, add(1));
  const ReadOutcome outcome = read_all(device, hidden.bind(0, 1024));
  const std::string text = to_string(outcome);
  const std::string w = to_string(weights.id());
  const std::string h = to_string(hidden.id());
  EXPECT_NE(text.find(h + " bytes [0, 1024) cannot be read"), std::string::npos) << text;
  EXPECT_NE(text.find("out of memory: load_weights: staging buffer"), std::string::npos) << text;
  EXPECT_NE(text.find("linear was skipped: it needed " + w), std::string::npos) << text;
  EXPECT_NE(text.find(w + " was left unwritten by failure"), std::string::npos) << text;
}

TEST_F(DeviceTest, G7_ALoopFailingTheSameWayEveryIterationKeepsOneNode) {
  Allocation weights = device.create_buffer(32);
  Allocation hidden = device.create_buffer(32);
  for (int iteration = 0; iteration < 100; ++iteration) {
    device.launch("load", {}, {weights.whole()}, fails(Error::out_of_memory("again")));
    EXPECT_EQ(device.launch("step", {weights.whole()}, {hidden.whole()}, add(1)).status,
              LaunchStatus::Skipped);
    // Each iteration's failure replaces the last on every byte (T1), so the
    // old one loses its carriers and goes (G3): the graph does not grow.
    ASSERT_EQ(device.graph().size(), 1u) << "iteration " << iteration;
  }
  const std::vector<Report> reports = device.stale_reports(hidden.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].path.size(), 1u);
  EXPECT_EQ(reports[0].skips_recorded, 1u);
}

TEST_F(DeviceTest, G7_ASkipLogPastItsCapStillNamesTheRootAndSaysThePathMayBeIncomplete) {
  Allocation weights = device.create_buffer(8);
  const LaunchResult root =
      device.launch("load", {}, {weights.whole()}, fails(Error::launch("bad")));
  std::vector<Allocation> chain{weights};
  for (int hop = 0; hop < 20; ++hop) {
    chain.push_back(device.create_buffer(8));
    device.launch("hop", {chain[chain.size() - 2].whole()}, {chain.back().whole()}, add(1));
  }
  const std::vector<Report> reports = device.stale_reports(chain.back().whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].failure, *root.failure); // The root is always there.
  EXPECT_EQ(reports[0].skips_recorded, 20u);
  EXPECT_EQ(reports[0].path.size(), 16u); // Only the newest 16 are kept.
  EXPECT_TRUE(reports[0].path_may_be_incomplete);
  EXPECT_NE(to_string(reports[0]).find("the path may begin earlier"), std::string::npos);
}

// ---- P3, R4 -------------------------------------------------------------------

TEST_F(DeviceTest, P3_BadBindingsThrowBeforeAnythingIsClaimedOrRun) {
  Allocation a = device.create_buffer(16);
  Allocation gone = device.create_buffer(16);
  const Binding dangling = gone.whole();
  gone.reset();
  const FailureId next = device.graph().next_id();
  bool ran = false;
  auto body = [&](const KernelContext&) {
    ran = true;
    return LaunchOutcome::success();
  };
  try {
    device.launch("k", {}, {a.whole(), dangling}, body);
    FAIL() << "a binding to a dropped allocation was accepted";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::NotFound);
  }
  try {
    device.launch("k", {Binding{a.id(), ByteRange::of(8, 17)}}, {a.whole()}, body);
    FAIL() << "a binding past the end was accepted";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidBinding);
  }
  EXPECT_THROW(device.write(a.whole(), bytes_of(15, 0)), Exception);
  EXPECT_THROW((void)read_all(device, dangling), Exception);
  std::vector<std::byte> short_buffer(15);
  EXPECT_THROW((void)device.read(a.whole(), short_buffer), Exception);
  EXPECT_FALSE(ran);
  EXPECT_EQ(device.graph().next_id(), next); // Nothing minted…
  EXPECT_TRUE(device.graph().empty());       // …nothing claimed.
  EXPECT_TRUE(device.stale_reports(a.whole()).empty());
  device.check_invariants();
}

TEST_F(DeviceTest, P3_ReadBytesChecksTheBindingBeforeSizingItsResult) {
  // read_bytes returns a vector of the binding's size: a binding past the
  // end must be refused before that vector exists. 2^40 bytes cannot be
  // allocated, so an early allocation would end in std::bad_alloc (or an
  // AddressSanitizer abort), never in InvalidBinding.
  Allocation a = device.create_buffer(16);
  for (const std::uint64_t end : {std::uint64_t{1} << 30, std::uint64_t{1} << 40}) {
    try {
      (void)device.read_bytes(Binding{a.id(), ByteRange::of(0, end)});
      FAIL() << "a read of [0, " << end << ") from 16 bytes succeeded";
    } catch (const Exception& error) {
      EXPECT_EQ(error.kind(), ErrorKind::InvalidBinding) << error.what();
    }
  }
  Allocation gone = device.create_buffer(16);
  const Binding dangling{gone.id(), ByteRange::of(0, std::uint64_t{1} << 40)};
  gone.reset();
  try {
    (void)device.read_bytes(dangling);
    FAIL() << "a read of a dropped allocation succeeded";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::NotFound) << error.what();
  }
  device.check_invariants();
}

// ---- bindings belong to their device (P3) ---------------------------------------

TEST(DeviceIds, P3_ABindingMadeOnOneDeviceIsRefusedByAnotherNamingBoth) {
  HostBackend host;
  Device first(host);
  Device second(host);
  ASSERT_NE(first.memory().id_space(), second.memory().id_space());
  // Same sizes, same order: without id spaces both would mint allocation 1.
  Allocation mine = first.create_buffer(16);
  Allocation theirs = second.create_buffer(16);
  EXPECT_EQ(allocation_number(mine.id()), allocation_number(theirs.id()));
  EXPECT_NE(mine.id(), theirs.id());
  const std::vector<std::byte> before = second.read_bytes(theirs.whole());

  const auto expect_refused = [&](auto&& call) {
    try {
      call();
      ADD_FAILURE() << "a binding of the first device was used on the second";
    } catch (const Exception& error) {
      EXPECT_EQ(error.kind(), ErrorKind::InvalidBinding);
      const std::string what = error.what();
      EXPECT_NE(what.find("another memory manager"), std::string::npos) << what;
      EXPECT_NE(what.find("memory " + std::to_string(first.memory().id_space())), std::string::npos)
          << what;
      EXPECT_NE(what.find("memory " + std::to_string(second.memory().id_space())),
                std::string::npos)
          << what;
    }
  };
  expect_refused([&] { second.write(mine.whole(), bytes_of(16, 7)); });
  expect_refused([&] { (void)second.read_bytes(mine.whole()); });
  expect_refused([&] { (void)second.stale_reports(mine.whole()); });
  expect_refused([&] { second.launch("k", {mine.whole()}, {theirs.whole()}, fill(9)); });
  expect_refused([&] { second.launch("k", {}, {mine.whole()}, fill(9)); });

  // Nothing landed in the second device's buffer of the same number.
  EXPECT_EQ(second.read_bytes(theirs.whole()), before);
  EXPECT_TRUE(second.stale_reports(theirs.whole()).empty());
  // The first device's own binding still works there.
  first.write(mine.whole(), bytes_of(16, 5));
  EXPECT_EQ(first.read_bytes(mine.whole()), bytes_of(16, 5));
  first.check_invariants();
  second.check_invariants();
}

TEST(DeviceIds, P3_TheFirstDevicesIdsPrintAsPlainNumbersAndAnothersNameItsMemory) {
  HostBackend host;
  Device first(host);
  Allocation a = first.create_buffer(8);
  EXPECT_EQ(first.memory().id_space(), 0u) << "no other memory manager is alive in this test";
  EXPECT_EQ(a.id(), AllocationId::from_raw(1));
  EXPECT_EQ(to_string(a.id()), "allocation 1");
  Device second(host);
  Allocation b = second.create_buffer(8);
  EXPECT_EQ(allocation_number(b.id()), 1u);
  EXPECT_EQ(to_string(b.id()),
            "allocation 1 (memory " + std::to_string(second.memory().id_space()) + ")");
}

TEST(DeviceIds, P3_ASpaceIsHandedOnOnlyOnceItsDeviceIsGone) {
  HostBackend host;
  std::uint32_t space = 0;
  {
    Device first(host);
    Device second(host);
    space = second.memory().id_space();
    EXPECT_NE(space, first.memory().id_space());
  }
  Device again(host);
  EXPECT_EQ(again.memory().id_space(), 0u); // The lowest free space, and ids from 1 again.
  EXPECT_EQ(allocation_number(again.create_buffer(8).id()), 1u);
}

// ---- a body must not call back into its own device ----------------------------

/// Runs `call` from a body writing `a` on `device`: the launch must end in
/// std::logic_error naming the call, with S3's outcome (the write set stays
/// claimed by the torn-down scope) and nothing else changed — no buffer
/// created, `b`'s bytes and taint as they were.
template <class Call>
void expect_refused_inside_a_body(Device& device, const char* name, Call&& call) {
  SCOPED_TRACE(name);
  Allocation a = device.create_buffer(8);
  Allocation b = device.create_buffer(8);
  device.write(b.whole(), bytes_of(8, 3));
  std::size_t allocations = 0;
  device.memory().for_each_allocation([&](const AllocationInfo&) { ++allocations; });
  const std::size_t failures = device.graph().size();
  bool returned = false;
  try {
    device.launch("outer", {}, {a.whole()}, [&](const KernelContext&) {
      call(b);
      returned = true;
      return LaunchOutcome::success();
    });
    ADD_FAILURE() << name << " from a body on the same device was allowed";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find(name), std::string::npos) << error.what();
  }
  EXPECT_FALSE(returned);
  std::size_t after = 0;
  device.memory().for_each_allocation([&](const AllocationInfo&) { ++after; });
  EXPECT_EQ(after, allocations) << "a buffer was created from inside the body";
  EXPECT_EQ(device.graph().size(), failures + 1); // S3: the torn-down scope, no other.
  EXPECT_EQ(device.stale_reports(a.whole()).size(), 1u);
  EXPECT_TRUE(device.stale_reports(b.whole()).empty());
  EXPECT_EQ(device.read_bytes(b.whole()), bytes_of(8, 3));
  device.check_invariants();
}

/// Every call a body must not make on its own device (device.hpp,
/// "Threading"), each refused.
void expect_every_call_refused_inside_a_body(Device& device) {
  std::vector<std::byte> out(8);
  expect_refused_inside_a_body(device, "synchronize",
                               [&](const Allocation&) { device.synchronize(); });
  expect_refused_inside_a_body(device, "read",
                               [&](const Allocation& b) { (void)device.read(b.whole(), out); });
  expect_refused_inside_a_body(device, "read_bytes",
                               [&](const Allocation& b) { (void)device.read_bytes(b.whole()); });
  expect_refused_inside_a_body(device, "stale_reports",
                               [&](const Allocation& b) { (void)device.stale_reports(b.whole()); });
  expect_refused_inside_a_body(
      device, "write", [&](const Allocation& b) { device.write(b.whole(), bytes_of(8, 9)); });
  expect_refused_inside_a_body(device, "create_buffer",
                               [&](const Allocation&) { (void)device.create_buffer(8); });
  expect_refused_inside_a_body(device, "create_buffer", [&](const Allocation&) {
    (void)device.create_buffer(bytes_of(8, 1));
  });
}

TEST_F(DeviceTest, S3_ABodyThatReadsWritesSynchronizesOrCreatesOnItsOwnDeviceIsRefused) {
  expect_every_call_refused_inside_a_body(device);
}

TEST_F(DeferredDeviceTest, S3_ABodyThatReadsWritesSynchronizesOrCreatesOnItsOwnDeviceIsRefused) {
  expect_every_call_refused_inside_a_body(device);
}

TEST_F(DeferredDeviceTest, S3_ALateFailureCannotBeAttributedFromInsideAnotherLaunchsBody) {
  // The case that made synchronize() inside a body wrong: a checked launch
  // fails late, and a later body synchronizes while its own write set is
  // claimed. Refused, the late failure waits for the next synchronize,
  // which attributes it to the checked launch's output alone.
  Allocation x = device.create_buffer(8);
  Allocation y = device.create_buffer(8);
  device.launch("checked", {}, {x.whole()}, [&](const KernelContext& context) {
    deferred.fail_later(context, Error::launch("status word says no"));
    return LaunchOutcome::success();
  });
  EXPECT_THROW(device.launch("syncs", {}, {y.whole()},
                             [&](const KernelContext&) {
                               device.synchronize();
                               return LaunchOutcome::success();
                             }),
               std::logic_error);
  device.synchronize();
  const std::vector<Report> late = device.stale_reports(x.whole());
  ASSERT_EQ(late.size(), 1u);
  EXPECT_NE(late[0].root.message().find("status word says no"), std::string::npos);
  const std::vector<Report> torn = device.stale_reports(y.whole());
  ASSERT_EQ(torn.size(), 1u); // S3: the refused body's own scope, and nothing else.
  EXPECT_EQ(torn[0].root.kind(), ErrorKind::TornDown);
  EXPECT_NE(torn[0].failure, late[0].failure);
  device.check_invariants();
}

TEST_F(DeviceTest, R4_DroppingEveryStaleBufferFreesEveryFailure) {
  Allocation a = device.create_buffer(16);
  Allocation b = device.create_buffer(16);
  device.launch("load", {}, {a.whole()}, fails(Error::launch("x")));
  device.launch("use", {a.whole()}, {b.whole()}, add(1));
  ASSERT_EQ(device.graph().size(), 1u);
  a.reset();
  device.sweep();
  EXPECT_EQ(device.graph().size(), 1u); // R1: b still carries it.
  b.reset();
  device.sweep();
  EXPECT_TRUE(device.graph().empty());
}

// ---- late failures (an asynchronous device) ------------------------------------

TEST_F(DeferredDeviceTest, LateFailure_TaintsItsOutputsAndEveryDownstreamConsumerButNotOverwrites) {
  Allocation x = device.create_buffer(16);
  Allocation y = device.create_buffer(16);
  Allocation z = device.create_buffer(16);
  Allocation w = device.create_buffer(16);
  // A checked kernel writes x and y, and will be found to have failed.
  EXPECT_TRUE(device
                  .launch("checked", {}, {x.whole(), y.whole()},
                          [&](const KernelContext& context) {
                            deferred.fail_later(context, Error::launch("assertion failed"));
                            return LaunchOutcome::success();
                          })
                  .ran());
  EXPECT_TRUE(device.launch("consume", {x.whole()}, {z.whole()}, add(1)).ran()); // Garbage in.
  EXPECT_TRUE(device.launch("downstream", {z.whole()}, {w.whole()}, add(1)).ran());
  EXPECT_TRUE(device.launch("overwrite", {}, {y.whole()}, fill(7)).ran()); // Good data.
  device.synchronize();
  for (const Allocation* stale : {&x, &z, &w}) {
    const std::vector<Report> reports = device.stale_reports(stale->whole());
    ASSERT_EQ(reports.size(), 1u) << to_string(stale->id());
    EXPECT_EQ(reports[0].root.message(),
              "checked: assertion failed (reported when the device synchronised)");
    EXPECT_EQ(reports[0].origin, x.id());
  }
  const std::vector<Report> at_w = device.stale_reports(w.whole());
  ASSERT_EQ(at_w[0].path.size(), 2u);
  EXPECT_TRUE(at_w[0].path[0].ran);
  EXPECT_EQ(at_w[0].path[0].kernel, "downstream");
  EXPECT_EQ(at_w[0].path[1].kernel, "consume");
  EXPECT_NE(to_string(at_w[0]).find("downstream ran on stale bytes of"), std::string::npos);
  EXPECT_TRUE(read_all(device, y.whole()).ok()); // Overwritten since.
  device.check_invariants();
}

TEST_F(DeferredDeviceTest, LateFailure_AReadSynchronisesFirst) {
  Allocation x = device.create_buffer(8);
  device.launch("checked", {}, {x.whole()}, [&](const KernelContext& context) {
    deferred.fail_later(context, Error::launch("bad"), {{0, ByteRange::of(0, 4)}});
    return LaunchOutcome::success();
  });
  EXPECT_TRUE(read_all(device, x.bind(0, 4)).ok()); // S2: finished.
  const ReadOutcome outcome = read_all(device, x.whole());
  ASSERT_EQ(outcome.reports.size(), 1u);
  EXPECT_EQ(outcome.reports[0].stale, ByteRange::of(4, 8));
}

TEST_F(DeferredDeviceTest, LateFailure_APartialWriteComputedFromLateStaleInputIsStale) {
  // The device_fuzzer regression (partial-write-from-late-stale-input): a
  // body that failed but reported bytes written, after reading bytes a late
  // failure makes stale, wrote those bytes from garbage (D1).
  Allocation x = device.create_buffer(8);
  Allocation y = device.create_buffer(8);
  device.launch("checked", {}, {x.whole()}, [&](const KernelContext& context) {
    deferred.fail_later(context, Error::launch("bad"));
    return LaunchOutcome::success();
  });
  const LaunchResult partial =
      device.launch("partial", {x.whole()}, {y.whole()}, [](const KernelContext&) {
        return LaunchOutcome::partial(Error::launch("half"), {{0, ByteRange::of(0, 4)}});
      });
  ASSERT_TRUE(partial.failure.has_value());
  device.synchronize();
  const std::vector<Report> reports = device.stale_reports(y.whole());
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].stale, ByteRange::of(4, 8)); // Its own failure: never written.
  EXPECT_EQ(reports[0].failure, *partial.failure);
  EXPECT_EQ(reports[1].stale, ByteRange::of(0, 4)); // Written from garbage.
  ASSERT_EQ(reports[1].path.size(), 1u);
  EXPECT_TRUE(reports[1].path[0].ran);
  EXPECT_EQ(reports[1].path[0].kernel, "partial");
}

TEST_F(DeferredDeviceTest, LateFailure_OnALaunchThatAlreadyFailedChangesNothing) {
  Allocation x = device.create_buffer(8);
  const LaunchResult failed = device.launch("both", {}, {x.whole()}, [&](const KernelContext& c) {
    deferred.fail_later(c, Error::launch("late"));
    return LaunchOutcome::failure(Error::launch("early"));
  });
  const FailureId next = device.graph().next_id();
  device.synchronize();
  EXPECT_EQ(device.graph().next_id(), next);
  const std::vector<Report> reports = device.stale_reports(x.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].failure, *failed.failure);
}

TEST(Device, P3_ADeviceMadeWithAMemoryConfigRefusesABufferPastItsMaxAllocationAsBufferTooBig) {
  HostBackend backend;
  MemoryConfig config;
  config.max_allocation = std::uint64_t{1} << 20;
  Device device(backend, config);
  try {
    static_cast<void>(device.create_buffer((std::uint64_t{1} << 20) + 1));
    ADD_FAILURE() << "a buffer past max_allocation was made";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BufferTooBig);
    EXPECT_NE(std::string(error.what()).find("MemoryConfig::max_allocation"), std::string::npos)
        << error.what();
  }
  Allocation fits = device.create_buffer(std::uint64_t{1} << 20);
  EXPECT_EQ(fits.size(), std::uint64_t{1} << 20);
}

} // namespace
} // namespace taintpool
