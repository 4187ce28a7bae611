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

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "created_on_both.hpp"
#include "failed_on_both.hpp"
#include "loopback_ranks.hpp"

namespace taintpool {
namespace {

constexpr int kRanks = 3;

/// One collective of `kind` over `count` elements of `type`, from a fresh
/// world: core's results and state against the model's.
void expect_as_the_model(CollectiveKind kind, DataType type, std::uint64_t count) {
  SCOPED_TRACE(std::string(name(kind)) + " " + std::string(name(type)) + " x" +
               std::to_string(count));
  test::LoopbackRanks world(kRanks);
  model::RanksModel ranks(kRanks);
  std::vector<Allocation> kept; // Every rank's buffers, alive to the end.
  const std::uint64_t block = count * size_of(type);
  const std::uint64_t send_size = kind == CollectiveKind::reduce_scatter ? kRanks * block : block;
  const std::uint64_t recv_size = kind == CollectiveKind::all_gather ? kRanks * block : block;
  constexpr int kRoot = 2; // Broadcast's root; a pair's sender (to rank 0).
  std::vector<Binding> send;
  std::vector<Binding> recv;
  for (int rank = 0; rank < kRanks; ++rank) {
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
    for (int rank = 0; rank < kRanks; ++rank) {
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
  for (int rank = 0; rank < kRanks; ++rank) {
    world[rank].device.synchronize();
    ranks.rank(rank).synchronize(false);
    const std::optional<std::string> difference = ranks.rank(rank).mismatch(world[rank].device);
    EXPECT_FALSE(difference.has_value()) << "rank " << rank << ": " << difference.value_or("");
    some_stale = some_stale ||
                 !ranks.rank(rank).claims(recv[static_cast<std::size_t>(rank)].allocation).empty();
    world[rank].device.check_invariants();
  }
  EXPECT_TRUE(some_stale) << "the stale inputs reached no output: the test checks nothing";
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

} // namespace
} // namespace taintpool
