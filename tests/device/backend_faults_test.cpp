// Pins: what the Device does when its backend or the host misbehaves — a
// copy in or out that fails, a late failure for a launch the device never
// logged, a body that asks for a binding it does not have, and the heap
// running out in the middle of a scope or of the manager's own bookkeeping.
//
// Why: these are the paths a GPU takes and a CPU test never does (a DMA
// error, a driver that reports late, a host under memory pressure). Each
// must end in a clear outcome — taint on the outputs, an exception naming
// the problem — with the graph, the pool and the refcounts intact (R1–R4):
// a half-claimed write set or a leaked provisional failure would be read
// later as good data or as a failure nobody can explain.
//
// The backend here is a HostBackend whose copies and late-failure reports
// are scripted. Heap faults come from the fuzzers' allocation fault
// injector (testing/: <taintpool/testing/alloc_faults.hpp>), linked into this
// executable only.
#include <taintpool/device/device.hpp>
#include <taintpool/exception.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>
#include <taintpool/testing/alloc_faults.hpp>
#include <taintpool/testing/heap_allocations.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taintpool {
namespace {

using testing::arm_allocation_fault;
using testing::disarm_allocation_fault;

/// A host backend whose copies can fail and which reports late failures
/// the test scripts: `oldest` is what oldest_unconfirmed_launch() says,
/// `late` what the next synchronize() returns.
class ScriptedBackend final : public HostBackend {
 public:
  std::optional<Error> copy_in_error;
  std::optional<Error> copy_out_error;
  std::optional<std::uint64_t> oldest;
  std::vector<LateFailure> late;

  std::optional<Error> copy_in(StreamHandle stream, std::byte* to, const std::byte* from,
                               std::size_t bytes) override {
    if (copy_in_error) {
      return copy_in_error;
    }
    return HostBackend::copy_in(stream, to, from, bytes);
  }
  std::optional<Error> copy_out(StreamHandle stream, std::byte* to, const std::byte* from,
                                std::size_t bytes) override {
    if (copy_out_error) {
      return copy_out_error;
    }
    return HostBackend::copy_out(stream, to, from, bytes);
  }
  [[nodiscard]] bool reports_late_failures() const noexcept override { return true; }
  [[nodiscard]] std::vector<LateFailure> synchronize() override { return std::exchange(late, {}); }
  [[nodiscard]] std::optional<std::uint64_t> oldest_unconfirmed_launch() const noexcept override {
    ++oldest_asked;
    return oldest;
  }
  /// What a backend that keeps may_hold_unconfirmed() exact says while it
  /// holds nothing (backend.hpp), or, with false, before it may again.
  void holds_nothing(bool nothing) { set_may_hold_unconfirmed(!nothing); }
  mutable int oldest_asked = 0;
};

std::vector<std::byte> bytes_of(std::size_t size, std::uint8_t value) {
  return std::vector<std::byte>(size, static_cast<std::byte>(value));
}

LaunchOutcome fill(const KernelContext& context) {
  for (std::size_t index = 0; index < context.writes(); ++index) {
    for (std::byte& byte : context.write(index)) {
      byte = std::byte{0x5A};
    }
  }
  return LaunchOutcome::success();
}

struct BackendFaults : ::testing::Test {
  ScriptedBackend backend;
  Device device{backend};

  void TearDown() override {
    device.sweep();
    device.check_invariants();
  }
};

// ------------------------------------------------------------ copies

TEST_F(BackendFaults, S1_AHostWriteWhoseCopyFailsLeavesItsBindingCarryingTheCopyError) {
  const Allocation buffer = device.create_buffer(64);
  backend.copy_in_error = Error::launch("DMA to the device failed");
  const LaunchResult result = device.write(buffer.whole(), bytes_of(64, 1));
  EXPECT_EQ(result.status, LaunchStatus::Failed);
  ASSERT_TRUE(result.error.has_value());
  EXPECT_NE(result.error->message().find("DMA to the device failed"), std::string::npos);

  std::vector<std::byte> out(64);
  const ReadOutcome read = device.read(buffer.whole(), out);
  ASSERT_EQ(read.reports.size(), 1u) << "the failed copy left the buffer stale (D1)";
  EXPECT_EQ(read.reports[0].root.kind(), ErrorKind::Launch);

  backend.copy_in_error.reset();
  EXPECT_TRUE(device.write(buffer.whole(), bytes_of(64, 2)).ran()) << "a good copy repairs (S5)";
  EXPECT_TRUE(device.read(buffer.whole(), out).ok());
}

TEST_F(BackendFaults, D1_AReadWhoseCopyOutFailsThrowsTheDeviceErrorAndCopiesNothing) {
  const Allocation buffer = device.create_buffer(bytes_of(32, 7));
  backend.copy_out_error = Error::launch("DMA from the device failed");
  std::vector<std::byte> out(32, std::byte{0});
  try {
    static_cast<void>(device.read(buffer.whole(), out));
    ADD_FAILURE() << "a read whose copy failed returned";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Launch);
    EXPECT_NE(std::string(error.what()).find("DMA from the device failed"), std::string::npos);
  }
  backend.copy_out_error.reset();
  EXPECT_EQ(device.read_bytes(buffer.whole()), bytes_of(32, 7)) << "the buffer itself is fine";
}

// ------------------------------------------------------------ what a body sees

TEST_F(BackendFaults, S3_ABodyAskingForABindingItDoesNotHaveThrowsOutOfRangeAndItsWritesStayTorn) {
  const Allocation out = device.create_buffer(16);
  try {
    device.launch("reads_nothing", {}, {out.whole()}, [](const KernelContext& context) {
      static_cast<void>(context.read_binding(0));
      return LaunchOutcome::success();
    });
    ADD_FAILURE() << "the body's bad index did not propagate";
  } catch (const std::out_of_range& error) {
    EXPECT_NE(std::string(error.what()).find("read binding 0 of 0"), std::string::npos)
        << error.what();
  }
  const std::vector<Report> reports = device.stale_reports(out.whole());
  ASSERT_EQ(reports.size(), 1u) << "S3: the write set stays claimed";
  EXPECT_EQ(reports[0].root.kind(), ErrorKind::TornDown);
}

TEST_F(BackendFaults, S3_ABodyViewingABindingAsTheWrongElementTypeThrows) {
  const Allocation in = device.create_buffer(bytes_of(12, 1));
  const Allocation out = device.create_buffer(16);
  EXPECT_THROW(device.launch("as_u64", {in.whole()}, {out.whole()},
                             [](const KernelContext& context) {
                               static_cast<void>(context.read_as<std::uint64_t>(0));
                               return LaunchOutcome::success();
                             }),
               std::invalid_argument)
      << "12 bytes are not a whole array of 8-byte elements";
}

TEST_F(BackendFaults, ABodySeesItsKernelItsBindingsAndTheBackendData) {
  const Allocation in = device.create_buffer(bytes_of(8, 3));
  const Allocation out = device.create_buffer(8);
  std::string kernel;
  std::optional<AllocationId> read_from;
  void* data = &kernel;
  const LaunchResult result =
      device.launch("observe", {in.whole()}, {out.whole()}, [&](const KernelContext& context) {
        kernel = std::string(context.kernel());
        read_from = context.read_binding(0).allocation;
        data = context.backend_data();
        return fill(context);
      });
  EXPECT_TRUE(result.ran());
  EXPECT_EQ(kernel, "observe");
  EXPECT_EQ(read_from, in.id());
  EXPECT_EQ(data, nullptr) << "the host backend passes no backend data";
  EXPECT_EQ(&device.backend(), &backend);
  EXPECT_EQ(device.backend().name(), "host");
}

/// A host backend with data of its own, counting how often it is asked.
class DataBackend final : public HostBackend {
 public:
  int value = 42;
  int asked = 0;
  [[nodiscard]] void* backend_data() noexcept override {
    ++asked;
    return &value;
  }
};

TEST(BackendData, S1_EveryBodySeesTheBackendDataTheDeviceAskedForOnceWhenItWasBuilt) {
  // backend.hpp: backend_data() is fixed for the backend's life, so the
  // Device asks once (a virtual call per launch cost the CUDA backend's
  // plain launch; issue 11, item 7). Every way a body runs — launch,
  // submit, a plan made and launched, a launch ordered across streams —
  // sees that value, and the backend is not asked again.
  DataBackend backend;
  Device device(backend);
  EXPECT_EQ(backend.asked, 1);
  const Allocation in = device.create_buffer(bytes_of(8, 3));
  const Allocation out = device.create_buffer(8);
  std::vector<void*> seen;
  const auto observe = [&](const KernelContext& context) {
    seen.push_back(context.backend_data());
    return fill(context);
  };
  EXPECT_TRUE(device.launch("plain", {in.whole()}, {out.whole()}, observe).ran());
  EXPECT_EQ(device.submit("submitted", {in.whole()}, {out.whole()}, observe).status(),
            LaunchStatus::Ran);
  const Binding reads[] = {in.whole()};
  const Binding writes[] = {out.whole()};
  const LaunchPlan plan = device.plan(reads, writes);
  EXPECT_TRUE(device.launch(plan, "planned", observe).ran());
  const StreamId side = device.create_stream();
  EXPECT_TRUE(device.launch(side, "crossing", {out.whole()}, {in.whole()}, observe).ran());
  ASSERT_EQ(seen.size(), 4u);
  for (void* data : seen) {
    EXPECT_EQ(data, &backend.value);
  }
  EXPECT_EQ(backend.asked, 1);
}

// ------------------------------------------------------------ late failures

TEST_F(BackendFaults, LateFailure_ForALaunchTheDeviceNeverLoggedIsAContractViolation) {
  const Allocation out = device.create_buffer(8);
  EXPECT_TRUE(device.launch("confirmed", {}, {out.whole()}, fill).ran());
  // The backend said nothing was unconfirmed, so the device kept no log;
  // a late verdict on that launch cannot be attributed.
  backend.late.push_back(LateFailure{1, Error::launch("late"), {}});
  try {
    device.synchronize();
    ADD_FAILURE() << "a late failure for a confirmed launch was accepted";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("reported launch 1 failed, but it was confirmed"),
              std::string::npos)
        << error.what();
  }
  std::vector<std::byte> bytes(8);
  EXPECT_TRUE(device.read(out.whole(), bytes).ok()) << "nothing changed";
}

TEST_F(BackendFaults, LateFailure_TheDeviceAsksForTheOldestUnconfirmedLaunchOnlyWhileItMayBeOne) {
  // backend.hpp: may_hold_unconfirmed() is true unless a backend says
  // otherwise, and then the Device asks oldest_unconfirmed_launch() after
  // every launch, as before; false, it asks nothing (the CUDA backend's
  // plain launch: one virtual call fewer, issue 11, item 7) and logs
  // nothing, so the flag must be exact, as the CUDA backend keeps it.
  EXPECT_TRUE(backend.may_hold_unconfirmed());
  HostBackend host;
  DeferredHostBackend deferred;
  EXPECT_TRUE(host.may_hold_unconfirmed());
  EXPECT_TRUE(deferred.may_hold_unconfirmed());
  const Allocation a = device.create_buffer(8);
  const Allocation b = device.create_buffer(8);
  backend.oldest = 1;
  EXPECT_TRUE(device.launch("one", {}, {a.whole()}, fill).ran());
  EXPECT_GT(backend.oldest_asked, 0);
  backend.late.push_back(LateFailure{1, Error::launch("checked kernel failed"), {}});
  backend.oldest.reset();
  device.synchronize();
  std::vector<std::byte> out(8);
  EXPECT_FALSE(device.read(a.whole(), out).ok()) << "logged while the flag was true";

  backend.holds_nothing(true);
  const int asked = backend.oldest_asked;
  backend.oldest = 2; // What a backend whose flag is false must never say: not asked.
  EXPECT_TRUE(device.launch("two", {}, {b.whole()}, fill).ran());
  EXPECT_TRUE(device.submit("three", {}, {b.whole()}, fill).status() == LaunchStatus::Ran);
  EXPECT_EQ(backend.oldest_asked, asked) << "asked although the backend holds nothing";
  backend.late.push_back(LateFailure{2, Error::launch("too late"), {}});
  EXPECT_THROW(device.synchronize(), std::logic_error) << "launch 2 was never logged";

  backend.holds_nothing(false); // Back to asking.
  EXPECT_TRUE(device.launch("four", {}, {b.whole()}, fill).ran());
  EXPECT_GT(backend.oldest_asked, asked);
}

TEST_F(BackendFaults, LateFailure_TheLogForgetsLaunchesOnceTheBackendConfirmsThem) {
  const Allocation a = device.create_buffer(8);
  const Allocation b = device.create_buffer(8);
  const Allocation c = device.create_buffer(8);
  backend.oldest = 1; // Launch 1 unconfirmed: it and everything after it is logged.
  EXPECT_TRUE(device.launch("one", {}, {a.whole()}, fill).ran());
  EXPECT_TRUE(device.launch("two", {}, {b.whole()}, fill).ran());
  backend.oldest = 2; // Launch 1 confirmed: the next launch drops it from the log.
  EXPECT_TRUE(device.launch("three", {}, {c.whole()}, fill).ran());
  backend.late.push_back(LateFailure{1, Error::launch("too late"), {}});
  EXPECT_THROW(device.synchronize(), std::logic_error) << "launch 1 was forgotten";

  backend.oldest.reset(); // Everything confirmed: the next launch clears the log.
  EXPECT_TRUE(device.launch("four", {}, {a.whole()}, fill).ran());
  backend.late.push_back(LateFailure{2, Error::launch("too late"), {}});
  EXPECT_THROW(device.synchronize(), std::logic_error) << "launch 2 was forgotten";

  backend.oldest = 5;
  EXPECT_TRUE(device.launch("five", {}, {b.whole()}, fill).ran());
  backend.late.push_back(LateFailure{5, Error::launch("checked kernel failed"), {}});
  backend.oldest.reset();
  device.synchronize();
  std::vector<std::byte> out(8);
  EXPECT_FALSE(device.read(b.whole(), out).ok()) << "a logged launch's late failure taints";
  EXPECT_TRUE(device.read(c.whole(), out).ok());
}

TEST_F(BackendFaults, S6_ALogEntryReusedAfterAWroteOnlyLaunchCoversItsNewLaunchsWholeWriteSet) {
  // The log refills entries it retired (their capacity only): an entry
  // left by a wrote_only launch, which named four bytes, must not lend
  // that list to the next launch logged in it, which wrote all sixteen.
  const Allocation a = device.create_buffer(16);
  const Allocation b = device.create_buffer(16);
  backend.oldest = 1;
  EXPECT_TRUE(
      device
          .launch("partial", {}, {a.whole()},
                  [](const KernelContext&) {
                    return LaunchOutcome::wrote_only({WrittenRange{0, ByteRange::of(0, 4)}});
                  })
          .ran());
  backend.oldest.reset(); // Launch 1 confirmed: the next launch retires its entry.
  EXPECT_TRUE(device.launch("confirmed", {}, {b.whole()}, fill).ran());
  backend.oldest = 3;
  EXPECT_TRUE(device.launch("whole", {}, {a.whole()}, fill).ran()); // Logged in entry 1's place.
  backend.late.push_back(LateFailure{3, Error::launch("checked kernel failed"), {}});
  backend.oldest.reset();
  device.synchronize();
  std::vector<std::byte> out(4);
  for (std::uint64_t at = 0; at < 16; at += 4) {
    EXPECT_FALSE(device.read(Binding{a.id(), ByteRange::sized(at, 4)}, out).ok())
        << "bytes " << at << "+4 of the late-failed launch's output read clean";
  }
  EXPECT_TRUE(device.read(Binding{b.id(), ByteRange::sized(0, 4)}, out).ok());
}

TEST_F(BackendFaults, S6_S2_ACleanLaunchLoggedAfterAWroteOnlyOrAPartialOneCoversItsWholeWriteSet) {
  // A clean launch does not clear the lists the log copies of a launch
  // that named its writes (S6) or failed part way (S2): they are emptied
  // only when it is logged (device.cpp, run_flat). So a clean launch
  // logged right after such a launch, plainly or through a plan (whose
  // bindings the log then takes from the plan), must be logged as covering
  // its whole write set: a late failure of it taints all of its output and
  // what was computed from it since, and nothing of the earlier outputs.
  // The consumer of that output leaves the clean path (its own output
  // holds a failure), where a plan's bindings are looked up for the
  // general scope and its log entry: it must be logged as reading it.
  for (const bool through_plan : {false, true}) {
    SCOPED_TRACE(through_plan ? "through plans" : "plainly");
    const Allocation named = device.create_buffer(16);
    const Allocation partial = device.create_buffer(16);
    const Allocation first = device.create_buffer(16);
    const Allocation second = device.create_buffer(16);
    const Allocation sink = device.create_buffer(16);
    const Binding first_whole[] = {first.whole()};
    const Binding second_whole[] = {second.whole()};
    const Binding sink_whole[] = {sink.whole()};
    const LaunchPlan first_plan = device.plan({}, first_whole);
    const LaunchPlan second_plan = device.plan({}, second_whole);
    const LaunchPlan consumer_plan = device.plan(first_whole, sink_whole);
    // A clean launch that fills its output; returns its number.
    const auto clean = [&](const LaunchPlan& plan, std::string_view kernel) {
      std::uint64_t number = 0;
      const auto body = [&](const KernelContext& context) {
        number = context.launch();
        return fill(context);
      };
      const bool ran = through_plan
                           ? device.submit(plan, kernel, body).ran()
                           : device.launch(kernel, plan.reads(), plan.writes(), body).ran();
      EXPECT_TRUE(ran) << kernel;
      return number;
    };
    EXPECT_EQ(device
                  .launch("spoil", {}, {sink.whole()},
                          [](const KernelContext&) {
                            return LaunchOutcome::failure(Error::launch("spoilt"));
                          })
                  .status,
              LaunchStatus::Failed);
    backend.oldest = 1; // Everything from here on is unconfirmed, so logged.
    EXPECT_TRUE(
        device
            .launch("named", {}, {named.whole()},
                    [](const KernelContext& context) {
                      static_cast<void>(fill(context));
                      return LaunchOutcome::wrote_only({WrittenRange{0, ByteRange::of(0, 4)}});
                    })
            .ran());
    const std::uint64_t after_named = clean(first_plan, "after named");
    EXPECT_EQ(device
                  .launch("partial", {}, {partial.whole()},
                          [](const KernelContext&) {
                            return LaunchOutcome::partial(Error::launch("half"),
                                                          {WrittenRange{0, ByteRange::of(0, 8)}});
                          })
                  .status,
              LaunchStatus::Failed);
    const std::uint64_t after_partial = clean(second_plan, "after partial");
    static_cast<void>(clean(consumer_plan, "consumer")); // Reads `first`, repairs `sink`.
    backend.late.push_back(LateFailure{after_named, Error::launch("late one"), {}});
    backend.late.push_back(LateFailure{after_partial, Error::launch("late two"), {}});
    backend.oldest.reset();
    device.synchronize();
    std::vector<std::byte> out(4);
    for (std::uint64_t at = 0; at < 16; at += 4) {
      for (const Allocation* stale : {&first, &second, &sink}) {
        EXPECT_FALSE(device.read(Binding{stale->id(), ByteRange::sized(at, 4)}, out).ok())
            << "bytes " << at << "+4 of " << to_string(stale->id()) << " read clean";
      }
      EXPECT_TRUE(device.read(Binding{named.id(), ByteRange::sized(at, 4)}, out).ok())
          << "bytes " << at << "+4 of the wrote_only launch's output read stale";
      EXPECT_EQ(device.read(Binding{partial.id(), ByteRange::sized(at, 4)}, out).ok(), at < 8)
          << "bytes " << at << "+4 of the partly failed launch's output";
    }
  }
}

TEST(LateFailureOutOfMemory, D1_AnAttributionThatRunsOutOfMemoryIsRetriedAndLosesNoStaleByte) {
  // A checked kernel fails late after a consumer has read its output, and
  // many unrelated checked kernels fail late too (reported newest first, so
  // the device must order them). Each attribution plans the stale set,
  // mints a failure, records the path and taints. Fail every allocation of
  // synchronize in turn: it throws, the graph and the pool stay consistent
  // (R1-R3), and the next synchronize attributes every failure in full:
  // each buffer reads stale with its root, the consumer's with the path
  // (D1, G8), and everything goes at the end (R4).
  constexpr std::size_t kOthers = 16;
  constexpr std::uint64_t kMaxFaults = 4000;
  bool completed = false;
  for (std::uint64_t n = 0; n < kMaxFaults && !completed; ++n) {
    ScriptedBackend backend;
    Device device(backend);
    {
      const Allocation made = device.create_buffer(32);
      const Allocation used = device.create_buffer(32);
      std::vector<Allocation> others;
      backend.oldest = 1;
      ASSERT_TRUE(device.launch("producer", {}, {made.whole()}, fill).ran());
      ASSERT_TRUE(device.launch("consumer", {made.whole()}, {used.whole()}, fill).ran());
      for (std::size_t at = 0; at < kOthers; ++at) {
        others.push_back(device.create_buffer(8));
        ASSERT_TRUE(device.launch("other", {}, {others.back().whole()}, fill).ran());
      }
      for (std::uint64_t launch = 2 + kOthers; launch > 2; --launch) {
        backend.late.push_back(LateFailure{launch, Error::launch("other failed"), {}});
      }
      backend.late.push_back(LateFailure{1, Error::launch("checked kernel failed"), {}});
      backend.oldest.reset();

      arm_allocation_fault(n);
      try {
        device.synchronize();
        completed = disarm_allocation_fault() >= 0; // No fault left to fire: done.
      } catch (const std::bad_alloc&) {
        EXPECT_LT(disarm_allocation_fault(), 0);
        EXPECT_NO_THROW(device.check_invariants()) << "allocation " << n;
        device.synchronize(); // The retry.
      }
      std::vector<std::byte> out(32);
      const ReadOutcome consumer = device.read(used.whole(), out);
      ASSERT_FALSE(consumer.ok()) << "allocation " << n << ": the consumer's output is garbage";
      ASSERT_EQ(consumer.reports.size(), 1u) << "allocation " << n;
      EXPECT_NE(to_string(consumer.reports[0]).find("checked kernel failed"), std::string::npos)
          << to_string(consumer.reports[0]);
      EXPECT_NE(to_string(consumer.reports[0]).find("consumer"), std::string::npos)
          << "the path names the consumer: " << to_string(consumer.reports[0]);
      EXPECT_FALSE(device.read(made.whole(), out).ok()) << "allocation " << n;
      std::vector<std::byte> small(8);
      for (const Allocation& other : others) {
        EXPECT_FALSE(device.read(other.whole(), small).ok())
            << "allocation " << n << ": a late failure was lost";
      }
      EXPECT_EQ(device.graph().size(), 1u + kOthers)
          << "allocation " << n << ": one failure per late report, no leftovers";
      device.check_invariants();
    }
    device.sweep();
    EXPECT_TRUE(device.graph().empty()) << "allocation " << n << ": R4";
  }
  EXPECT_TRUE(completed) << "the attribution still allocated after " << kMaxFaults << " faults";
}

// ------------------------------------------------------------ the heap runs out

TEST_F(BackendFaults, S1_AnOutOfMemoryWhileClaimingTheWriteSetPropagatesAndMintsNothing) {
  const Allocation out = device.create_buffer(64);
  // A failure over the middle of the buffer: claiming the whole buffer for
  // the next launch splits it, which spills to the heap (T6).
  EXPECT_FALSE(device
                   .launch("half", {}, {out.bind(16, 16)},
                           [](const KernelContext&) {
                             return LaunchOutcome::failure(Error::launch("half failed"));
                           })
                   .ran());
  const std::size_t nodes = device.graph().size();
  bool fired = false;
  for (std::uint64_t n = 0; n < 8 && !fired; ++n) {
    arm_allocation_fault(n);
    try {
      static_cast<void>(device.launch("whole", {}, {out.whole()}, fill));
      fired = disarm_allocation_fault() < 0;
    } catch (const std::bad_alloc&) {
      fired = disarm_allocation_fault() < 0;
      EXPECT_TRUE(fired);
      EXPECT_EQ(device.graph().size(), nodes) << "no provisional failure is left behind";
      device.check_invariants();
      break;
    }
    // It ran: put the half failure back for the next attempt.
    EXPECT_FALSE(device
                     .launch("half", {}, {out.bind(16, 16)},
                             [](const KernelContext&) {
                               return LaunchOutcome::failure(Error::launch("half failed"));
                             })
                     .ran());
  }
  EXPECT_TRUE(fired) << "no allocation in the scope could be failed";
}

TEST_F(BackendFaults, S3_ABodyThrowingWhenEvenItsMessageCannotBeBuiltStaysTornDown) {
  const Allocation out = device.create_buffer(16);
  try {
    device.launch("a_kernel_with_a_long_name", {}, {out.whole()}, [](const KernelContext&) {
      const std::runtime_error error("boom");
      arm_allocation_fault(0); // The device's message for S3 allocates first.
      throw error;
      return LaunchOutcome::success();
    });
    ADD_FAILURE() << "the body's exception did not propagate";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "boom") << "the body's own exception, not the bad_alloc";
  }
  EXPECT_LT(disarm_allocation_fault(), 0) << "the message's allocation failed";
  const std::vector<Report> reports = device.stale_reports(out.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].root, Error::torn_down()) << "the payload-free TornDown stays";
}

TEST(ManagerOutOfMemory, P3_AManagerWhoseRecordsCannotBeAllocatedThrowsAndLeaksNothing) {
  HostStorage storage(256);
  ErrorGraph graph;
  int failures = 0;
  for (std::uint64_t n = 0; n < 64; ++n) {
    arm_allocation_fault(n);
    try {
      MemoryManager memory(storage, graph);
      const bool fired = disarm_allocation_fault() < 0;
      EXPECT_FALSE(fired);
      break; // Built with every allocation it needed.
    } catch (const std::bad_alloc&) {
      EXPECT_LT(disarm_allocation_fault(), 0);
      ++failures;
    }
  }
  EXPECT_GE(failures, 2) << "the inbox, the slice cache and the pools each allocate";
  EXPECT_TRUE(graph.empty());
}

TEST(ManagerOutOfMemory, P3_AnAllocationTheHostCannotRecordIsOutOfMemoryAndChangesNothing) {
  HostStorage storage(256);
  ErrorGraph graph;
  MemoryManager memory(storage, graph);
  std::vector<Allocation> held;
  std::vector<std::string> causes;
  // Fresh tables and pages at every size class: each first allocation grows
  // something, and failing each of its allocations in turn must leave the
  // manager as it was.
  for (std::uint64_t size : {64u, 100000u, 64u << 20, 512u}) {
    for (std::uint64_t n = 0; n < 16; ++n) {
      const MemoryStats before = memory.stats();
      arm_allocation_fault(n);
      try {
        Allocation allocation = memory.allocate(size);
        disarm_allocation_fault();
        held.push_back(std::move(allocation));
        break;
      } catch (const Exception& error) {
        disarm_allocation_fault();
        EXPECT_EQ(error.kind(), ErrorKind::OutOfMemory);
        causes.emplace_back(error.what());
        EXPECT_EQ(memory.stats().allocations, before.allocations);
        memory.check_invariants();
      }
    }
  }
  const auto mentions = [&](const char* words) {
    for (const std::string& cause : causes) {
      if (cause.find(words) != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(mentions("could not grow the allocation table"));
  EXPECT_TRUE(mentions("could not allocate the pool's own records"));
  held.clear();
  memory.sweep();
  memory.check_invariants();
}

// A host copy on DeferredHostBackend queues its work on the stream and runs
// it (O1); the work is one pointer to the copy's record, so std::function
// keeps it inline. Only the queue's own blocks (a few items each) allocate:
// capturing the copy's four operands took a heap block per copy (issue 13).
TEST(BackendFaultsCopies, O1_AQueuedHostCopyTakesNoHeapBlockForItsWorkAndCopiesEveryByte) {
  DeferredHostBackend backend;
  const StreamHandle stream = backend.default_stream();
  std::vector<std::byte> source(64);
  std::vector<std::byte> target(64);
  for (std::size_t at = 0; at < source.size(); ++at) {
    source[at] = static_cast<std::byte>(at * 7 + 1);
  }
  ASSERT_FALSE(backend.copy_in(stream, target.data(), source.data(), source.size()).has_value());
  constexpr int copies = 64;
  bool failed = false;
  const std::uint64_t allocations = testing::allocations_during([&] {
    for (int copy = 0; copy < copies; ++copy) {
      const bool in = copy % 2 == 0;
      const auto size = static_cast<std::size_t>(copy);
      failed = failed || (in ? backend.copy_in(stream, target.data(), source.data(), size)
                             : backend.copy_out(stream, target.data(), source.data(), size))
                             .has_value();
    }
  });
  EXPECT_FALSE(failed);
  EXPECT_LT(allocations, std::uint64_t{copies / 4});
  EXPECT_EQ(target, source);
  EXPECT_EQ(backend.pending(), 0u);
}

} // namespace
} // namespace taintpool
