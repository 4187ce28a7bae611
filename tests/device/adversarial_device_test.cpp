// Pins what the Device does with the calls and shapes the review1 audit
// aimed at the surface added since 0.1.0 (streams, plans, exchanges): every
// Device call made from inside a body is refused and the scope ends as a
// throw (O5, S3), plans and stream calls refuse a stream that is not live,
// and an in-place exchange carries its input's failure to the bytes it
// overwrote even when that input was the failure's only carrier (C4, R3).
//
// All of these held on main. Each covers what no earlier test did: the O5
// table of streams_test.cpp named seven calls, not the stream, plan,
// exchange and housekeeping calls below nor a call from an exchange's body;
// the P3 stream test launched only, never made a buffer, a plan or a host
// write on a dead stream.
#include <taintpool/device/device.hpp>
#include <taintpool/device/exchange.hpp>
#include <taintpool/device/launch_plan.hpp>
#include <taintpool/error.hpp>
#include <taintpool/exception.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/host/host_backend.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace taintpool {
namespace {

LaunchOutcome succeed(const KernelContext&) {
  return LaunchOutcome::success();
}

TEST(AdversarialDevice, O5_S3_EveryStreamPlanExchangeAndUpkeepCallFromABodyIsRefused) {
  HostBackend host;
  Device device(host);
  const StreamId side = device.create_stream();
  Allocation x = device.create_buffer(8, side);
  Allocation y = device.create_buffer(8, side);
  const std::array<Binding, 1> xs{x.whole()};
  const LaunchPlan plan = device.plan(side, {}, xs);
  const std::vector<std::pair<const char*, std::function<void()>>> calls = {
      {"create_stream", [&] { static_cast<void>(device.create_stream()); }},
      {"destroy_stream", [&] { device.destroy_stream(side); }},
      {"stream_stats", [&] { static_cast<void>(device.stream_stats()); }},
      {"plan", [&] { static_cast<void>(device.plan(side, {}, xs)); }},
      {"launch(plan)", [&] { static_cast<void>(device.launch(plan, "inner", succeed)); }},
      {"submit(plan)", [&] { static_cast<void>(device.submit(plan, "inner", succeed)); }},
      {"submit", [&] { static_cast<void>(device.submit("inner", {}, {x.whole()}, succeed)); }},
      {"exchange",
       [&] {
         static_cast<void>(device.exchange(
             side, "inner", {}, xs, [](const ExchangeContext&) { return ExchangeOutcome{}; }));
       }},
      {"awaits_verdict", [&] { static_cast<void>(device.awaits_verdict(xs)); }},
      {"sweep", [&] { device.sweep(); }},
      {"cleanup", [&] { device.cleanup(); }},
      {"check_invariants", [&] { device.check_invariants(); }},
  };
  std::vector<std::byte> out(8);
  for (const auto& named : calls) {
    const char* name = named.first;
    const std::function<void()>& call = named.second;
    EXPECT_THROW(static_cast<void>(device.launch(side, "outer", {}, {y.whole()},
                                                 [&](const KernelContext&) {
                                                   call();
                                                   return LaunchOutcome::success();
                                                 })),
                 std::logic_error)
        << name;
    const ReadOutcome read = device.read(y.whole(), out);
    ASSERT_FALSE(read.ok()) << name << ": S3, the write set stays torn down";
    EXPECT_NE(to_string(read).find("threw"), std::string::npos) << name;
    // The same call from an exchange's body, which is a body too.
    EXPECT_THROW(static_cast<void>(device.exchange(side, "outer", {}, std::array{y.whole()},
                                                   [&](const ExchangeContext&) {
                                                     call();
                                                     return ExchangeOutcome{};
                                                   })),
                 std::logic_error)
        << name << " from an exchange";
  }
  // Nothing the refused calls touched changed: the side stream still runs
  // the plan, and x was never written by them.
  EXPECT_TRUE(device.launch(plan, "after", succeed).ran());
  EXPECT_TRUE(device.read(x.whole(), out).ok());
  EXPECT_EQ(device.stream_stats().streams_created, 1u);
  device.check_invariants();
}

/// The ErrorKind `call` throws as an Exception, or Generic for none.
template <class Call>
ErrorKind kind_thrown(Call call) {
  try {
    call();
  } catch (const Exception& error) {
    return error.kind();
  }
  return ErrorKind::Generic;
}

TEST(AdversarialDevice,
     P3_ABufferPlanWriteOrReadOnAStreamThatIsNotLiveIsNotFoundAndChangesNothing) {
  DeferredHostBackend backend;
  Device device(backend);
  Device other(backend);
  const StreamId dead = device.create_stream();
  device.destroy_stream(dead);
  const StreamId theirs = other.create_stream();
  Allocation x = device.create_buffer(8);
  const std::array<Binding, 1> xs{x.whole()};
  const std::vector<std::byte> bytes(8, std::byte{3});
  std::vector<std::byte> into(8);
  const std::uint64_t live_before = device.memory().stats().allocations;
  for (const StreamId stream : {dead, theirs, StreamId{}, StreamId::of(dead.device(), 99)}) {
    EXPECT_EQ(kind_thrown([&] { static_cast<void>(device.create_buffer(8, stream)); }),
              ErrorKind::NotFound);
    EXPECT_EQ(kind_thrown([&] { static_cast<void>(device.create_buffer(bytes, stream)); }),
              ErrorKind::NotFound);
    EXPECT_EQ(kind_thrown([&] { static_cast<void>(device.plan(stream, {}, xs)); }),
              ErrorKind::NotFound);
    EXPECT_EQ(kind_thrown([&] { static_cast<void>(device.write(stream, x.whole(), bytes)); }),
              ErrorKind::NotFound);
    EXPECT_EQ(kind_thrown([&] { static_cast<void>(device.read(stream, x.whole(), into)); }),
              ErrorKind::NotFound);
    EXPECT_EQ(kind_thrown([&] {
                static_cast<void>(device.exchange(
                    stream, "x", {}, xs, [](const ExchangeContext&) { return ExchangeOutcome{}; }));
              }),
              ErrorKind::NotFound);
  }
  EXPECT_EQ(kind_thrown([&] { device.destroy_stream(dead); }), ErrorKind::NotFound)
      << "destroyed twice";
  EXPECT_EQ(device.memory().stats().allocations, live_before) << "no buffer was made";
  EXPECT_TRUE(device.stale_reports(x.whole()).empty()) << "x was not claimed";
  device.check_invariants();
}

TEST(AdversarialDevice, C4_R3_AnInPlaceExchangeCarriesItsOnlyCarriersFailureToTheBytesItOverwrote) {
  HostBackend host;
  Device device(host);
  Allocation buffer = device.create_buffer(16);
  // The buffer is the failure's only carrier: a failed launch leaves it so.
  const LaunchResult failed = device.launch("load", {}, {buffer.whole()}, [](const KernelContext&) {
    return LaunchOutcome::failure(Error::generic("disk gone"));
  });
  ASSERT_FALSE(failed.ran());
  const std::array<Binding, 1> both{buffer.whole()};
  std::size_t stale_seen = 0;
  const LaunchResult result = device.exchange(
      device.default_stream(), "reduce", both, both, [&](const ExchangeContext& context) {
        stale_seen = context.stale().size();
        ExchangeOutcome outcome;
        for (const StaleInput& stale : context.stale()) {
          outcome.carried.push_back(CarriedStale{0, stale.range, stale.input, stale.failure});
        }
        return outcome;
      });
  EXPECT_TRUE(result.ran());
  EXPECT_EQ(stale_seen, 1u);
  const std::vector<Report> reports = device.stale_reports(buffer.whole());
  ASSERT_EQ(reports.size(), 1u) << "the carried failure outlived the provisional claim";
  EXPECT_NE(reports[0].root.message().find("disk gone"), std::string::npos)
      << reports[0].root.message();
  device.check_invariants();
}

} // namespace
} // namespace taintpool
