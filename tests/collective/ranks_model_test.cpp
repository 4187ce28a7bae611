// The ranks model (model::RanksModel) against core's collectives, kind by
// kind, where both a rank's own stale pieces and other ranks' meet: the
// model states each kind's sources once per call (its feeds) and walks
// them feed by feed, so every kind's geometry — all-reduce and
// reduce-scatter over every rank, all-gather's blocks, broadcast's root, a
// pair's sender — is pinned here by core's answers (C1-C5), not only by
// the fuzzer's corpus.
//
// Three ranks on the loopback; rank 0's and rank 2's inputs each hold a
// failed launch's bytes (two different errors), rank 1's are clean. Each
// call's result (status, stale bytes, whether the verdict is late) is the
// model's, and after every rank synchronizes, each rank's whole state —
// claims, bytes, every failure's error (the Remote message cites each
// feeding rank's roots) and skip records — is the model's.
#include <taintpool/collective/collectives.hpp>
#include <taintpool/collective/loopback.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/model/ranks_model.hpp>
#include <taintpool/testing/heap_allocations.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "created_on_both.hpp"
#include "failed_on_both.hpp"
#include "loopback_ranks.hpp"

namespace taintpool {
namespace {

constexpr int kRanks = 3;

/// One collective of `kind` over `count` elements of `type`, from a fresh
/// world of `world_size` ranks (at least 3): core's results and state
/// against the model's. With `room`, the model is made with it
/// (RanksModel::Room) and gives its own back into it.
void expect_as_the_model(CollectiveKind kind, DataType type, std::uint64_t count,
                         model::RanksModel::Room* room = nullptr, int world_size = kRanks) {
  SCOPED_TRACE(std::string(name(kind)) + " " + std::string(name(type)) + " x" +
               std::to_string(count) + (room != nullptr ? ", with a room" : ""));
  test::LoopbackRanks world(world_size);
  model::RanksModel ranks = room != nullptr ? model::RanksModel(world_size, std::move(*room))
                                            : model::RanksModel(world_size);
  std::vector<Allocation> kept; // Every rank's buffers, alive to the end.
  const std::uint64_t block = count * size_of(type);
  const std::uint64_t send_size = kind == CollectiveKind::reduce_scatter
                                      ? static_cast<std::uint64_t>(world_size) * block
                                      : block;
  const std::uint64_t recv_size =
      kind == CollectiveKind::all_gather ? static_cast<std::uint64_t>(world_size) * block : block;
  constexpr int kRoot = 2; // Broadcast's root; a pair's sender (to rank 0).
  std::vector<Binding> send;
  std::vector<Binding> recv;
  for (int rank = 0; rank < world_size; ++rank) {
    Device& device = world[rank].device;
    model::DeviceModel& model = ranks.rank(rank);
    model.set_id_space(device.memory().id_space());
    const Allocation s = test::created_on_both(device, model, send_size);
    const Allocation r = test::created_on_both(device, model, recv_size);
    kept.push_back(s);
    kept.push_back(r);
    send.push_back(s.whole());
    recv.push_back(r.whole());
    std::vector<std::byte> bytes(send_size);
    for (std::size_t at = 0; at < bytes.size(); ++at) {
      bytes[at] = static_cast<std::byte>(3 + 5 * at + 11 * static_cast<std::size_t>(rank));
    }
    ASSERT_EQ(device.write(s.whole(), bytes).status, model.write(s.whole(), bytes).result.status);
    if (rank == 1) {
      continue; // Clean.
    }
    // Rank 0: a few bytes near the start; rank 2: near the end (in the
    // last rank's block of a reduce-scatter).
    const ByteRange stale =
        rank == 0 ? ByteRange::of(2, 5) : ByteRange::of(send_size - 6, send_size - 3);
    const test::FailedOnBoth failed = test::fail_on_both(
        device, model, "producer", Binding{s.id(), stale},
        rank == 0 ? Error::out_of_memory("no room") : Error::launch("bad kernel"));
    ASSERT_EQ(failed.core, failed.model);
  }

  model::RanksModel::Collective spec;
  spec.name = "grads";
  spec.type = type;
  spec.op = ReduceOp::sum;
  spec.root = kRoot;
  spec.count = count;
  if (kind == CollectiveKind::send) {
    spec.calls.push_back(
        model::RanksModel::Call{kRoot, CollectiveKind::send, send[kRoot], std::nullopt});
    spec.calls.push_back(model::RanksModel::Call{0, CollectiveKind::recv, std::nullopt, recv[0]});
  } else {
    for (int rank = 0; rank < world_size; ++rank) {
      const auto at = static_cast<std::size_t>(rank);
      const bool sends = kind != CollectiveKind::broadcast || rank == kRoot;
      spec.calls.push_back(model::RanksModel::Call{
          rank, kind, sends ? std::optional<Binding>(send[at]) : std::nullopt, recv[at]});
    }
  }
  const std::vector<model::RanksModel::Expected> expected = ranks.collective(spec);
  ASSERT_EQ(expected.size(), spec.calls.size());
  for (std::size_t index = 0; index < spec.calls.size(); ++index) {
    const model::RanksModel::Call& call = spec.calls[index];
    test::LoopbackRank& rank = world[call.rank];
    const StreamId stream = rank.device.default_stream();
    CollectiveResult result;
    switch (call.kind) {
    case CollectiveKind::all_reduce:
      result = rank.collectives.all_reduce(stream, spec.name, *call.send, *call.recv, type,
                                           ReduceOp::sum);
      break;
    case CollectiveKind::all_gather:
      result = rank.collectives.all_gather(stream, spec.name, *call.send, *call.recv, type);
      break;
    case CollectiveKind::reduce_scatter:
      result = rank.collectives.reduce_scatter(stream, spec.name, *call.send, *call.recv, type,
                                               ReduceOp::sum);
      break;
    case CollectiveKind::broadcast:
      result = rank.collectives.broadcast(stream, spec.name, call.send ? *call.send : *call.recv,
                                          *call.recv, type, kRoot);
      break;
    case CollectiveKind::send:
      result = rank.collectives.send(stream, spec.name, *call.send, type, 0);
      break;
    case CollectiveKind::recv:
      result = rank.collectives.recv(stream, spec.name, *call.recv, type, kRoot);
      break;
    }
    EXPECT_EQ(result.launch.status, expected[index].launch.result.status) << "rank " << call.rank;
    EXPECT_EQ(result.stale_bytes, expected[index].stale_bytes) << "rank " << call.rank;
    EXPECT_EQ(result.verdict_pending, expected[index].verdict_pending) << "rank " << call.rank;
  }
  bool some_stale = false;
  for (int rank = 0; rank < world_size; ++rank) {
    world[rank].device.synchronize();
    ranks.rank(rank).synchronize(false);
    const std::optional<std::string> difference = ranks.rank(rank).mismatch(world[rank].device);
    EXPECT_FALSE(difference.has_value()) << "rank " << rank << ": " << difference.value_or("");
    some_stale = some_stale ||
                 !ranks.rank(rank).claims(recv[static_cast<std::size_t>(rank)].allocation).empty();
    world[rank].device.check_invariants();
  }
  EXPECT_TRUE(some_stale) << "the stale inputs reached no output: the test checks nothing";
  if (room != nullptr) {
    *room = ranks.take_room();
  }
}

TEST(RanksModel, C3_C4_EveryKindAgreesWithCoreWhereOwnAndFedStalePiecesMeet) {
  for (const CollectiveKind kind :
       {CollectiveKind::all_reduce, CollectiveKind::all_gather, CollectiveKind::reduce_scatter,
        CollectiveKind::broadcast, CollectiveKind::send}) {
    expect_as_the_model(kind, DataType::u8, 20);  // 20 pieces of one byte.
    expect_as_the_model(kind, DataType::u8, 130); // 64 pieces of two or three bytes.
    expect_as_the_model(kind, DataType::i32, 6);  // Pieces of one element (4 bytes).
  }
}

TEST(RanksModelRoom, C1_C5_AModelMadeWithAnEarlierModelsRoomAgreesWithCoreAsAFreshOneDoes) {
  // One room handed from model to model through every kind and size, the
  // larger first, so that each model starts with lists, contributions, root
  // texts and report paths another collective left (capacity only: what
  // they held must not leak into the answers). Between kinds it passes
  // through a model of two ranks (the third rank's room kept aside) and
  // one of five (two fresh ranks added), and still serves three.
  model::RanksModel::Room room;
  for (const CollectiveKind kind :
       {CollectiveKind::all_reduce, CollectiveKind::all_gather, CollectiveKind::reduce_scatter,
        CollectiveKind::broadcast, CollectiveKind::send}) {
    expect_as_the_model(kind, DataType::u8, 130, &room);
    room = model::RanksModel(2, std::move(room)).take_room();
    expect_as_the_model(kind, DataType::i32, 6, &room);
    room = model::RanksModel(5, std::move(room)).take_room();
    expect_as_the_model(kind, DataType::u8, 20, &room);
  }
}

TEST(RanksModelRoom, C1_AModelMadeWithARoomAllocatesLessForTheSameCollectiveThanAFreshOne) {
  // The same world and collective each time (core's allocations alike);
  // only the model's start differs. The room is warmed by one run first.
  model::RanksModel::Room room;
  expect_as_the_model(CollectiveKind::all_reduce, DataType::u8, 130, &room);
  const std::uint64_t fresh = testing::allocations_during(
      [] { expect_as_the_model(CollectiveKind::all_reduce, DataType::u8, 130); });
  const std::uint64_t roomed = testing::allocations_during(
      [&] { expect_as_the_model(CollectiveKind::all_reduce, DataType::u8, 130, &room); });
  // Three ranks' model lists, the contributions and the plan: 349 against
  // 262 when written (fuzz/ROUNDS.md's fifty-first round); a model that
  // took nothing from its room fails this.
  EXPECT_LT(roomed + 50, fresh) << "fresh " << fresh << ", with a room " << roomed;
}

TEST(RanksModelRoom, C1_AJobAfterAJobOfFewerRanksEndsWithTheHeapAsItFoundIt) {
  // A fuzz input is such a job: a model made from the last one's room, a
  // world, a collective, the room handed back. A room keeps capacity, so
  // once it has served the largest job every job frees what it allocates.
  // Where it did not, libFuzzer (which runs an input again when it ends
  // with more mallocs than frees) ran a quarter of collective_fuzzer's
  // inputs twice (fuzz/ROUNDS.md, fifty-third round): a collective of
  // fewer ranks freed the last rank's contribution lists, which the next
  // one of more ranks allocated again, and the room kept the last
  // collective's fed error, which the next job freed.
  model::RanksModel::Room room;
  for (const int ranks : {4, 3}) {
    expect_as_the_model(CollectiveKind::all_reduce, DataType::u8, 130, &room, ranks);
  }
  for (int round = 0; round < 2; ++round) {
    for (const int ranks : {3, 4}) {
      const std::uint64_t allocations = testing::heap_allocations();
      const std::uint64_t frees = testing::heap_frees();
      expect_as_the_model(CollectiveKind::all_reduce, DataType::u8, 130, &room, ranks);
      EXPECT_EQ(testing::heap_allocations() - allocations, testing::heap_frees() - frees)
          << "round " << round << ", " << ranks << " ranks: allocations against frees";
    }
  }
}

} // namespace
} // namespace taintpool
