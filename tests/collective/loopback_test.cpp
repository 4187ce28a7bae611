// The in-process loopback engine on its own (C3, C6): every element type and
// reduction computed exactly, pairs matched by peer, and every way a world of
// ranks breaks — disagreeing calls, a peer that never takes part, calls on a
// broken world — with the exact message each rank then reads. The engine is
// driven through the Communicator interface with raw host buffers, so a
// wrong figure here is the engine's, not the Device's.
#include <taintpool/collective/communicator.hpp>
#include <taintpool/collective/data_type.hpp>
#include <taintpool/collective/loopback.hpp>
#include <taintpool/exception.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace taintpool {
namespace {

template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& values) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

template <class T>
std::vector<T> values_of(const std::vector<std::byte>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

CollectiveCall call_of(CollectiveKind kind, const std::vector<std::byte>* send,
                       std::vector<std::byte>* recv, std::uint64_t count, DataType type,
                       ReduceOp op = ReduceOp::sum, int peer = 0) {
  CollectiveCall call;
  call.kind = kind;
  call.send = send != nullptr ? send->data() : nullptr;
  call.recv = recv != nullptr ? recv->data() : nullptr;
  call.count = count;
  call.type = type;
  call.op = op;
  call.peer = peer;
  return call;
}

/// All-reduce of two ranks' values with `op`; returns what each rank received.
template <class T>
std::array<std::vector<T>, 2> all_reduce_two(DataType type, ReduceOp op, const std::vector<T>& a,
                                             const std::vector<T>& b) {
  LoopbackWorld world(2);
  const std::vector<std::byte> send0 = bytes_of(a);
  const std::vector<std::byte> send1 = bytes_of(b);
  std::vector<std::byte> recv0(send0.size());
  std::vector<std::byte> recv1(send1.size());
  const Ticket t0 =
      world.rank(0).start(call_of(CollectiveKind::all_reduce, &send0, &recv0, a.size(), type, op));
  EXPECT_FALSE(world.rank(0).landed(t0));
  EXPECT_EQ(world.waiting(), 1u);
  const Ticket t1 =
      world.rank(1).start(call_of(CollectiveKind::all_reduce, &send1, &recv1, b.size(), type, op));
  EXPECT_TRUE(world.rank(0).landed(t0));
  EXPECT_TRUE(world.rank(1).landed(t1));
  EXPECT_FALSE(world.rank(0).failure(t0));
  EXPECT_FALSE(world.rank(1).failure(t1));
  EXPECT_EQ(world.waiting(), 0u);
  return {values_of<T>(recv0), values_of<T>(recv1)};
}

template <class T>
void expect_every_op(DataType type) {
  const std::vector<T> a{T(3), T(5), T(-2)};
  const std::vector<T> b{T(4), T(2), T(6)};
  const std::array<std::pair<ReduceOp, std::vector<T>>, 4> expected{{
      {ReduceOp::sum, {T(7), T(7), T(4)}},
      {ReduceOp::prod, {T(12), T(10), T(T(-2) * T(6))}},
      {ReduceOp::min, {T(3), T(2), std::min(T(-2), T(6))}},
      {ReduceOp::max, {T(4), T(5), std::max(T(-2), T(6))}},
  }};
  for (const auto& [op, want] : expected) {
    const auto got = all_reduce_two<T>(type, op, a, b);
    EXPECT_EQ(got[0], want) << name(type) << " " << name(op);
    EXPECT_EQ(got[1], want) << name(type) << " " << name(op);
  }
}

TEST(Loopback, C3_AllReduceComputesEveryOpOnEveryElementTypeExactlyOnEveryRank) {
  expect_every_op<std::uint8_t>(DataType::u8);
  expect_every_op<std::int32_t>(DataType::i32);
  expect_every_op<std::int64_t>(DataType::i64);
  expect_every_op<float>(DataType::f32);
  expect_every_op<double>(DataType::f64);
}

TEST(Loopback, C3_IntegerSumsAndProductsWrapInsteadOfOverflowing) {
  const auto u8 = all_reduce_two<std::uint8_t>(DataType::u8, ReduceOp::sum, {200}, {100});
  EXPECT_EQ(u8[0], std::vector<std::uint8_t>{44});
  const auto i32 = all_reduce_two<std::int32_t>(DataType::i32, ReduceOp::sum,
                                                {std::numeric_limits<std::int32_t>::max()}, {1});
  EXPECT_EQ(i32[1], std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::min()});
  const auto i64 = all_reduce_two<std::int64_t>(DataType::i64, ReduceOp::prod,
                                                {std::numeric_limits<std::int64_t>::min()}, {-1});
  EXPECT_EQ(i64[0], std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min()});
}

TEST(Loopback, C3_ElementSizesAndNamesAreThoseOfTheWireFormat) {
  EXPECT_EQ(size_of(DataType::u8), 1u);
  EXPECT_EQ(size_of(DataType::i32), 4u);
  EXPECT_EQ(size_of(DataType::f32), 4u);
  EXPECT_EQ(size_of(DataType::i64), 8u);
  EXPECT_EQ(size_of(DataType::f64), 8u);
  EXPECT_EQ(name(DataType::i64), "i64");
  EXPECT_EQ(name(DataType::f32), "f32");
  EXPECT_EQ(name(DataType::f64), "f64");
  EXPECT_EQ(name(ReduceOp::prod), "prod");
  EXPECT_EQ(name(ReduceOp::min), "min");
  EXPECT_EQ(name(ReduceOp::max), "max");
  EXPECT_EQ(name(CollectiveKind::reduce_scatter), "reduce_scatter");
  EXPECT_EQ(name(CollectiveKind::recv), "recv");
  // A value outside the enumerations (a corrupt wire byte) is named "?" and
  // counts as one byte, never undefined behaviour.
  EXPECT_EQ(name(static_cast<DataType>(200)), "?");
  EXPECT_EQ(name(static_cast<ReduceOp>(200)), "?");
  EXPECT_EQ(name(static_cast<CollectiveKind>(200)), "?");
  EXPECT_EQ(size_of(static_cast<DataType>(200)), 1u);
}

TEST(Loopback, C6_P3_AWorldPastItsBoundIsRefusedByNumberNotAllocatedUntilTheHostRunsOut) {
  // INT_MAX ranks: on main before the bound, an allocation per rank until
  // std::bad_alloc (or the host's OOM killer first).
  for (const int ranks : {LoopbackWorld::max_ranks + 1, std::numeric_limits<int>::max(), -1}) {
    try {
      LoopbackWorld world(ranks);
      ADD_FAILURE() << ranks << " ranks made a world";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find(std::to_string(ranks) + " ranks (1 to 4096)"),
                std::string::npos)
          << error.what();
    }
  }
  const LoopbackWorld largest(LoopbackWorld::max_ranks);
  EXPECT_EQ(largest.size(), 4096);
}

TEST(Loopback, C6_AWorldOfNoRanksOrAMissingRankIsRefusedWithItsNumber) {
  EXPECT_THROW(LoopbackWorld(0), std::invalid_argument);
  LoopbackWorld world(2);
  EXPECT_EQ(world.size(), 2);
  EXPECT_EQ(world.rank(1).rank(), 1);
  EXPECT_EQ(world.rank(1).size(), 2);
  EXPECT_EQ(world.rank(1).name(), "loopback rank 1 of 2");
  EXPECT_FALSE(world.rank(0).lands_at_once());
  try {
    static_cast<void>(world.rank(2));
    FAIL() << "rank 2 of 2 was handed out";
  } catch (const std::out_of_range& error) {
    EXPECT_NE(std::string(error.what()).find("no rank 2 of 2"), std::string::npos);
  }
  EXPECT_THROW(static_cast<void>(world.rank(-1)), std::out_of_range);
}

TEST(Loopback, C3_ReduceScatterGivesEachRankItsBlockOfTheReduction) {
  LoopbackWorld world(2);
  const std::vector<std::byte> send0 = bytes_of(std::vector<std::int32_t>{1, 2, 3, 4});
  const std::vector<std::byte> send1 = bytes_of(std::vector<std::int32_t>{10, 20, 30, 40});
  std::vector<std::byte> recv0(8);
  std::vector<std::byte> recv1(8);
  static_cast<void>(world.rank(0).start(
      call_of(CollectiveKind::reduce_scatter, &send0, &recv0, 2, DataType::i32, ReduceOp::max)));
  static_cast<void>(world.rank(1).start(
      call_of(CollectiveKind::reduce_scatter, &send1, &recv1, 2, DataType::i32, ReduceOp::max)));
  EXPECT_EQ(values_of<std::int32_t>(recv0), (std::vector<std::int32_t>{10, 20}));
  EXPECT_EQ(values_of<std::int32_t>(recv1), (std::vector<std::int32_t>{30, 40}));
}

TEST(Loopback, C3_ABroadcastFromRankOneGivesEveryRankRankOnesBytesAndSummary) {
  LoopbackWorld world(3);
  const std::vector<std::byte> root = bytes_of(std::vector<std::uint8_t>{7, 8, 9});
  const std::array<std::byte, 2> summary{std::byte{0xAB}, std::byte{0xCD}};
  std::array<std::vector<std::byte>, 3> recv{std::vector<std::byte>(3), std::vector<std::byte>(3),
                                             std::vector<std::byte>(3)};
  std::array<Ticket, 3> tickets{};
  for (int rank = 0; rank < 3; ++rank) {
    CollectiveCall call =
        call_of(CollectiveKind::broadcast, rank == 1 ? &root : nullptr,
                &recv[static_cast<std::size_t>(rank)], 3, DataType::u8, ReduceOp::sum, 1);
    if (rank == 1) {
      call.summary = summary;
    }
    tickets[static_cast<std::size_t>(rank)] = world.rank(rank).start(call);
  }
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(values_of<std::uint8_t>(recv[static_cast<std::size_t>(rank)]),
              (std::vector<std::uint8_t>{7, 8, 9}));
    const auto got = world.rank(rank).summaries(tickets[static_cast<std::size_t>(rank)]);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0], std::byte{0xAB});
    EXPECT_EQ(got[1], std::byte{0xCD});
  }
}

TEST(Loopback, D2_ASendMeetsOnlyTheRecvOfItsPeerAndCarriesItsSummary) {
  LoopbackWorld world(3);
  const std::vector<std::byte> payload = bytes_of(std::vector<std::int64_t>{-5, 6});
  const std::array<std::byte, 1> summary{std::byte{0x11}};
  std::vector<std::byte> into(16);
  // Rank 2 waits to receive from rank 0; rank 1's send to rank 2 is not it.
  const Ticket recv = world.rank(2).start(
      call_of(CollectiveKind::recv, nullptr, &into, 2, DataType::i64, ReduceOp::sum, 0));
  const std::vector<std::byte> other = bytes_of(std::vector<std::int64_t>{1, 1});
  const Ticket stray = world.rank(1).start(
      call_of(CollectiveKind::send, &other, nullptr, 2, DataType::i64, ReduceOp::sum, 0));
  EXPECT_EQ(world.waiting(), 2u);
  CollectiveCall send =
      call_of(CollectiveKind::send, &payload, nullptr, 2, DataType::i64, ReduceOp::sum, 2);
  send.summary = summary;
  const Ticket sent = world.rank(0).start(send);
  EXPECT_TRUE(world.rank(0).landed(sent));
  EXPECT_TRUE(world.rank(2).landed(recv));
  EXPECT_FALSE(world.rank(1).landed(stray));
  EXPECT_EQ(values_of<std::int64_t>(into), (std::vector<std::int64_t>{-5, 6}));
  ASSERT_EQ(world.rank(2).summaries(recv).size(), 1u);
  EXPECT_EQ(world.rank(2).summaries(recv)[0], std::byte{0x11});
  EXPECT_EQ(world.waiting(), 1u);
}

TEST(Loopback, C3_D2_APairMatchedBehindAnOlderOpenPairLeavesThatOneOpenAndItsBytesIntact) {
  // Pairs can complete out of call order (collectives cannot: the k-th of
  // every rank comes after its (k-1)-th), so the open pair a match closes
  // need not be the oldest. Only the matched one may leave the open list:
  // the older one must still meet its own peer, with its own bytes.
  LoopbackWorld world(3);
  const std::vector<std::byte> older_bytes = bytes_of(std::vector<std::int32_t>{7, -7});
  const std::vector<std::byte> newer_bytes = bytes_of(std::vector<std::int32_t>{40, 41});
  std::vector<std::byte> older_into(8);
  std::vector<std::byte> newer_into(8);
  // Oldest: rank 1 sends to rank 0. Then rank 2 waits to receive from 0.
  const Ticket older = world.rank(1).start(
      call_of(CollectiveKind::send, &older_bytes, nullptr, 2, DataType::i32, ReduceOp::sum, 0));
  const Ticket newer_recv = world.rank(2).start(
      call_of(CollectiveKind::recv, nullptr, &newer_into, 2, DataType::i32, ReduceOp::sum, 0));
  ASSERT_EQ(world.waiting(), 2u);
  // Rank 0's send to rank 2 closes the newer pair, behind the older one.
  const Ticket newer_send = world.rank(0).start(
      call_of(CollectiveKind::send, &newer_bytes, nullptr, 2, DataType::i32, ReduceOp::sum, 2));
  EXPECT_TRUE(world.rank(0).landed(newer_send));
  EXPECT_TRUE(world.rank(2).landed(newer_recv));
  EXPECT_EQ(values_of<std::int32_t>(newer_into), (std::vector<std::int32_t>{40, 41}));
  EXPECT_FALSE(world.rank(1).landed(older)) << "the older send has no receiver yet";
  EXPECT_EQ(world.waiting(), 1u);
  // The older send still meets rank 0's receive, with the bytes it sent.
  const Ticket older_recv = world.rank(0).start(
      call_of(CollectiveKind::recv, nullptr, &older_into, 2, DataType::i32, ReduceOp::sum, 1));
  EXPECT_TRUE(world.rank(0).landed(older_recv));
  EXPECT_TRUE(world.rank(1).landed(older));
  EXPECT_FALSE(world.rank(0).failure(older_recv));
  EXPECT_FALSE(world.rank(1).failure(older));
  EXPECT_EQ(values_of<std::int32_t>(older_into), (std::vector<std::int32_t>{7, -7}));
  EXPECT_EQ(world.waiting(), 0u);
  for (int rank = 0; rank < 3; ++rank) {
    world.rank(rank).wait_all();
  }
  EXPECT_FALSE(world.broken());
}

TEST(Loopback, C6_ASendNobodyReceivesBreaksTheWorldWhenItsSenderWaits) {
  LoopbackWorld world(3);
  const std::vector<std::byte> payload(4, std::byte{1});
  const Ticket sent = world.rank(0).start(
      call_of(CollectiveKind::send, &payload, nullptr, 4, DataType::u8, ReduceOp::sum, 1));
  // Rank 2 waits: the open send is not its own, nothing breaks.
  world.rank(2).wait_all();
  EXPECT_FALSE(world.broken());
  world.rank(0).wait_all();
  ASSERT_TRUE(world.broken());
  EXPECT_EQ(world.broken()->message(), "rank 1 did not receive from rank 0, which waited for it");
  EXPECT_TRUE(world.rank(0).landed(sent));
  ASSERT_TRUE(world.rank(0).failure(sent));
  EXPECT_EQ(world.rank(0).failure(sent)->kind(), ErrorKind::Communicator);
  EXPECT_EQ(world.waiting(), 0u);
  // C6: every later call on every rank fails at once, with the same reason.
  std::vector<std::byte> into(4);
  try {
    static_cast<void>(world.rank(1).start(
        call_of(CollectiveKind::recv, nullptr, &into, 4, DataType::u8, ReduceOp::sum, 0)));
    FAIL() << "a call started on a broken world";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Communicator);
    EXPECT_EQ(error.error().message(), world.broken()->message());
  }
  ASSERT_TRUE(world.rank(2).broken());
  EXPECT_EQ(world.rank(2).broken()->message(), world.broken()->message());
}

TEST(Loopback, C6_ARecvNobodySendsBreaksTheWorldWhenItsReceiverWaits) {
  LoopbackWorld world(2);
  std::vector<std::byte> into(4);
  const Ticket recv = world.rank(1).start(
      call_of(CollectiveKind::recv, nullptr, &into, 1, DataType::i32, ReduceOp::sum, 0));
  world.rank(1).wait_all();
  ASSERT_TRUE(world.broken());
  EXPECT_EQ(world.broken()->message(), "rank 0 did not send to rank 1, which waited for it");
  EXPECT_EQ(world.rank(1).failure(recv)->kind(), ErrorKind::Communicator);
}

TEST(Loopback, C6_ACollectiveMissingTwoRanksNamesBothWhenItsCallerWaits) {
  LoopbackWorld world(3);
  const std::vector<std::byte> send(2, std::byte{1});
  std::vector<std::byte> recv(6);
  const Ticket ticket =
      world.rank(0).start(call_of(CollectiveKind::all_gather, &send, &recv, 2, DataType::u8));
  world.rank(1).wait_all(); // Not rank 1's call: nothing breaks.
  EXPECT_FALSE(world.broken());
  world.rank(0).wait_all();
  ASSERT_TRUE(world.broken());
  EXPECT_EQ(world.broken()->message(),
            "rank 1, 2 did not take part in collective 0 (all_gather) that rank 0 waited for");
  EXPECT_EQ(world.rank(0).failure(ticket)->message(), world.broken()->message());
}

TEST(Loopback, C6_ASendAndRecvThatDisagreeInSizeFailBothAndBreakTheWorld) {
  LoopbackWorld world(2);
  const std::vector<std::byte> payload(4, std::byte{1});
  std::vector<std::byte> into(4, std::byte{9});
  const Ticket sent = world.rank(0).start(
      call_of(CollectiveKind::send, &payload, nullptr, 4, DataType::u8, ReduceOp::sum, 1));
  const Ticket recv = world.rank(1).start(
      call_of(CollectiveKind::recv, nullptr, &into, 1, DataType::i32, ReduceOp::sum, 0));
  ASSERT_TRUE(world.broken());
  EXPECT_EQ(world.broken()->message(), "rank 0 sent 4 u8 to rank 1, which expected 1 i32");
  EXPECT_EQ(world.rank(0).failure(sent)->message(), world.broken()->message());
  EXPECT_EQ(world.rank(1).failure(recv)->message(), world.broken()->message());
  EXPECT_EQ(into, std::vector<std::byte>(4, std::byte{9})); // Nothing was copied.
}

TEST(Loopback, C6_RanksThatDisagreeOnTheReduceOpFailAndOpenPairsFailWithThem) {
  LoopbackWorld world(2);
  // An open send from rank 1 to rank 0 is failed by the break too.
  const std::vector<std::byte> payload(1, std::byte{1});
  const Ticket open = world.rank(1).start(
      call_of(CollectiveKind::send, &payload, nullptr, 1, DataType::u8, ReduceOp::sum, 0));
  const std::vector<std::byte> send(4, std::byte{1});
  std::vector<std::byte> recv0(4);
  std::vector<std::byte> recv1(4);
  const Ticket t0 = world.rank(0).start(
      call_of(CollectiveKind::all_reduce, &send, &recv0, 1, DataType::i32, ReduceOp::sum));
  const Ticket t1 = world.rank(1).start(
      call_of(CollectiveKind::all_reduce, &send, &recv1, 1, DataType::i32, ReduceOp::max));
  ASSERT_TRUE(world.broken());
  EXPECT_EQ(world.broken()->message(),
            "collective 0: rank 1 called all_reduce of 1 i32, rank 0 called all_reduce of 1 i32 "
            "(the ranks' calls must agree)");
  EXPECT_TRUE(world.rank(0).failure(t0));
  EXPECT_TRUE(world.rank(1).failure(t1));
  ASSERT_TRUE(world.rank(1).failure(open));
  EXPECT_EQ(world.rank(1).failure(open)->message(), world.broken()->message());
  EXPECT_EQ(world.waiting(), 0u);
}

TEST(Loopback, C6_RanksThatDisagreeOnTheBroadcastRootFail) {
  LoopbackWorld world(2);
  const std::vector<std::byte> send(2, std::byte{1});
  std::vector<std::byte> recv0(2);
  std::vector<std::byte> recv1(2);
  static_cast<void>(world.rank(0).start(
      call_of(CollectiveKind::broadcast, &send, &recv0, 2, DataType::u8, ReduceOp::sum, 0)));
  const Ticket t1 = world.rank(1).start(
      call_of(CollectiveKind::broadcast, &send, &recv1, 2, DataType::u8, ReduceOp::sum, 1));
  ASSERT_TRUE(world.rank(1).failure(t1));
  EXPECT_NE(world.rank(1).failure(t1)->message().find("rank 1 called broadcast of 2 u8"),
            std::string::npos);
}

TEST(Loopback, C6_AReleasedTicketLandsEmptyAndItsPeersStillComplete) {
  LoopbackWorld world(2);
  const std::vector<std::byte> send = bytes_of(std::vector<std::uint8_t>{2, 3});
  std::vector<std::byte> recv0(2);
  std::vector<std::byte> recv1(2);
  const Ticket t0 =
      world.rank(0).start(call_of(CollectiveKind::all_reduce, &send, &recv0, 2, DataType::u8));
  world.rank(0).release(t0); // Its Collectives went away.
  EXPECT_TRUE(world.rank(0).landed(t0));
  EXPECT_FALSE(world.rank(0).failure(t0));
  EXPECT_TRUE(world.rank(0).summaries(t0).empty());
  const Ticket t1 =
      world.rank(1).start(call_of(CollectiveKind::all_reduce, &send, &recv1, 2, DataType::u8));
  EXPECT_TRUE(world.rank(1).landed(t1));
  EXPECT_EQ(values_of<std::uint8_t>(recv1), (std::vector<std::uint8_t>{4, 6}));
  // A released pair half: the other half still lands.
  const std::vector<std::byte> payload(2, std::byte{5});
  std::vector<std::byte> into(2);
  const Ticket sent = world.rank(0).start(
      call_of(CollectiveKind::send, &payload, nullptr, 2, DataType::u8, ReduceOp::sum, 1));
  world.rank(0).release(sent);
  const Ticket got = world.rank(1).start(
      call_of(CollectiveKind::recv, nullptr, &into, 2, DataType::u8, ReduceOp::sum, 0));
  EXPECT_TRUE(world.rank(1).landed(got));
  EXPECT_EQ(into, std::vector<std::byte>(2, std::byte{5}));
  const Ticket recv_released = world.rank(1).start(
      call_of(CollectiveKind::recv, nullptr, &into, 2, DataType::u8, ReduceOp::sum, 0));
  world.rank(1).release(recv_released);
  const Ticket sent_again = world.rank(0).start(
      call_of(CollectiveKind::send, &payload, nullptr, 2, DataType::u8, ReduceOp::sum, 1));
  EXPECT_TRUE(world.rank(0).landed(sent_again));
  // A released ticket on a failing collective is skipped, the other fails.
  const Ticket bad0 =
      world.rank(0).start(call_of(CollectiveKind::all_reduce, &send, &recv0, 2, DataType::u8));
  world.rank(0).release(bad0);
  const Ticket bad1 =
      world.rank(1).start(call_of(CollectiveKind::all_reduce, &send, &recv1, 1, DataType::u8));
  ASSERT_TRUE(world.rank(1).failure(bad1));
  EXPECT_EQ(world.rank(1).failure(bad1)->kind(), ErrorKind::Communicator);
}

TEST(Loopback, C3_CallsAfterReleasedOnesLandExactlyTheirOwnBytesAndSummaries) {
  // The world reuses the buffers of finished calls and released tickets
  // (their capacity only): a later, smaller call must see nothing of an
  // earlier, larger one — not its bytes, not a byte of its summaries.
  LoopbackWorld world(2);
  for (int round = 0; round < 4; ++round) {
    // Long and then short calls and summaries, alternating, so a reused
    // buffer is sometimes larger than what it now holds.
    const std::size_t length = round % 2 == 0 ? 96 : 3;
    const std::size_t summary_length = round % 2 == 0 ? 200 : 5;
    std::array<std::vector<std::byte>, 2> send;
    std::array<std::vector<std::byte>, 2> summary;
    std::array<std::vector<std::byte>, 2> recv;
    std::array<Ticket, 2> tickets{};
    for (std::size_t rank = 0; rank < 2; ++rank) {
      send[rank].assign(length, static_cast<std::byte>(10 * round + static_cast<int>(rank) + 1));
      summary[rank].assign(summary_length,
                           static_cast<std::byte>(0xA0 + 2 * round + static_cast<int>(rank)));
      recv[rank].assign(length, std::byte{0});
    }
    for (std::size_t rank = 0; rank < 2; ++rank) {
      CollectiveCall call =
          call_of(CollectiveKind::all_reduce, &send[rank], &recv[rank], length, DataType::u8);
      call.summary = summary[rank];
      tickets[rank] = world.rank(static_cast<int>(rank)).start(call);
    }
    for (std::size_t rank = 0; rank < 2; ++rank) {
      const auto expected = static_cast<std::byte>(20 * round + 3);
      EXPECT_EQ(recv[rank], std::vector<std::byte>(length, expected)) << "round " << round;
      const auto got = world.rank(static_cast<int>(rank)).summaries(tickets[rank]);
      std::vector<std::byte> both = summary[0];
      both.insert(both.end(), summary[1].begin(), summary[1].end());
      EXPECT_EQ(std::vector<std::byte>(got.begin(), got.end()), both) << "round " << round;
      world.rank(static_cast<int>(rank)).release(tickets[rank]);
    }
    // And a pair, whose receiver's summaries are exactly the sender's.
    std::vector<std::byte> into(length);
    CollectiveCall sent =
        call_of(CollectiveKind::send, &send[0], nullptr, length, DataType::u8, ReduceOp::sum, 1);
    sent.summary = summary[1];
    const Ticket send_ticket = world.rank(0).start(sent);
    const Ticket recv_ticket = world.rank(1).start(
        call_of(CollectiveKind::recv, nullptr, &into, length, DataType::u8, ReduceOp::sum, 0));
    EXPECT_EQ(into, send[0]) << "round " << round;
    const auto got = world.rank(1).summaries(recv_ticket);
    EXPECT_EQ(std::vector<std::byte>(got.begin(), got.end()), summary[1]) << "round " << round;
    world.rank(0).release(send_ticket);
    world.rank(1).release(recv_ticket);
  }
  EXPECT_EQ(world.waiting(), 0u);
}

TEST(Loopback, C5_TicketsReleasedOutOfOrderLeaveEveryOpenTicketsVerdictAndSummariesIntact) {
  // A rank's open tickets are kept sorted by ticket (loopback.hpp): a
  // release from the middle, or a ticket that never existed, must not
  // disturb the state of any other open ticket — and a span of summaries
  // read before a release still holds its bytes after it.
  LoopbackWorld world(2);
  constexpr int kCalls = 12; // Past the room each rank starts with.
  std::array<std::vector<std::byte>, kCalls> send;
  std::array<std::vector<std::byte>, kCalls> recv;
  std::array<std::vector<std::byte>, kCalls> summary;
  std::array<Ticket, kCalls> mine{};
  for (int index = 0; index < kCalls; ++index) {
    const auto at = static_cast<std::size_t>(index);
    send[at].assign(4, static_cast<std::byte>(index));
    recv[at].assign(4, std::byte{0});
    summary[at].assign(3 + at, static_cast<std::byte>(0x40 + index));
    CollectiveCall call =
        call_of(CollectiveKind::all_gather, &send[at], &recv[at], 2, DataType::u8);
    call.summary = summary[at];
    mine[at] = world.rank(0).start(call); // Rank 1 has not called: all stay open.
  }
  EXPECT_EQ(world.waiting(), static_cast<std::size_t>(kCalls));
  // Release every third ticket, newest first, and one that never was.
  for (int index = kCalls - 1; index >= 0; index -= 3) {
    world.rank(0).release(mine[static_cast<std::size_t>(index)]);
  }
  world.rank(0).release(mine.back() + 100);
  // Rank 1 calls: every collective completes, released ones included.
  std::array<std::vector<std::byte>, kCalls> other_recv;
  for (int index = 0; index < kCalls; ++index) {
    const auto at = static_cast<std::size_t>(index);
    other_recv[at].assign(4, std::byte{0});
    const std::vector<std::byte> payload(2, static_cast<std::byte>(0x80 + index));
    CollectiveCall call =
        call_of(CollectiveKind::all_gather, &payload, &other_recv[at], 2, DataType::u8);
    const Ticket theirs = world.rank(1).start(call);
    EXPECT_TRUE(world.rank(1).landed(theirs));
    world.rank(1).release(theirs);
  }
  EXPECT_EQ(world.waiting(), 0u);
  std::vector<std::span<const std::byte>> held;
  for (int index = 0; index < kCalls; ++index) {
    const auto at = static_cast<std::size_t>(index);
    const Ticket ticket = mine[at];
    EXPECT_TRUE(world.rank(0).landed(ticket)) << index;
    EXPECT_FALSE(world.rank(0).failure(ticket)) << index;
    const auto got = world.rank(0).summaries(ticket);
    if ((kCalls - 1 - index) % 3 == 0) {
      EXPECT_TRUE(got.empty()) << "released " << index;
      continue;
    }
    // Rank 0's summary, then rank 1's (none).
    EXPECT_EQ(std::vector<std::byte>(got.begin(), got.end()), summary[at]) << index;
    held.push_back(got);
  }
  // Release the rest oldest first; each span read above still holds its
  // ticket's bytes until that ticket goes.
  std::size_t next = 0;
  for (int index = 0; index < kCalls; ++index) {
    const auto at = static_cast<std::size_t>(index);
    if ((kCalls - 1 - index) % 3 == 0) {
      continue;
    }
    EXPECT_EQ(std::vector<std::byte>(held[next].begin(), held[next].end()), summary[at]) << index;
    ++next;
    world.rank(0).release(mine[at]);
    EXPECT_TRUE(world.rank(0).summaries(mine[at]).empty()) << index;
  }
  EXPECT_EQ(recv[5],
            (std::vector<std::byte>{std::byte{5}, std::byte{5}, std::byte{0x85}, std::byte{0x85}}));
}

} // namespace
} // namespace taintpool
