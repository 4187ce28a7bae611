// Collectives' refusals and late paths (P3, C5, C6): bad sizes and peers are
// refused before anything starts, a Device that cannot carry late verdicts
// is refused, a Collectives that goes away with calls in flight settles them,
// and an engine that never lands (a scripted Communicator) gets a
// Communicator failure at the synchronize instead of a hang.
#include <taintpool/collective/collectives.hpp>
#include <taintpool/collective/loopback.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/exception.hpp>
#include <taintpool/host/host_backend.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace taintpool {
namespace {

struct Rank {
  Rank(LoopbackWorld& world, int rank)
      : collectives(std::make_unique<Collectives>(device, world.rank(rank))) {}
  HostBackend host;
  CollectiveBackend backend{host};
  Device device{backend};
  std::unique_ptr<Collectives> collectives;
};

Allocation buffer_of(Device& device, std::size_t size, std::uint8_t value) {
  return device.create_buffer(std::vector<std::byte>(size, static_cast<std::byte>(value)));
}

void expect_invalid_binding(const std::function<void()>& call, const std::string& fragment) {
  try {
    call();
    FAIL() << "a bad size was taken; expected: " << fragment;
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidBinding);
    EXPECT_NE(error.error().message().find(fragment), std::string::npos) << error.error().message();
  }
}

TEST(Collectives, P3_SizesThatDoNotMatchTheCollectiveAreInvalidBindingsNamingTheRule) {
  LoopbackWorld world(2);
  Rank rank(world, 0);
  Device& device = rank.device;
  Collectives& collectives = *rank.collectives;
  const StreamId stream = device.default_stream();
  const Allocation eight = buffer_of(device, 8, 1);
  const Allocation twelve = buffer_of(device, 12, 1);
  const Allocation four = buffer_of(device, 4, 1);
  expect_invalid_binding(
      [&] {
        collectives.all_reduce(stream, "x", eight.whole(), twelve.whole(), DataType::u8,
                               ReduceOp::sum);
      },
      "differ in size");
  expect_invalid_binding(
      [&] {
        collectives.reduce_scatter(stream, "x", twelve.whole(), four.whole(), DataType::i32,
                                   ReduceOp::sum);
      },
      "must be 2 times recv");
  expect_invalid_binding(
      [&] { collectives.broadcast(stream, "x", eight.whole(), four.whole(), DataType::u8, 0); },
      "the root's send");
  expect_invalid_binding([&] { collectives.send(stream, "x", twelve.whole(), DataType::i64, 1); },
                         "not a whole number of i64 elements");
  EXPECT_EQ(world.waiting(), 0u);
  EXPECT_FALSE(world.broken());
  EXPECT_EQ(device.read_bytes(eight.whole()), std::vector<std::byte>(8, std::byte{1}));
}

TEST(Collectives, P3_ARootOrPeerOutsideTheWorldIsRefusedWithItsNumber) {
  LoopbackWorld world(2);
  Rank rank(world, 0);
  const StreamId stream = rank.device.default_stream();
  const Allocation eight = buffer_of(rank.device, 8, 1);
  try {
    rank.collectives->broadcast(stream, "x", eight.whole(), eight.whole(), DataType::u8, 2);
    FAIL() << "root 2 of 2 was taken";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("broadcast(x): rank 2 is not a peer of rank 0 of 2"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW(rank.collectives->recv(stream, "x", eight.whole(), DataType::u8, -1),
               std::invalid_argument);
  EXPECT_EQ(world.waiting(), 0u);
}

TEST(Collectives, C5_AnEngineThatLandsLateNeedsADeviceOnACollectiveBackend) {
  LoopbackWorld world(2);
  HostBackend host;
  Device device(host);
  try {
    Collectives collectives(device, world.rank(0));
    FAIL() << "late verdicts with nowhere to go were accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what())
                  .find("loopback rank 0 of 2 delivers the other ranks' "
                        "summaries late"),
              std::string::npos)
        << error.what();
  }
}

TEST(Collectives, C5_C6_ACollectivesThatGoesAwayWithACallInFlightSettlesItAndBreaksTheWorld) {
  LoopbackWorld world(2);
  Rank rank(world, 0);
  const Allocation send = buffer_of(rank.device, 8, 3);
  const Allocation recv = rank.device.create_buffer(8);
  const CollectiveResult result =
      rank.collectives->all_reduce(rank.device.default_stream(), "grads", send.whole(),
                                   recv.whole(), DataType::u8, ReduceOp::sum);
  EXPECT_TRUE(result.verdict_pending);
  EXPECT_EQ(rank.collectives->pending(), 1u);
  rank.collectives.reset(); // Rank 1 never calls: the wait cannot complete.
  ASSERT_TRUE(world.broken());
  EXPECT_EQ(world.broken()->message(),
            "rank 1 did not take part in collective 0 (all_reduce) that rank 0 waited for");
  const std::vector<Report> reports = rank.device.stale_reports(recv.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].root.kind(), ErrorKind::Communicator);
  EXPECT_EQ(rank.device.read_bytes(send.whole()), std::vector<std::byte>(8, std::byte{3}));
  rank.device.check_invariants();
}

TEST(Collectives, C5_APollBeforeTheOtherRankCallsConfirmsNothingAndTheVerdictStillArrives) {
  LoopbackWorld world(2);
  Rank zero(world, 0);
  Rank one(world, 1);
  const Allocation a0 = buffer_of(zero.device, 4, 1);
  const Allocation b0 = buffer_of(zero.device, 4, 2);
  const Allocation out_a0 = zero.device.create_buffer(4);
  const Allocation out_b0 = zero.device.create_buffer(4);
  const StreamId s0 = zero.device.default_stream();
  EXPECT_TRUE(
      zero.collectives->all_reduce(s0, "a", a0.whole(), out_a0.whole(), DataType::u8, ReduceOp::max)
          .verdict_pending);
  // The second call polls the first: not landed, so it stays pending.
  EXPECT_TRUE(
      zero.collectives->all_reduce(s0, "b", b0.whole(), out_b0.whole(), DataType::u8, ReduceOp::max)
          .verdict_pending);
  EXPECT_EQ(zero.collectives->pending(), 2u);
  const Allocation a1 = buffer_of(one.device, 4, 5);
  const Allocation b1 = buffer_of(one.device, 4, 0);
  const Allocation out_a1 = one.device.create_buffer(4);
  const Allocation out_b1 = one.device.create_buffer(4);
  const StreamId s1 = one.device.default_stream();
  EXPECT_FALSE(
      one.collectives->all_reduce(s1, "a", a1.whole(), out_a1.whole(), DataType::u8, ReduceOp::max)
          .verdict_pending);
  EXPECT_FALSE(
      one.collectives->all_reduce(s1, "b", b1.whole(), out_b1.whole(), DataType::u8, ReduceOp::max)
          .verdict_pending);
  EXPECT_EQ(zero.device.read_bytes(out_a0.whole()), std::vector<std::byte>(4, std::byte{5}));
  EXPECT_EQ(zero.device.read_bytes(out_b0.whole()), std::vector<std::byte>(4, std::byte{2}));
  EXPECT_EQ(zero.collectives->pending(), 0u);
  EXPECT_FALSE(world.broken());
}

/// An engine that never lands a call (a peer that hangs forever): what a
/// bounded wait on a real engine reports, scripted.
class NeverLands final : public Communicator {
 public:
  [[nodiscard]] int rank() const noexcept override { return 0; }
  [[nodiscard]] int size() const noexcept override { return 2; }
  [[nodiscard]] std::string name() const override { return "never-lands"; }
  [[nodiscard]] bool lands_at_once() const noexcept override { return false; }
  [[nodiscard]] Ticket start(const CollectiveCall& /*call*/) override { return ++started; }
  [[nodiscard]] bool landed(Ticket /*ticket*/) override { return false; }
  void wait_all() override { ++waits; }
  [[nodiscard]] std::optional<Error> failure(Ticket /*ticket*/) const override {
    return std::nullopt;
  }
  [[nodiscard]] std::span<const std::byte> summaries(Ticket /*ticket*/) const override {
    return {};
  }
  void release(Ticket /*ticket*/) noexcept override { ++released; }
  [[nodiscard]] std::optional<Error> broken() const override { return std::nullopt; }

  Ticket started = 0;
  int waits = 0;
  int released = 0;
};

TEST(Collectives,
     C6_ACollectiveThatHasNotLandedWhenWaitedForStalesItsOutputWithACommunicatorError) {
  NeverLands engine;
  HostBackend host;
  CollectiveBackend backend(host);
  Device device(backend);
  Collectives collectives(device, engine);
  const Allocation send = buffer_of(device, 8, 1);
  const Allocation recv = buffer_of(device, 8, 4);
  EXPECT_TRUE(collectives
                  .all_gather(device.default_stream(), "x", device.create_buffer(4).whole(),
                              recv.whole(), DataType::u8)
                  .verdict_pending);
  device.synchronize();
  EXPECT_GE(engine.waits, 1);
  EXPECT_EQ(engine.released, 1);
  EXPECT_EQ(collectives.pending(), 0u);
  const std::vector<Report> reports = device.stale_reports(recv.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].root.kind(), ErrorKind::Communicator);
  EXPECT_EQ(reports[0].root.message(),
            "all_gather(x) on rank 0: never-lands: the collective had not landed when waited for "
            "(reported when the device synchronised)");
  // A send has no outputs: its late failure is dropped, its input stays readable.
  EXPECT_TRUE(collectives.send(device.default_stream(), "y", send.whole(), DataType::u8, 1)
                  .verdict_pending);
  device.synchronize();
  EXPECT_EQ(engine.released, 2);
  EXPECT_EQ(device.read_bytes(send.whole()), std::vector<std::byte>(8, std::byte{1}));
  device.check_invariants();
}

/// An engine that lands every call only once waited for, with nothing to
/// say: lands_at_once is true, so no CollectiveBackend is needed.
class LandsOnWait final : public Communicator {
 public:
  [[nodiscard]] int rank() const noexcept override { return 1; }
  [[nodiscard]] int size() const noexcept override { return 2; }
  [[nodiscard]] std::string name() const override { return "lands-on-wait"; }
  [[nodiscard]] bool lands_at_once() const noexcept override { return true; }
  [[nodiscard]] Ticket start(const CollectiveCall& call) override {
    last = call;
    done = false;
    return 1;
  }
  [[nodiscard]] bool landed(Ticket /*ticket*/) override { return done; }
  void wait_all() override {
    ++waits;
    done = true;
  }
  [[nodiscard]] std::optional<Error> failure(Ticket /*ticket*/) const override {
    return std::nullopt;
  }
  [[nodiscard]] std::span<const std::byte> summaries(Ticket /*ticket*/) const override {
    return {};
  }
  void release(Ticket /*ticket*/) noexcept override {}
  [[nodiscard]] std::optional<Error> broken() const override { return std::nullopt; }

  CollectiveCall last;
  bool done = false;
  int waits = 0;
};

TEST(Collectives, C5_AnEngineWithoutLateVerdictsIsWaitedForBeforeTheCallReturns) {
  LandsOnWait engine;
  HostBackend host;
  Device device(host); // No CollectiveBackend: the engine lands before returning.
  Collectives collectives(device, engine);
  const Allocation recv = buffer_of(device, 8, 6);
  const CollectiveResult result =
      collectives.recv(device.default_stream(), "x", recv.whole(), DataType::i32, 0);
  EXPECT_FALSE(result.verdict_pending);
  EXPECT_EQ(engine.waits, 1);
  EXPECT_EQ(engine.last.kind, CollectiveKind::recv);
  EXPECT_EQ(engine.last.count, 2u);
  EXPECT_EQ(engine.last.peer, 0);
  EXPECT_TRUE(device.stale_reports(recv.whole()).empty());
  EXPECT_EQ(collectives.pending(), 0u);
}

TEST(Collectives, C4_AnOutputFedByMoreThanEightStaleRanksNamesEightAndCountsTheRest) {
  constexpr int ranks = 10;
  LoopbackWorld world(ranks);
  std::vector<std::unique_ptr<Rank>> all;
  std::vector<Allocation> outputs;
  for (int rank = 0; rank < ranks; ++rank) {
    all.push_back(std::make_unique<Rank>(world, rank));
  }
  std::vector<Allocation> inputs;
  for (int rank = 0; rank < ranks; ++rank) {
    Device& device = all[static_cast<std::size_t>(rank)]->device;
    inputs.push_back(buffer_of(device, 4, 1));
    outputs.push_back(device.create_buffer(4));
    if (rank != 0) { // Every rank but 0 feeds a stale input (S2).
      const Binding stale = inputs.back().whole();
      const LaunchResult failed = device.launch("producer", {}, {stale}, [](const KernelContext&) {
        return LaunchOutcome::failure(Error::out_of_memory("no room"));
      });
      EXPECT_EQ(failed.status, LaunchStatus::Failed);
    }
  }
  for (int rank = 0; rank < ranks; ++rank) {
    Rank& it = *all[static_cast<std::size_t>(rank)];
    it.collectives->all_reduce(
        it.device.default_stream(), "grads", inputs[static_cast<std::size_t>(rank)].whole(),
        outputs[static_cast<std::size_t>(rank)].whole(), DataType::u8, ReduceOp::sum);
  }
  const std::vector<Report> reports = all[0]->device.stale_reports(outputs[0].whole());
  ASSERT_EQ(reports.size(), 1u);
  const std::string& message = reports[0].root.message();
  EXPECT_EQ(reports[0].root.kind(), ErrorKind::Remote);
  EXPECT_NE(message.find("fed stale bytes from rank 1: "), std::string::npos) << message;
  EXPECT_NE(message.find("; and from rank 8: "), std::string::npos) << message;
  EXPECT_EQ(message.find("rank 9: "), std::string::npos) << message;
  EXPECT_NE(message.find("; and from 1 more ranks"), std::string::npos) << message;
  EXPECT_FALSE(world.broken());
}

// ------------------------------------------------------------ the shape

TEST(Summary, C4_APieceOutsideThisRanksReduceScatterBlockFeedsNothingHere) {
  CollectiveShape shape;
  shape.kind = CollectiveKind::reduce_scatter;
  shape.count = 2;
  shape.element_size = 4;
  shape.ranks = 2;
  shape.me = 1;
  EXPECT_EQ(shape.send_bytes(), 16u);
  EXPECT_EQ(shape.recv_bytes(), 8u);
  ASSERT_EQ(shape.layout().pieces(), 4u);
  EXPECT_TRUE(shape.image(0, 0).empty()); // Rank 1's block is bytes 8..16.
  EXPECT_TRUE(shape.image(0, 1).empty());
  EXPECT_EQ(shape.image(0, 2), ByteRange::of(0, 4));
  EXPECT_EQ(shape.image(1, 3), ByteRange::of(4, 8));
}

TEST(Summary, C4_OnlyTheBroadcastRootFeedsTheOtherRanks) {
  CollectiveShape shape;
  shape.kind = CollectiveKind::broadcast;
  shape.count = 8;
  shape.ranks = 3;
  shape.me = 0;
  shape.peer = 2;
  EXPECT_EQ(shape.send_bytes(), 0u);
  EXPECT_EQ(shape.recv_bytes(), 8u);
  EXPECT_FALSE(shape.feeds_me(1));
  EXPECT_TRUE(shape.feeds_me(2));
  EXPECT_TRUE(shape.image(1, 0).empty());
  EXPECT_EQ(shape.image(2, 0), ByteRange::of(0, 1));
}

TEST(Summary, C4_AnUnknownKindSendsReceivesAndFeedsNothing) {
  CollectiveShape shape;
  shape.kind = static_cast<CollectiveKind>(200); // A corrupt wire byte.
  shape.count = 8;
  shape.ranks = 2;
  EXPECT_EQ(shape.send_bytes(), 0u);
  EXPECT_EQ(shape.recv_bytes(), 0u);
  EXPECT_FALSE(shape.feeds_me(0));
  EXPECT_TRUE(shape.image(0, 0).empty());
}

TEST(Summary, D2_ASendReceivesNothingAndFeedsNoRank) {
  CollectiveShape shape;
  shape.kind = CollectiveKind::send;
  shape.count = 4;
  shape.element_size = 8;
  shape.ranks = 2;
  shape.peer = 1;
  EXPECT_EQ(shape.send_bytes(), 32u);
  EXPECT_EQ(shape.recv_bytes(), 0u);
  EXPECT_FALSE(shape.feeds_me(1));
  EXPECT_TRUE(shape.image(1, 0).empty());
}

// ------------------------------------------------------------ the exchange

TEST(Exchange, C4_CarryingAFailureTheInputDoesNotHaveIsALoudContractViolation) {
  HostBackend host;
  Device device(host);
  const Allocation in = buffer_of(device, 8, 1);
  const Allocation out = device.create_buffer(8);
  const std::array<Binding, 1> reads{in.whole()};
  const std::array<Binding, 1> writes{out.whole()};
  try {
    device.exchange(device.default_stream(), "x", reads, writes, [&](const ExchangeContext&) {
      ExchangeOutcome outcome; // The input is clean: no failure to carry.
      outcome.carried.push_back(
          CarriedStale{0, ByteRange::of(0, 4), 0, FailureId::from_raw(12345)});
      return outcome;
    });
    FAIL() << "a made-up carried failure was taken";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("not a failure of that input"), std::string::npos)
        << error.what();
  }
  // S3: the write set stays claimed, torn down; the input is untouched.
  EXPECT_EQ(device.stale_reports(out.whole()).at(0).root.kind(), ErrorKind::TornDown);
  EXPECT_EQ(device.read_bytes(in.whole()), std::vector<std::byte>(8, std::byte{1}));
  device.check_invariants();
}

TEST(Exchange, C4_FedStaleBytesWithoutAnErrorToCarryAreALoudContractViolation) {
  HostBackend host;
  Device device(host);
  const Allocation in = buffer_of(device, 8, 1);
  const Allocation out = device.create_buffer(8);
  const std::array<Binding, 1> reads{in.whole()};
  const std::array<Binding, 1> writes{out.whole()};
  try {
    device.exchange(device.default_stream(), "x", reads, writes, [&](const ExchangeContext&) {
      ExchangeOutcome outcome;
      outcome.fed.push_back(WrittenRange{0, ByteRange::of(0, 4)});
      return outcome;
    });
    FAIL() << "fed stale bytes without an error were taken";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("fed stale bytes without an error"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(device.stale_reports(out.whole()).at(0).root.kind(), ErrorKind::TornDown);
  device.check_invariants();
}

} // namespace
} // namespace taintpool
