// Collectives in the never-written mode (issue 15; proposed N1-N3 with
// C1-C6), on the in-process loopback: what an all-reduce does with input
// bytes no one wrote since their buffer was created.
//
//   Skip (the default policy)  the bytes are stale like any failure's: the
//       rank takes part (C1), the outputs they feed carry the NeverWritten
//       failure on that rank (C4, carried) and a Remote failure on every
//       other rank, whose report names the buffer that was never written.
//   Report (N2)  the collective reads them, as it would have anyway, and
//       lists them in result.launch.unwritten, as a launch lists the
//       never-written runs it read; no output byte on any rank carries
//       them. A failure of another kind on the same input is carried as
//       ever.
//
// Every test ends with check_invariants() on every rank (R1-R3).
#include <taintpool/collective/collectives.hpp>
#include <taintpool/collective/loopback.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/exception.hpp>
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

DeviceOptions never_written(UnwrittenReads reads) {
  DeviceOptions options;
  options.memory = MemoryConfig{};
  options.memory->fresh_bytes = FreshBytes::NeverWritten;
  options.unwritten_reads = reads;
  return options;
}

/// One rank: a never-written Device on a CollectiveBackend.
struct Rank {
  Rank(LoopbackWorld& world, int rank, UnwrittenReads reads)
      : device(backend, never_written(reads))
      , collectives(device, world.rank(rank)) {}
  HostBackend host;
  CollectiveBackend backend{host};
  Device device;
  Collectives collectives;
  std::vector<Allocation> kept; ///< Buffers a test keeps alive.
};

struct World {
  World(int ranks, UnwrittenReads reads)
      : loopback(ranks) {
    for (int rank = 0; rank < ranks; ++rank) {
      all.push_back(std::make_unique<Rank>(loopback, rank, reads));
    }
  }
  Rank& operator[](int rank) { return *all[static_cast<std::size_t>(rank)]; }
  LoopbackWorld loopback;
  std::vector<std::unique_ptr<Rank>> all;
};

constexpr int kRanks = 3;
constexpr std::uint64_t kBytes = 128; // 64 pieces of 2 bytes (C2).

std::vector<std::byte> filled(std::size_t size, std::uint8_t value) {
  return std::vector<std::byte>(size, static_cast<std::byte>(value));
}

Binding part(const Allocation& allocation, std::uint64_t begin, std::uint64_t end) {
  return Binding{allocation.id(), ByteRange::of(begin, end)};
}

/// Each rank's send holds 1 in every byte — but rank 1 wrote only its
/// first half: [64, 128) was never written since it was created.
struct Buffers {
  explicit Buffers(World& world) {
    for (int rank = 0; rank < kRanks; ++rank) {
      Device& device = world[rank].device;
      send.push_back(device.create_buffer(kBytes, "send"));
      recv.push_back(device.create_buffer(kBytes));
      const std::uint64_t written = rank == 1 ? kBytes / 2 : kBytes;
      EXPECT_TRUE(device.write(part(send.back(), 0, written), filled(written, 1)).ran());
    }
  }
  std::vector<Allocation> send;
  std::vector<Allocation> recv;
};

std::vector<CollectiveResult> all_reduce(World& world, const Buffers& buffers) {
  std::vector<CollectiveResult> results;
  for (int rank = 0; rank < kRanks; ++rank) {
    const auto at = static_cast<std::size_t>(rank);
    results.push_back(world[rank].collectives.all_reduce(
        world[rank].device.default_stream(), "grads", buffers.send[at].whole(),
        buffers.recv[at].whole(), DataType::u8, ReduceOp::sum));
    EXPECT_TRUE(results.back().launch.ran()) << "rank " << rank << " (C1)";
  }
  return results;
}

TEST(CollectivesNeverWritten, C1_C4_UnderSkipANeverWrittenInputIsStaleOnEveryRankItFeeds) {
  World world(kRanks, UnwrittenReads::Skip);
  const Buffers buffers(world);
  const std::vector<CollectiveResult> results = all_reduce(world, buffers);
  for (int rank = 0; rank < kRanks; ++rank) {
    const auto at = static_cast<std::size_t>(rank);
    Device& device = world[rank].device;
    EXPECT_TRUE(results[at].launch.unwritten.empty()) << "rank " << rank;
    EXPECT_EQ(device.read_bytes(part(buffers.recv[at], 0, 64)), filled(64, 3)) << "rank " << rank;
    const std::vector<Report> reports = device.stale_reports(part(buffers.recv[at], 64, kBytes));
    ASSERT_EQ(reports.size(), 1u) << "rank " << rank;
    EXPECT_EQ(reports[0].stale, ByteRange::of(64, kBytes));
    // C4: rank 1's own never-written bytes, carried; a Remote failure
    // elsewhere, naming rank 1's buffer and why.
    EXPECT_EQ(reports[0].root.kind(), rank == 1 ? ErrorKind::NeverWritten : ErrorKind::Remote)
        << "rank " << rank << ": " << to_string(reports[0]);
    if (rank != 1) {
      const std::string text = to_string(reports[0]);
      EXPECT_NE(text.find("from rank 1"), std::string::npos) << text;
      EXPECT_NE(text.find(to_string(buffers.send[1].id())), std::string::npos) << text;
      EXPECT_NE(text.find("never written"), std::string::npos) << text;
    }
  }
  EXPECT_EQ(results[1].stale_bytes, kBytes / 2);
  for (int rank = 0; rank < kRanks; ++rank) {
    world[rank].device.check_invariants();
  }
}

TEST(CollectivesNeverWritten,
     N2_UnderReportTheCollectiveListsTheNeverWrittenBytesItReadAndNoRankCarriesThem) {
  World world(kRanks, UnwrittenReads::Report);
  const Buffers buffers(world);
  const std::vector<CollectiveResult> results = all_reduce(world, buffers);
  ASSERT_EQ(results[1].launch.unwritten.size(), 1u);
  EXPECT_EQ(results[1].launch.unwritten[0],
            (UnwrittenRead{buffers.send[1].id(), ByteRange::of(64, kBytes)}));
  EXPECT_EQ(results[1].stale_bytes, 0u);
  for (int rank = 0; rank < kRanks; ++rank) {
    const auto at = static_cast<std::size_t>(rank);
    Device& device = world[rank].device;
    if (rank != 1) {
      EXPECT_TRUE(results[at].launch.unwritten.empty()) << "rank " << rank;
    }
    EXPECT_TRUE(device.stale_reports(buffers.recv[at].whole()).empty()) << "rank " << rank;
    const std::vector<std::byte> got = device.read_bytes(buffers.recv[at].whole());
    EXPECT_EQ(std::vector<std::byte>(got.begin(), got.begin() + 64), filled(64, 3));
    device.check_invariants();
  }
  // N3: the input itself still reads as never written.
  const std::vector<Report> input = world[1].device.stale_reports(buffers.send[1].whole());
  ASSERT_EQ(input.size(), 1u);
  EXPECT_EQ(to_string(input[0]), to_string(buffers.send[1].id()) +
                                     " bytes [64, 128) were never written since it was created "
                                     "(created at send)");
}

TEST(CollectivesNeverWritten, N2_UnderReportAnotherFailureOfTheSameInputIsStillCarried) {
  World world(kRanks, UnwrittenReads::Report);
  const Buffers buffers(world);
  // Rank 1's producer fails over the half it had written: [0, 64) is now
  // claimed by an out-of-memory failure, [64, 128) still never written.
  const LaunchResult failed = world[1].device.launch(
      "backward", {}, {part(buffers.send[1], 0, 64)}, [](const KernelContext&) {
        return LaunchOutcome::failure(Error::out_of_memory("no room for the activations"));
      });
  ASSERT_EQ(failed.status, LaunchStatus::Failed);
  const std::vector<CollectiveResult> results = all_reduce(world, buffers);
  ASSERT_EQ(results[1].launch.unwritten.size(), 1u);
  EXPECT_EQ(results[1].launch.unwritten[0],
            (UnwrittenRead{buffers.send[1].id(), ByteRange::of(64, kBytes)}));
  EXPECT_EQ(results[1].stale_bytes, 64u);
  for (int rank = 0; rank < kRanks; ++rank) {
    const auto at = static_cast<std::size_t>(rank);
    Device& device = world[rank].device;
    const std::vector<Report> reports = device.stale_reports(buffers.recv[at].whole());
    ASSERT_EQ(reports.size(), 1u) << "rank " << rank;
    EXPECT_EQ(reports[0].stale, ByteRange::of(0, 64)) << "rank " << rank;
    EXPECT_EQ(reports[0].root.kind(), rank == 1 ? ErrorKind::OutOfMemory : ErrorKind::Remote)
        << "rank " << rank;
    EXPECT_TRUE(device.stale_reports(part(buffers.recv[at], 64, kBytes)).empty());
    device.check_invariants();
  }
}

/// The same program on the ranks model (model::RanksModel, which shares no
/// code with the collective layer), compared call by call and rank by rank:
/// rank 1's send half never written, and, if `fail_first_half`, its other
/// half claimed by a failed launch; then an all-reduce. With `kept_list`,
/// the model fills a caller's list left dirty by an earlier use (more
/// elements than calls, every field set) instead of returning a fresh one.
void expect_as_the_model(UnwrittenReads reads, bool fail_first_half, bool kept_list = false) {
  SCOPED_TRACE(std::string(reads == UnwrittenReads::Report ? "Report" : "Skip") +
               (fail_first_half ? ", a failed half" : ""));
  World world(kRanks, reads);
  model::RanksModel ranks(kRanks);
  std::vector<Binding> send;
  std::vector<Binding> recv;
  for (int rank = 0; rank < kRanks; ++rank) {
    Device& device = world[rank].device;
    model::DeviceModel& model = ranks.rank(rank);
    model.set_id_space(device.memory().id_space());
    model.set_fresh_bytes(FreshBytes::NeverWritten, reads);
    const Allocation s = test::created_on_both(device, model, kBytes);
    const Allocation r = test::created_on_both(device, model, kBytes);
    world[rank].kept = {s, r};
    send.push_back(s.whole());
    recv.push_back(r.whole());
    const std::uint64_t written = rank == 1 ? kBytes / 2 : kBytes;
    const Binding into = part(s, 0, written);
    const std::vector<std::byte> ones = filled(written, 1);
    ASSERT_EQ(device.write(into, ones).status, model.write(into, ones).result.status);
  }
  if (fail_first_half) {
    // The body writes what the model's failing body writes, then fails.
    const test::FailedOnBoth failed = test::fail_on_both(
        world[1].device, ranks.rank(1), "backward", part(world[1].kept[0], 0, 64),
        Error::out_of_memory("no room for the activations"));
    EXPECT_EQ(failed.core, failed.model);
  }
  model::RanksModel::Collective spec;
  spec.name = "grads";
  spec.count = kBytes;
  for (int rank = 0; rank < kRanks; ++rank) {
    const auto at = static_cast<std::size_t>(rank);
    spec.calls.push_back(
        model::RanksModel::Call{rank, CollectiveKind::all_reduce, send[at], recv[at]});
  }
  std::vector<model::RanksModel::Expected> expected;
  if (kept_list) {
    model::RanksModel::Expected dirty;
    dirty.rank = 9;
    dirty.synchronized_first = true;
    dirty.stale_bytes = 99;
    dirty.verdict_pending = true;
    dirty.launch.result.status = LaunchStatus::Skipped;
    dirty.launch.result.unwritten.push_back(UnwrittenRead{AllocationId::from_raw(77), {}});
    expected.assign(kRanks + 2, dirty);
    ranks.collective(spec, expected);
  } else {
    expected = ranks.collective(spec);
  }
  ASSERT_EQ(expected.size(), static_cast<std::size_t>(kRanks));
  for (int rank = 0; rank < kRanks; ++rank) {
    const auto at = static_cast<std::size_t>(rank);
    EXPECT_EQ(expected[at].rank, rank);
    // A host Device reports every launch at once: no input awaits a verdict.
    EXPECT_FALSE(expected[at].synchronized_first) << "rank " << rank;
    const CollectiveResult result =
        world[rank].collectives.all_reduce(world[rank].device.default_stream(), "grads", send[at],
                                           recv[at], DataType::u8, ReduceOp::sum);
    EXPECT_EQ(result.launch.status, expected[at].launch.result.status) << "rank " << rank;
    EXPECT_EQ(result.launch.unwritten, expected[at].launch.result.unwritten) << "rank " << rank;
    EXPECT_EQ(result.stale_bytes, expected[at].stale_bytes) << "rank " << rank;
    EXPECT_EQ(result.verdict_pending, expected[at].verdict_pending) << "rank " << rank;
  }
  for (int rank = 0; rank < kRanks; ++rank) {
    world[rank].device.synchronize();
    ranks.rank(rank).synchronize(false);
    const std::optional<std::string> difference = ranks.rank(rank).mismatch(world[rank].device);
    EXPECT_FALSE(difference.has_value()) << "rank " << rank << ": " << difference.value_or("");
  }
}

TEST(CollectivesNeverWritten, N2_C4_EveryRankAgreesWithTheRanksModelUnderBothPolicies) {
  expect_as_the_model(UnwrittenReads::Skip, false);
  expect_as_the_model(UnwrittenReads::Report, false);
  expect_as_the_model(UnwrittenReads::Skip, true);
  expect_as_the_model(UnwrittenReads::Report, true);
}

TEST(CollectivesNeverWritten, C4_AKeptExpectedListIsRefilledWholeForEveryCall) {
  expect_as_the_model(UnwrittenReads::Skip, true, true);
  expect_as_the_model(UnwrittenReads::Report, true, true);
  expect_as_the_model(UnwrittenReads::Report, false, true);
}

// The model's summary line, written into a string it keeps between
// collectives, is rewritten whole — nothing of the last line survives —
// and says exactly what core's summary carries, cut included.
TEST(CollectivesNeverWritten, C2_AKeptModelRootLineIsRewrittenWholeInCoresWords) {
  Report report{
      FailureId::from_raw(4),
      Error::launch("boom"),
      AllocationId::from_raw(9),
      std::nullopt,
      {SkipRecord{"late", AllocationId::from_raw(8), {}, true, false},
       SkipRecord{"sum", AllocationId::from_raw((std::uint64_t{1} << 52) | 3), {}, true, true},
       SkipRecord{"first", AllocationId::from_raw(2), {}}},
      AllocationId::from_raw(2),
      3,
      true};
  std::string line(400, '#');
  model::RanksModel::root_line(report, line);
  EXPECT_EQ(line, root_text(report));
  EXPECT_EQ(line, model::RanksModel::root_line(report));
  report.root = Error(ErrorKind::Generic, "");
  model::RanksModel::root_line(report, line);
  EXPECT_EQ(line, root_text(report));
  // A euro sign (3 bytes) at 216..218: the cut at 217 falls inside it.
  const std::string prefix = "allocation 2 was left unwritten by failure 4 (launch failed: ";
  report.root = Error::launch(std::string(216 - prefix.size(), 'y') + "\xe2\x82\xac tail");
  model::RanksModel::root_line(report, line);
  EXPECT_EQ(line, root_text(report));
  EXPECT_EQ(line, prefix + std::string(216 - prefix.size(), 'y') + "...");
}

// The ranks model words each root from a report it refills in place
// (DeviceModel::report into a kept Report): every field set again, the
// path cut to its length, so it equals a fresh report (G8), whatever the
// kept one held — a longer path, a stale range, another error.
TEST(CollectivesNeverWritten, G8_AModelReportRefilledInPlaceEqualsAFreshOne) {
  model::DeviceModel model;
  const AllocationId a = model.create(16);
  const AllocationId b = model.create(16);
  const AllocationId c = model.create(16);
  model::BodyPlan fail;
  fail.kind = model::BodyKind::fail;
  fail.error = Error::out_of_memory("no room for the activations");
  const std::vector<Binding> none;
  const std::vector<Binding> into_a{Binding{a, ByteRange::of(0, 16)}};
  const std::vector<Binding> into_b{Binding{b, ByteRange::of(0, 16)}};
  const std::vector<Binding> into_c{Binding{c, ByteRange::of(0, 16)}};
  const std::optional<FailureId> root = model.launch("producer", none, into_a, fail).result.failure;
  ASSERT_TRUE(root.has_value());
  (void)model.launch("middle", into_a, into_b, model::BodyPlan{});
  (void)model.launch("last", into_b, into_c, model::BodyPlan{});
  const Report fresh = model.report(*root, c);
  ASSERT_EQ(fresh.path.size(), 2u);
  Report kept{
      FailureId::from_raw(99),
      Error::generic(std::string(64, 'g')),
      AllocationId::from_raw(77),
      ByteRange::of(1, 2),
      {SkipRecord{"x", a, {a, b}, true, true}, SkipRecord{"y", b, {}}, SkipRecord{"z", c, {c}}},
      AllocationId::from_raw(78),
      40,
      true};
  model.report(*root, c, kept);
  EXPECT_EQ(kept, fresh);
  model.report(*root, a, kept); // No path: the kept one's is emptied.
  EXPECT_EQ(kept, model.report(*root, a));
  EXPECT_TRUE(kept.path.empty());
}

TEST(CollectivesNeverWritten, D1_InTheDefaultModeTheUnwrittenHalfIsTrustedAndNothingIsListed) {
  // Trusted (the default): the same program reports nothing — the mode is
  // what finds it.
  LoopbackWorld loopback(kRanks);
  std::vector<std::unique_ptr<test::LoopbackRank>> ranks;
  std::vector<Allocation> send;
  std::vector<Allocation> recv;
  for (int rank = 0; rank < kRanks; ++rank) {
    ranks.push_back(std::make_unique<test::LoopbackRank>(loopback, rank));
    send.push_back(ranks.back()->device.create_buffer(kBytes));
    recv.push_back(ranks.back()->device.create_buffer(kBytes));
    const std::uint64_t written = rank == 1 ? kBytes / 2 : kBytes;
    ASSERT_TRUE(
        ranks.back()->device.write(part(send.back(), 0, written), filled(written, 1)).ran());
  }
  for (int rank = 0; rank < kRanks; ++rank) {
    const auto at = static_cast<std::size_t>(rank);
    const CollectiveResult result = ranks[at]->collectives.all_reduce(
        ranks[at]->device.default_stream(), "grads", send[at].whole(), recv[at].whole(),
        DataType::u8, ReduceOp::sum);
    EXPECT_TRUE(result.launch.ran());
    EXPECT_TRUE(result.launch.unwritten.empty());
    EXPECT_EQ(result.stale_bytes, 0u);
  }
  for (int rank = 0; rank < kRanks; ++rank) {
    const auto at = static_cast<std::size_t>(rank);
    EXPECT_TRUE(ranks[at]->device.stale_reports(recv[at].whole()).empty());
  }
}

} // namespace
} // namespace taintpool
