// Collectives on the in-process loopback, rule by rule (C1-C6, D2): each
// test is a sequence a reader can check by hand — which rank's input is
// stale, which output bytes must then be stale on which rank, what each
// report must say, which bytes must stay readable and what they hold.
//
// Why the loopback: it is deterministic, runs in one thread, and takes both
// verdict paths (C5) — the rank whose call completes a collective learns at
// once, the others at their next synchronize — so the same tests pin the
// MPI path (at once) and the NCCL path (late). The differential fuzzer
// (fuzz/collective_fuzzer.cpp) compares the same code with the model on
// sequences nobody wrote down; mpi_collectives_test.cpp runs real MPI.
#include <taintpool/collective/collectives.hpp>
#include <taintpool/collective/loopback.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/exception.hpp>
#include <taintpool/host/host_backend.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "loopback_ranks.hpp"

namespace taintpool {
namespace {

/// One rank: its Device on a CollectiveBackend around a HostBackend; N of
/// them in one process (tests/support/loopback_ranks.hpp).
using Rank = test::LoopbackRank;
using World = test::LoopbackRanks;

std::vector<std::byte> filled(std::size_t size, std::uint8_t value) {
  return std::vector<std::byte>(size, static_cast<std::byte>(value));
}

/// A buffer of `size` bytes holding `value` in every byte (a host write).
Allocation buffer_of(Device& device, std::size_t size, std::uint8_t value) {
  return device.create_buffer(filled(size, value));
}

/// A launch writing `binding` that fails having written `written` (S2),
/// with an out-of-memory error: the binding's other bytes go stale.
FailureId fail_writing(Device& device, const Binding& binding, std::string_view kernel,
                       std::vector<WrittenRange> written = {}) {
  const LaunchResult result = device.launch(kernel, {}, {binding}, [&](const KernelContext&) {
    return written.empty()
               ? LaunchOutcome::failure(Error::out_of_memory("no room for the activations"))
               : LaunchOutcome::partial(Error::out_of_memory("no room for the activations"),
                                        written);
  });
  EXPECT_EQ(result.status, LaunchStatus::Failed);
  return *result.failure;
}

std::vector<Report> reports_of(Device& device, const Binding& binding) {
  return device.stale_reports(binding);
}

Binding part(const Allocation& allocation, std::uint64_t begin, std::uint64_t end) {
  return Binding{allocation.id(), ByteRange::of(begin, end)};
}

// ------------------------------------------------------------ C3: clean

TEST(Collectives, C3_CleanInputsGiveReadableOutputsOnEveryRank) {
  World world(3);
  std::vector<Allocation> send;
  std::vector<Allocation> recv;
  for (int rank = 0; rank < 3; ++rank) {
    send.push_back(buffer_of(world[rank].device, 64, static_cast<std::uint8_t>(rank + 1)));
    recv.push_back(world[rank].device.create_buffer(64));
  }
  for (int rank = 0; rank < 3; ++rank) {
    const CollectiveResult result = world[rank].collectives.all_reduce(
        world[rank].device.default_stream(), "grads", send[static_cast<std::size_t>(rank)].whole(),
        recv[static_cast<std::size_t>(rank)].whole(), DataType::u8, ReduceOp::sum);
    EXPECT_TRUE(result.launch.ran());
    EXPECT_EQ(result.stale_bytes, 0u);
    // C5: the last rank completes the collective and learns at once.
    EXPECT_EQ(result.verdict_pending, rank != 2) << "rank " << rank;
  }
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(world[rank].device.read_bytes(recv[static_cast<std::size_t>(rank)].whole()),
              filled(64, 6))
        << "rank " << rank;
    world[rank].device.check_invariants();
    EXPECT_EQ(world[rank].collectives.pending(), 0u);
  }
}

// ------------------------------------------------------------ C4: all-reduce

TEST(Collectives, C4_AllReduceFedByAStaleRankReportsTheRemoteRootOnEveryRank) {
  World world(3);
  std::vector<Allocation> send;
  std::vector<Allocation> recv;
  for (int rank = 0; rank < 3; ++rank) {
    send.push_back(buffer_of(world[rank].device, 128, 1));
    recv.push_back(world[rank].device.create_buffer(128));
  }
  // Rank 1: its producer ran out of memory having written the first half.
  const FailureId root = fail_writing(world[1].device, send[1].whole(), "backward",
                                      {WrittenRange{0, ByteRange::of(0, 64)}});
  for (int rank = 0; rank < 3; ++rank) {
    const CollectiveResult result = world[rank].collectives.all_reduce(
        world[rank].device.default_stream(), "grads", send[static_cast<std::size_t>(rank)].whole(),
        recv[static_cast<std::size_t>(rank)].whole(), DataType::u8, ReduceOp::sum);
    EXPECT_TRUE(result.launch.ran()); // C1: the stale rank took part.
  }
  // 128 bytes in 64 pieces of 2: the stale half is pieces 32..63.
  for (int rank = 0; rank < 3; ++rank) {
    Device& device = world[rank].device;
    const Allocation& out = recv[static_cast<std::size_t>(rank)];
    EXPECT_EQ(device.read_bytes(part(out, 0, 64)), filled(64, 3)) << "rank " << rank;
    const std::vector<Report> reports = reports_of(device, part(out, 64, 128));
    ASSERT_EQ(reports.size(), 1u) << "rank " << rank;
    const Report& report = reports[0];
    EXPECT_EQ(report.stale, ByteRange::of(64, 128));
    if (rank == 1) {
      // Its own input: its own failure, through a "took part" record.
      EXPECT_EQ(report.failure, root);
      EXPECT_EQ(report.root.kind(), ErrorKind::OutOfMemory);
      ASSERT_EQ(report.path.size(), 1u);
      EXPECT_TRUE(report.path[0].took_part);
      EXPECT_EQ(report.path[0].kernel, "all_reduce(grads) on rank 1");
      EXPECT_EQ(report.path[0].needed, send[1].id());
      EXPECT_EQ(report.origin, send[1].id());
      EXPECT_NE(
          to_string(report).find("all_reduce(grads) on rank 1 took part with stale bytes of " +
                                 to_string(send[1].id())),
          std::string::npos)
          << to_string(report);
    } else {
      EXPECT_EQ(report.root.kind(), ErrorKind::Remote);
      const std::string expected = "all_reduce(grads) on rank " + std::to_string(rank) +
                                   ": fed stale bytes from rank 1: " + to_string(send[1].id()) +
                                   " was left unwritten by failure " + std::to_string(root.raw()) +
                                   " (out of memory: backward: no room for the activations)";
      EXPECT_EQ(report.root.message().substr(0, expected.size()), expected)
          << report.root.message();
    }
    device.check_invariants();
  }
}

TEST(Collectives, C4_EveryRankAgreesWhichPiecesAreStale) {
  // Two stale ranks, different pieces: every rank's output is stale exactly
  // on the union, and the ranks name the same feeding ranks.
  World world(4);
  std::vector<Allocation> send;
  std::vector<Allocation> recv;
  for (int rank = 0; rank < 4; ++rank) {
    send.push_back(buffer_of(world[rank].device, 256, 2));
    recv.push_back(world[rank].device.create_buffer(256));
  }
  fail_writing(world[0].device, part(send[0], 8, 12), "load");       // piece 2
  fail_writing(world[3].device, part(send[3], 200, 201), "dropout"); // piece 50
  for (int rank = 0; rank < 4; ++rank) {
    world[rank].collectives.all_reduce(
        world[rank].device.default_stream(), "g", send[static_cast<std::size_t>(rank)].whole(),
        recv[static_cast<std::size_t>(rank)].whole(), DataType::u8, ReduceOp::max);
  }
  for (int rank = 0; rank < 4; ++rank) {
    Device& device = world[rank].device;
    const Allocation& out = recv[static_cast<std::size_t>(rank)];
    device.synchronize();
    std::vector<std::pair<FailureId, ByteRange>> claims;
    device.memory().for_each_allocation([&](const AllocationInfo& info) {
      if (info.id == out.id()) {
        info.taint->for_each_claim(
            [&](FailureId failure, ByteRange range) { claims.emplace_back(failure, range); });
      }
    });
    std::vector<ByteRange> ranges;
    for (const auto& claim : claims) {
      ranges.push_back(claim.second);
    }
    std::sort(ranges.begin(), ranges.end(),
              [](ByteRange a, ByteRange b) { return a.begin() < b.begin(); });
    EXPECT_EQ(ranges, (std::vector<ByteRange>{ByteRange::of(8, 12), ByteRange::of(200, 204)}))
        << "rank " << rank;
    EXPECT_EQ(device.read_bytes(part(out, 12, 200)), filled(188, 2));
    // Rank 0 carries its own failure on piece 2 and is fed piece 50 by rank 3.
    const std::string low = to_string(reports_of(device, part(out, 8, 12)).at(0));
    const std::string high = to_string(reports_of(device, part(out, 200, 204)).at(0));
    EXPECT_NE(low.find(rank == 0 ? "took part" : "from rank 0"), std::string::npos) << low;
    EXPECT_NE(high.find(rank == 3 ? "took part" : "from rank 3"), std::string::npos) << high;
  }
}

// ------------------------------------------------------------ C4: the others

TEST(Collectives, C4_AllGatherStalesOnlyTheStaleRanksBlock) {
  World world(3);
  std::vector<Allocation> send;
  std::vector<Allocation> recv;
  for (int rank = 0; rank < 3; ++rank) {
    send.push_back(buffer_of(world[rank].device, 16, static_cast<std::uint8_t>(10 + rank)));
    recv.push_back(world[rank].device.create_buffer(48));
  }
  fail_writing(world[2].device, part(send[2], 0, 1), "shard"); // piece 0 of rank 2's block
  for (int rank = 0; rank < 3; ++rank) {
    world[rank].collectives.all_gather(world[rank].device.default_stream(), "params",
                                       send[static_cast<std::size_t>(rank)].whole(),
                                       recv[static_cast<std::size_t>(rank)].whole(), DataType::u8);
  }
  for (int rank = 0; rank < 3; ++rank) {
    Device& device = world[rank].device;
    const Allocation& out = recv[static_cast<std::size_t>(rank)];
    EXPECT_EQ(device.read_bytes(part(out, 0, 16)), filled(16, 10));
    EXPECT_EQ(device.read_bytes(part(out, 16, 32)), filled(16, 11));
    EXPECT_EQ(device.read_bytes(part(out, 33, 48)), filled(15, 12));
    const std::vector<Report> reports = reports_of(device, part(out, 32, 33));
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_EQ(reports[0].root.kind(), rank == 2 ? ErrorKind::OutOfMemory : ErrorKind::Remote);
  }
}

TEST(Collectives, C4_ReduceScatterStalesTheBlockThatHoldsTheStalePiece) {
  World world(2);
  std::vector<Allocation> send;
  std::vector<Allocation> recv;
  for (int rank = 0; rank < 2; ++rank) {
    send.push_back(buffer_of(world[rank].device, 256, 1)); // 64 i32 = 2 blocks of 32
    recv.push_back(world[rank].device.create_buffer(128));
  }
  // Rank 0's send element 40 (bytes 160..164): rank 1's block, element 8.
  fail_writing(world[0].device, part(send[0], 160, 164), "grad");
  for (int rank = 0; rank < 2; ++rank) {
    world[rank].collectives.reduce_scatter(
        world[rank].device.default_stream(), "grads", send[static_cast<std::size_t>(rank)].whole(),
        recv[static_cast<std::size_t>(rank)].whole(), DataType::i32, ReduceOp::sum);
  }
  EXPECT_EQ(world[0].device.read_bytes(recv[0].whole()).size(), 128u); // Clean: its block.
  const std::vector<Report> reports = reports_of(world[1].device, recv[1].whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].stale, ByteRange::of(32, 36)); // One i32 piece of 64.
  EXPECT_EQ(reports[0].root.kind(), ErrorKind::Remote);
  EXPECT_NE(reports[0].root.message().find("from rank 0"), std::string::npos);
}

TEST(Collectives, C4_BroadcastCarriesOnlyTheRootsTaint) {
  World world(3);
  std::vector<Allocation> buffers;
  for (int rank = 0; rank < 3; ++rank) {
    buffers.push_back(buffer_of(world[rank].device, 32, static_cast<std::uint8_t>(rank)));
  }
  // A non-root's stale bytes are overwritten, not spread: S5 for a pure output.
  fail_writing(world[2].device, buffers[2].whole(), "junk");
  for (int rank = 0; rank < 3; ++rank) {
    const Binding whole = buffers[static_cast<std::size_t>(rank)].whole();
    world[rank].collectives.broadcast(world[rank].device.default_stream(), "weights", whole, whole,
                                      DataType::u8, 1);
  }
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(world[rank].device.read_bytes(buffers[static_cast<std::size_t>(rank)].whole()),
              filled(32, 1));
  }
  // Now the root is stale: every rank's copy is.
  fail_writing(world[1].device, part(buffers[1], 0, 4), "update");
  for (int rank = 0; rank < 3; ++rank) {
    const Binding whole = buffers[static_cast<std::size_t>(rank)].whole();
    world[rank].collectives.broadcast(world[rank].device.default_stream(), "weights", whole, whole,
                                      DataType::u8, 1);
  }
  for (int rank = 0; rank < 3; ++rank) {
    const std::vector<Report> reports =
        reports_of(world[rank].device, buffers[static_cast<std::size_t>(rank)].whole());
    ASSERT_EQ(reports.size(), 1u) << "rank " << rank;
    EXPECT_EQ(reports[0].stale, ByteRange::of(0, 4));
    EXPECT_EQ(world[rank].device.read_bytes(part(buffers[static_cast<std::size_t>(rank)], 4, 32)),
              filled(28, 1));
  }
}

TEST(Collectives, D2_SendRecvTouchesOnlyThePair) {
  World world(3);
  const Allocation from = buffer_of(world[0].device, 8, 7);
  const Allocation into = world[2].device.create_buffer(8);
  const Allocation bystander = buffer_of(world[1].device, 8, 9);
  fail_writing(world[0].device, part(from, 0, 1), "encode");
  world[2].collectives.recv(world[2].device.default_stream(), "activations", into.whole(),
                            DataType::u8, 0);
  const CollectiveResult sent = world[0].collectives.send(
      world[0].device.default_stream(), "activations", from.whole(), DataType::u8, 2);
  EXPECT_TRUE(sent.launch.ran());
  EXPECT_EQ(sent.stale_bytes, 0u); // A send has no outputs.
  const std::vector<Report> reports = reports_of(world[2].device, into.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].stale, ByteRange::of(0, 1));
  EXPECT_NE(reports[0].root.message().find("recv(activations) on rank 2: fed stale bytes from "
                                           "rank 0: "),
            std::string::npos)
      << reports[0].root.message();
  EXPECT_EQ(world[2].device.read_bytes(part(into, 1, 8)), filled(7, 7));
  EXPECT_EQ(world[1].device.read_bytes(bystander.whole()), filled(8, 9));
  EXPECT_EQ(world[1].device.graph().size(), 0u);
}

// ------------------------------------------------------------ C5: late verdicts

TEST(Collectives, C5_AVerdictThatLandsLateReachesWhatRanOnTheFedBytes) {
  World world(2);
  const Allocation send0 = buffer_of(world[0].device, 64, 1);
  const Allocation recv0 = world[0].device.create_buffer(64);
  const Allocation next0 = world[0].device.create_buffer(64);
  const Allocation send1 = buffer_of(world[1].device, 64, 1);
  const Allocation recv1 = world[1].device.create_buffer(64);
  fail_writing(world[1].device, send1.whole(), "backward");
  const CollectiveResult first =
      world[0].collectives.all_reduce(world[0].device.default_stream(), "grads", send0.whole(),
                                      recv0.whole(), DataType::u8, ReduceOp::sum);
  EXPECT_TRUE(first.verdict_pending);
  world[1].collectives.all_reduce(world[1].device.default_stream(), "grads", send1.whole(),
                                  recv1.whole(), DataType::u8, ReduceOp::sum);
  // Rank 0 has not synchronized: the optimizer step runs on the fed bytes...
  const LaunchResult step =
      world[0].device.launch("optimizer", {recv0.whole()}, {next0.whole()},
                             [](const KernelContext&) { return LaunchOutcome::success(); });
  EXPECT_TRUE(step.ran());
  // ...and the read that synchronizes learns both, with the path.
  const std::vector<Report> reports = reports_of(world[0].device, next0.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].root.kind(), ErrorKind::Remote);
  EXPECT_NE(reports[0].root.message().find("(reported when the device synchronised)"),
            std::string::npos);
  ASSERT_EQ(reports[0].path.size(), 1u);
  EXPECT_TRUE(reports[0].path[0].ran);
  EXPECT_EQ(reports[0].path[0].kernel, "optimizer");
  world[0].device.check_invariants();
}

TEST(Collectives, C2_ACollectiveOnAPendingVerdictsOutputSynchronizesFirst) {
  // Rank 0 all-reduces, then all-gathers the result without reading it.
  // Its all-gather summary must already know the all-reduce was fed stale
  // bytes, or rank 1 would take rank 0's block for clean.
  World world(2);
  const Allocation send0 = buffer_of(world[0].device, 64, 1);
  const Allocation mid0 = world[0].device.create_buffer(64);
  const Allocation out0 = world[0].device.create_buffer(128);
  const Allocation send1 = buffer_of(world[1].device, 64, 1);
  const Allocation mid1 = world[1].device.create_buffer(64);
  const Allocation out1 = world[1].device.create_buffer(128);
  fail_writing(world[1].device, part(send1, 0, 1), "backward");
  world[0].collectives.all_reduce(world[0].device.default_stream(), "a", send0.whole(),
                                  mid0.whole(), DataType::u8, ReduceOp::sum);
  world[1].collectives.all_reduce(world[1].device.default_stream(), "a", send1.whole(),
                                  mid1.whole(), DataType::u8, ReduceOp::sum);
  EXPECT_EQ(world[0].collectives.pending(), 1u);
  world[0].collectives.all_gather(world[0].device.default_stream(), "b", mid0.whole(), out0.whole(),
                                  DataType::u8);
  world[1].collectives.all_gather(world[1].device.default_stream(), "b", mid1.whole(), out1.whole(),
                                  DataType::u8);
  for (int rank = 0; rank < 2; ++rank) {
    const Allocation& out = rank == 0 ? out0 : out1;
    // Piece 0 of both blocks: rank 1's own, and rank 0's fed one.
    EXPECT_EQ(reports_of(world[rank].device, part(out, 0, 1)).size(), 1u) << "rank " << rank;
    EXPECT_EQ(reports_of(world[rank].device, part(out, 64, 65)).size(), 1u) << "rank " << rank;
    EXPECT_EQ(world[rank].device.read_bytes(part(out, 1, 64)), filled(63, 2));
  }
}

TEST(Collectives, C5_S6_ABytesAWroteOnlyLaunchDidNotWriteStillAwaitTheVerdictOfTheCollective) {
  // Rank 1's input is stale, so rank 0's in-place all-reduce of a is fed
  // stale bytes; its verdict arrives at rank 0's next synchronize. A launch
  // then binds a as output but names nothing written (S6): a still holds
  // the collective's bytes. Both replays took it as having overwritten a:
  // awaits_verdict said a was settled, and the late verdict left it clean.
  World world(2);
  std::vector<Allocation> a;
  for (int rank = 0; rank < 2; ++rank) {
    a.push_back(buffer_of(world[rank].device, 16, 1));
  }
  fail_writing(world[1].device, a[1].whole(), "stale");
  for (int rank = 0; rank < 2; ++rank) {
    world[rank].collectives.all_reduce(
        world[rank].device.default_stream(), "a", a[static_cast<std::size_t>(rank)].whole(),
        a[static_cast<std::size_t>(rank)].whole(), DataType::u8, ReduceOp::sum);
  }
  ASSERT_EQ(world[0].collectives.pending(), 1u);
  ASSERT_TRUE(world[0]
                  .device
                  .launch("names nothing", {}, {a[0].whole()},
                          [](const KernelContext&) { return LaunchOutcome::wrote_only({}); })
                  .ran());
  const std::array<Binding, 1> dependent{a[0].whole()};
  EXPECT_TRUE(world[0].device.awaits_verdict(dependent));
  world[0].device.synchronize();
  EXPECT_EQ(reports_of(world[0].device, a[0].whole()).size(), 1u);
}

TEST(Collectives, C2_ACollectiveIndependentOfAPendingVerdictDoesNotWait) {
  World world(2);
  std::vector<Allocation> a;
  std::vector<Allocation> b;
  std::vector<Allocation> out;
  for (int rank = 0; rank < 2; ++rank) {
    a.push_back(buffer_of(world[rank].device, 16, 1));
    b.push_back(buffer_of(world[rank].device, 16, 1));
    out.push_back(world[rank].device.create_buffer(16));
  }
  fail_writing(world[1].device, a[1].whole(), "stale");
  for (int rank = 0; rank < 2; ++rank) {
    world[rank].collectives.all_reduce(
        world[rank].device.default_stream(), "a", a[static_cast<std::size_t>(rank)].whole(),
        a[static_cast<std::size_t>(rank)].whole(), DataType::u8, ReduceOp::sum);
  }
  EXPECT_EQ(world[0].collectives.pending(), 1u); // Rank 0's verdict is late, and stale.
  const std::array<Binding, 1> independent{b[0].whole()};
  const std::array<Binding, 1> dependent{a[0].whole()};
  EXPECT_FALSE(world[0].device.awaits_verdict(independent));
  EXPECT_TRUE(world[0].device.awaits_verdict(dependent));
  world[0].collectives.all_reduce(world[0].device.default_stream(), "b", b[0].whole(),
                                  out[0].whole(), DataType::u8, ReduceOp::sum);
  EXPECT_EQ(world[0].collectives.pending(), 2u); // Not synchronized: a's verdict still waits.
  world[1].collectives.all_reduce(world[1].device.default_stream(), "b", b[1].whole(),
                                  out[1].whole(), DataType::u8, ReduceOp::sum);
  EXPECT_EQ(world[0].device.read_bytes(out[0].whole()), filled(16, 2));
  EXPECT_EQ(reports_of(world[0].device, a[0].whole()).size(), 1u);
}

// ------------------------------------------------------------ C6: failures

TEST(Collectives, C6_ARankThatNeverTakesPartBreaksTheCommunicatorWithoutAHang) {
  World world(3);
  const Allocation send = buffer_of(world[0].device, 8, 1);
  const Allocation recv = world[0].device.create_buffer(8);
  world[0].collectives.all_reduce(world[0].device.default_stream(), "grads", send.whole(),
                                  recv.whole(), DataType::u8, ReduceOp::sum);
  world[1].collectives.all_reduce(
      world[1].device.default_stream(), "grads", buffer_of(world[1].device, 8, 1).whole(),
      world[1].device.create_buffer(8).whole(), DataType::u8, ReduceOp::sum);
  // Rank 2 never calls: rank 0's read waits for it, which cannot happen.
  const std::vector<Report> reports = reports_of(world[0].device, recv.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].root.kind(), ErrorKind::Communicator);
  EXPECT_NE(reports[0].root.message().find("rank 2 did not take part in collective 0"),
            std::string::npos)
      << reports[0].root.message();
  try {
    world[2].collectives.all_reduce(
        world[2].device.default_stream(), "grads", buffer_of(world[2].device, 8, 1).whole(),
        world[2].device.create_buffer(8).whole(), DataType::u8, ReduceOp::sum);
    FAIL() << "a broken communicator took a call";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Communicator);
  }
  for (int rank = 0; rank < 3; ++rank) {
    world[rank].device.synchronize();
    world[rank].device.check_invariants();
  }
}

TEST(Collectives, C6_DisagreeingCallsFailOnEveryRank) {
  World world(2);
  const Allocation a = buffer_of(world[0].device, 8, 1);
  const Allocation b = buffer_of(world[1].device, 16, 1);
  const Allocation out0 = world[0].device.create_buffer(8);
  const Allocation out1 = world[1].device.create_buffer(16);
  world[0].collectives.all_reduce(world[0].device.default_stream(), "x", a.whole(), out0.whole(),
                                  DataType::u8, ReduceOp::sum);
  // The completing rank learns at once: its body throws, S3.
  EXPECT_THROW(world[1].collectives.all_reduce(world[1].device.default_stream(), "x", b.whole(),
                                               out1.whole(), DataType::u8, ReduceOp::sum),
               Exception);
  EXPECT_EQ(reports_of(world[1].device, out1.whole()).at(0).root.kind(), ErrorKind::TornDown);
  EXPECT_EQ(reports_of(world[0].device, out0.whole()).at(0).root.kind(), ErrorKind::Communicator);
}

TEST(Collectives, P3_BadSizesThrowBeforeAnythingStarts) {
  World world(2);
  const Allocation a = buffer_of(world[0].device, 8, 1);
  const Allocation b = world[0].device.create_buffer(12);
  try {
    world[0].collectives.all_gather(world[0].device.default_stream(), "x", a.whole(), b.whole(),
                                    DataType::u8);
    FAIL() << "a recv of the wrong size was taken";
  } catch (const Exception& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidBinding);
  }
  EXPECT_THROW(world[0].collectives.all_reduce(world[0].device.default_stream(), "x", part(a, 0, 6),
                                               part(b, 0, 6), DataType::i32, ReduceOp::sum),
               Exception);
  EXPECT_THROW(
      world[0].collectives.send(world[0].device.default_stream(), "x", a.whole(), DataType::u8, 0),
      std::invalid_argument);
  EXPECT_EQ(world.loopback.waiting(), 0u);
  EXPECT_FALSE(world.loopback.broken());
}

// ------------------------------------------------------------ the summary

TEST(Summary, C2_PiecesAreWholeElementsAndCoverTheContribution) {
  const PieceLayout small(10, 4);
  EXPECT_EQ(small.pieces(), 10u);
  EXPECT_EQ(small.piece(3), ByteRange::of(12, 16));
  const PieceLayout large(1000, 2);
  EXPECT_EQ(large.pieces(), 64u);
  std::uint64_t at = 0;
  for (std::uint32_t piece = 0; piece < 64; ++piece) {
    EXPECT_EQ(large.piece(piece).begin(), at);
    EXPECT_EQ(large.piece(piece).size() % 2, 0u);
    at = large.piece(piece).end();
  }
  EXPECT_EQ(at, 2000u);
  EXPECT_EQ(large.overlapping(ByteRange::of(0, 1)), 1u);
  EXPECT_EQ(large.overlapping(ByteRange::of(1999, 2000)), std::uint64_t{1} << 63);
  EXPECT_EQ(large.overlapping(ByteRange::of(5, 5)), 0u);
  EXPECT_THROW(PieceLayout(4, 0), std::invalid_argument);
}

TEST(Summary, C2_MoreRootsThanTheSummaryHoldsAreCountedAndNamed) {
  World world(2);
  const Allocation send0 = buffer_of(world[0].device, 64, 1);
  const Allocation recv0 = world[0].device.create_buffer(64);
  const Allocation send1 = buffer_of(world[1].device, 64, 1);
  const Allocation recv1 = world[1].device.create_buffer(64);
  for (std::uint64_t piece = 0; piece < 6; ++piece) {
    fail_writing(world[0].device, part(send0, piece * 8, piece * 8 + 1),
                 "kernel" + std::to_string(piece));
  }
  world[0].collectives.all_reduce(world[0].device.default_stream(), "g", send0.whole(),
                                  recv0.whole(), DataType::u8, ReduceOp::sum);
  world[1].collectives.all_reduce(world[1].device.default_stream(), "g", send1.whole(),
                                  recv1.whole(), DataType::u8, ReduceOp::sum);
  const std::vector<Report> reports = reports_of(world[1].device, recv1.whole());
  ASSERT_EQ(reports.size(), 1u); // One Remote failure per collective per rank.
  const std::string& message = reports[0].root.message();
  for (int kernel = 0; kernel < 4; ++kernel) {
    EXPECT_NE(message.find("kernel" + std::to_string(kernel) + ":"), std::string::npos) << message;
  }
  EXPECT_EQ(message.find("kernel4:"), std::string::npos) << message;
  EXPECT_NE(message.find("(and 2 more failures on rank 0)"), std::string::npos) << message;
  // Rank 0's own outputs carry each piece's exact failure.
  EXPECT_EQ(reports_of(world[0].device, recv0.whole()).size(), 6u);
}

// The fed call's message, byte for byte: each feeding rank in order, its
// cited root texts (as its summary carries them) joined by "; ", the count
// of roots past four, and "; and from rank" between ranks (C2, C3).
TEST(Summary, C2_AFedCallsMessageJoinsEachCitedRootTextExactly) {
  World world(3);
  std::vector<Allocation> send;
  std::vector<Allocation> recv;
  for (int rank = 0; rank < 3; ++rank) {
    send.push_back(buffer_of(world[rank].device, 64, 1));
    recv.push_back(world[rank].device.create_buffer(64));
  }
  for (std::uint64_t piece = 0; piece < 6; ++piece) {
    fail_writing(world[0].device, part(send[0], piece * 8, piece * 8 + 1),
                 "kernel" + std::to_string(piece));
  }
  fail_writing(world[1].device, part(send[1], 40, 41), "loader");
  const auto text_of = [&](int rank, std::uint64_t byte) {
    return root_text(
        reports_of(world[rank].device, part(send[static_cast<std::size_t>(rank)], byte, byte + 1))
            .at(0));
  };
  const std::string expected =
      "all_reduce(g) on rank 2: fed stale bytes from rank 0: " + text_of(0, 0) + "; " +
      text_of(0, 8) + "; " + text_of(0, 16) + "; " + text_of(0, 24) +
      " (and 2 more failures on rank 0); and from rank 1: " + text_of(1, 40);
  for (int rank = 0; rank < 3; ++rank) {
    const auto at = static_cast<std::size_t>(rank);
    world[rank].collectives.all_reduce(world[rank].device.default_stream(), "g", send[at].whole(),
                                       recv[at].whole(), DataType::u8, ReduceOp::sum);
  }
  const std::vector<Report> reports = reports_of(world[2].device, recv[2].whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].root.kind(), ErrorKind::Remote);
  EXPECT_EQ(reports[0].root.message(), expected);
}

TEST(Summary, C2_RootTextIsCutAtItsBoundOnACharacterBoundary) {
  Report report{FailureId::from_raw(3),
                Error::launch(std::string(300, 'x') + "\xc3\xa9"),
                AllocationId::from_raw(2),
                std::nullopt,
                {},
                AllocationId::from_raw(2),
                0,
                false};
  const std::string text = root_text(report);
  EXPECT_EQ(text.size(), TaintSummary::text_bytes);
  EXPECT_EQ(text.substr(text.size() - 3), "...");
  EXPECT_EQ(text.substr(0, 45), "allocation 2 was left unwritten by failure 3 ");
  // The cut would fall between the two bytes of an e-acute at 216..217.
  report.root = Error::launch(std::string(155, 'y') + "\xc3\xa9zzzzz");
  const std::string cut = root_text(report);
  EXPECT_EQ(cut.size(), 219u);
  EXPECT_EQ(cut.substr(213), "yyy...");
}

// summarize() writes each root's text straight into the summary's entry
// (issue 13): pin the bytes, the length field and the cut exactly — a path
// written whole, a long path cut on an ASCII byte, and a cut that would
// fall inside a three-byte UTF-8 character (backed off to its lead byte).
TEST(Summary, C2_ASummaryCarriesExactlyRootTextsWordsWrittenInPlace) {
  const auto allocation = [](std::uint64_t raw) { return AllocationId::from_raw(raw); };
  std::vector<Report> reports;
  // Newest first: "late" produced the read allocation, "allred" is oldest;
  // the long one below has the skipped steps.
  reports.push_back(Report{FailureId::from_raw(7),
                           Error::launch("boom"),
                           allocation(6),
                           std::nullopt,
                           {SkipRecord{"late", allocation(5), {}, true, false},
                            SkipRecord{"allred", allocation_id(2, 4), {}, true, true}},
                           allocation(3),
                           3,
                           true});
  Report longest{FailureId::from_raw(9),
                 Error::out_of_memory("x"),
                 allocation(30),
                 std::nullopt,
                 {},
                 allocation(8),
                 0,
                 false};
  std::string long_text = "allocation 8 was left unwritten by failure 9 (out of memory: x)";
  for (std::uint64_t step = 20; step > 10; --step) {
    longest.path.push_back(SkipRecord{"kernel" + std::to_string(step), allocation(step), {}});
  }
  for (std::uint64_t step = 11; step <= 20; ++step) {
    long_text += ", then kernel" + std::to_string(step) + " was skipped: it needed allocation " +
                 std::to_string(step);
  }
  ASSERT_GT(long_text.size(), TaintSummary::text_bytes + 100);
  reports.push_back(longest);
  const std::string prefix = "allocation 10 was left unwritten by failure 11 (launch failed: ";
  // A euro sign (3 bytes) at 215..217: the cut at 217 falls inside it.
  const std::string euro = "\xe2\x82\xac";
  reports.push_back(Report{FailureId::from_raw(11),
                           Error::launch(std::string(215 - prefix.size(), 'y') + euro + "zzzzzz"),
                           allocation(10),
                           std::nullopt,
                           {},
                           allocation(10),
                           0,
                           false});

  const PieceLayout layout(16, 1);
  const std::array<StaleInput, 3> stale{
      StaleInput{0, ByteRange::of(0, 4), FailureId::from_raw(7)},
      StaleInput{0, ByteRange::of(8, 12), FailureId::from_raw(9)},
      StaleInput{0, ByteRange::of(12, 14), FailureId::from_raw(11)}};
  TaintSummary summary;
  std::memset(&summary, 0x5a, sizeof(summary)); // A reused summary: old bytes everywhere.
  const auto report_of = [&](FailureId failure) -> const Report& {
    for (const Report& report : reports) {
      if (report.failure == failure) {
        return report;
      }
    }
    throw std::logic_error("no report");
  };
  summarize(summary, layout, stale, report_of);
  ASSERT_EQ(summary.root_count, 3u);
  EXPECT_EQ(summary.more_roots, 0u);
  const std::array<std::string, 3> expected{
      "allocation 3 was left unwritten by failure 7 (launch failed: boom), then allred took part "
      "with stale bytes of allocation 4 (memory 2), then late ran on stale bytes of allocation 5 "
      "(the "
      "path may begin earlier)",
      long_text.substr(0, TaintSummary::text_bytes - 3) + "...",
      prefix + std::string(215 - prefix.size(), 'y') + "..."};
  const std::array<std::uint64_t, 3> failures{7, 9, 11};
  for (std::size_t entry = 0; entry < 3; ++entry) {
    SCOPED_TRACE(entry);
    EXPECT_EQ(summary.root[entry].failure, failures[entry]);
    EXPECT_EQ(summary.root[entry].length, expected[entry].size());
    EXPECT_EQ(
        std::string(summary.root[entry].text,
                    std::min<std::size_t>(summary.root[entry].length, TaintSummary::text_bytes)),
        expected[entry]);
    // root_text() says the same words.
    EXPECT_EQ(root_text(reports[entry]), expected[entry]);
  }
  EXPECT_EQ(expected[0].size(), 208u); // Whole: under the bound.
  EXPECT_EQ(expected[1].size(), TaintSummary::text_bytes);
  EXPECT_EQ(expected[2].size(), 218u);
}

// The summary's writer spells ids, errors and steps itself, so that no
// string is built per root (issue 13); to_string() is the project's own
// spelling of each. Pin the two together on every shape a piece takes — an
// id of another manager's memory, an error with and without a message,
// each kind of step, an incomplete path — so a change to either is caught
// here, not as a summary whose words differ from every other report's (C2).
TEST(Summary, C2_ARootTextSpellsEveryPieceAsToStringDoes) {
  const AllocationId spaced = allocation_id(5, 12345);
  const std::array<Error, 3> roots{Error::launch("kernel k failed"), Error::out_of_memory(""),
                                   Error::launch("")};
  // A step of each kind: skipped, ran on stale bytes, took part (a collective).
  const std::array<SkipRecord, 3> steps{
      SkipRecord{"skipped", spaced, {}, false, false},
      SkipRecord{"ran", AllocationId::from_raw(1), {}, true, false},
      SkipRecord{"joined", spaced, {}, true, true}};
  const std::array<const char*, 3> says{" was skipped: it needed ", " ran on stale bytes of ",
                                        " took part with stale bytes of "};
  for (const Error& root : roots) {
    for (std::size_t kind = 0; kind < steps.size(); ++kind) {
      for (const bool incomplete : {false, true}) {
        SCOPED_TRACE(to_string(root) + ", " + steps[kind].kernel +
                     (incomplete ? ", incomplete" : ""));
        const Report report{FailureId::from_raw(18446744073709551615ull),
                            root,
                            AllocationId::from_raw(77),
                            std::nullopt,
                            {steps[kind]},
                            spaced,
                            3,
                            incomplete};
        std::string expected = to_string(report.origin) + " was left unwritten by " +
                               to_string(report.failure) + " (" + to_string(report.root) + ")" +
                               ", then " + steps[kind].kernel + says[kind] +
                               to_string(steps[kind].needed);
        if (incomplete) {
          expected += " (the path may begin earlier)";
        }
        ASSERT_LE(expected.size(), TaintSummary::text_bytes);
        EXPECT_EQ(root_text(report), expected);
      }
    }
  }
}

// ------------------------------------------------------------ the exchange itself

TEST(Exchange, C1_AnExchangeRunsOnStaleInputsAndIsToldWhy) {
  HostBackend host;
  Device device(host);
  const Allocation in = device.create_buffer(filled(16, 1));
  const Allocation out = device.create_buffer(16);
  const FailureId root = fail_writing(device, part(in, 4, 8), "producer");
  bool ran = false;
  const std::array<Binding, 1> reads{in.whole()};
  const std::array<Binding, 1> writes{out.whole()};
  const LaunchResult result = device.exchange(
      device.default_stream(), "x", reads, writes, [&](const ExchangeContext& context) {
        ran = true;
        EXPECT_EQ(context.stale().size(), 1u);
        EXPECT_EQ(context.stale()[0], (StaleInput{0, ByteRange::of(4, 8), root}));
        EXPECT_NE(context.report(root, in.id()), nullptr);
        ExchangeOutcome outcome;
        outcome.carried.push_back(CarriedStale{0, ByteRange::of(0, 2), 0, root});
        return outcome;
      });
  EXPECT_TRUE(ran);
  EXPECT_TRUE(result.ran());
  const std::vector<Report> reports = device.stale_reports(out.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].failure, root);
  EXPECT_EQ(reports[0].stale, ByteRange::of(0, 2));
  EXPECT_EQ(device.read_bytes(part(out, 2, 16)).size(), 14u);
  device.check_invariants();
}

TEST(Exchange, C4_AnInPlaceExchangeKeepsTheFailureItsOwnClaimWouldHaveEnded) {
  HostBackend host;
  Device device(host);
  const Allocation buffer = device.create_buffer(filled(8, 1));
  const FailureId root = fail_writing(device, buffer.whole(), "producer");
  const std::array<Binding, 1> both{buffer.whole()};
  device.exchange(device.default_stream(), "in_place", both, both,
                  [&](const ExchangeContext& context) {
                    ExchangeOutcome outcome;
                    outcome.carried.push_back(
                        CarriedStale{0, ByteRange::of(0, 8), 0, context.stale()[0].failure});
                    return outcome;
                  });
  const std::vector<Report> reports = device.stale_reports(buffer.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].failure, root);
  device.check_invariants();
}

TEST(Exchange, C4_AnOutcomeNamingBytesOutsideItsOutputsIsALoudContractViolation) {
  HostBackend host;
  Device device(host);
  const Allocation in = device.create_buffer(filled(8, 1));
  const Allocation out = device.create_buffer(8);
  const std::array<Binding, 1> reads{in.whole()};
  const std::array<Binding, 1> writes{out.whole()};
  EXPECT_THROW(device.exchange(device.default_stream(), "x", reads, writes,
                               [&](const ExchangeContext&) {
                                 ExchangeOutcome outcome;
                                 outcome.fed.push_back(WrittenRange{0, ByteRange::of(4, 12)});
                                 outcome.fed_error = Error::remote("x");
                                 return outcome;
                               }),
               std::logic_error);
  // The write set stays claimed: stale, never released by mistake.
  EXPECT_EQ(device.stale_reports(out.whole()).at(0).root.kind(), ErrorKind::TornDown);
  device.check_invariants();
}

} // namespace
} // namespace taintpool
