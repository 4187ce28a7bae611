// Collectives across real processes over MPI (label mpi): ctest runs this
// under mpirun with 2 and 4 ranks (tests/collective/CMakeLists.txt).
//
// The matrix: every kind of collective (all-reduce, all-gather,
// reduce-scatter, broadcast, a send/recv ring) × a failure injected on one
// rank just before it (a producer that ran out of memory halfway, S2; or a
// failed loader whose consumer was skipped, S1, so the root arrives with a
// skip path) × which rank (the first or the last), plus every kind clean.
// On EVERY rank, each output element is then checked: the stale ones by
// their report — the injecting rank's own failure (a "took part" record) on
// that rank, and on every other receiving rank a Remote failure whose text
// must equal, character for character, the one the test builds by hand
// from the injecting rank's allocation and failure ids (sent to all ranks
// with MPI_Bcast) — and the clean ones by their values, computed by hand.
// Elements are i32 and blocks 64 elements, so a piece is one element (for
// reduce-scatter, whose contribution is size() blocks, size() elements) and
// the expected stale set is exact.
//
// C6 (a peer that does not take part in time) runs as its own ctest with 2
// ranks: --gtest_filter=MpiTimeout.*.
#include <taintpool/collective/collectives.hpp>
#include <taintpool/collective/mpi_communicator.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/exception.hpp>
#include <taintpool/host/host_backend.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mpi.h>
#include <string>
#include <thread>
#include <vector>

namespace taintpool {
namespace {

constexpr std::uint64_t kBlock = 64; // Elements per block: 64 pieces of one element.

MpiCommunicator* world = nullptr; // Set by main.

int me() {
  return world->rank();
}
int ranks() {
  return world->size();
}

enum class Kind { all_reduce, all_gather, reduce_scatter, broadcast, send_recv };
enum class Injection { none, out_of_memory, skipped_chain };

const char* kind_name(Kind kind) {
  switch (kind) {
  case Kind::all_reduce:
    return "all_reduce";
  case Kind::all_gather:
    return "all_gather";
  case Kind::reduce_scatter:
    return "reduce_scatter";
  case Kind::broadcast:
    return "broadcast";
  case Kind::send_recv:
    return "send_recv";
  }
  return "?";
}

struct Case {
  Kind kind;
  Injection injection;
  bool last_rank_stale; ///< The failure is on the last rank, else on rank 0.
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::string text = kind_name(c.kind);
  switch (c.injection) {
  case Injection::none:
    return text + "_clean";
  case Injection::out_of_memory:
    text += "_out_of_memory";
    break;
  case Injection::skipped_chain:
    text += "_skipped_chain";
    break;
  }
  return text + (c.last_rank_stale ? "_on_last_rank" : "_on_rank_0");
}

/// Rank r's value for element j of its contribution.
std::int32_t value(int rank, std::uint64_t element) {
  return (rank + 1) * 1000 + static_cast<std::int32_t>(element);
}

std::vector<std::byte> as_bytes(const std::vector<std::int32_t>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(std::int32_t));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

Binding elements(const Allocation& allocation, std::uint64_t first, std::uint64_t last) {
  return Binding{allocation.id(), ByteRange::of(first * 4, last * 4)};
}

/// What the injecting rank tells everyone, so the expected text is exact.
struct Facts {
  std::uint64_t failure = 0;  ///< The root failure's id on that rank.
  std::uint64_t origin = 0;   ///< The allocation it left unwritten.
  std::uint64_t consumed = 0; ///< Skipped chain: the send buffer (path's `produced`).
};

/// The stale elements of the injecting rank's contribution.
struct Span {
  std::uint64_t first;
  std::uint64_t last;
};

Span stale_contribution(const Case& c) {
  if (c.kind == Kind::reduce_scatter) {
    return {kBlock - 2, kBlock + 2}; // Across the blocks of ranks 0 and 1.
  }
  return c.injection == Injection::skipped_chain ? Span{16, 24} : Span{8, 12};
}

/// The failure, on rank `stale` only, just before the collective.
Facts inject(Device& device, const Allocation& send, const Case& c) {
  const Span span = stale_contribution(c);
  Facts facts;
  if (c.injection == Injection::out_of_memory) {
    const std::uint64_t elements = send.size() / 4;
    std::vector<WrittenRange> written{WrittenRange{0, ByteRange::of(0, span.first * 4)},
                                      WrittenRange{0, ByteRange::of(span.last * 4, elements * 4)}};
    const LaunchResult result =
        device.launch("producer", {}, {send.whole()}, [&](const KernelContext&) {
          return LaunchOutcome::partial(Error::out_of_memory("no room"), written);
        });
    facts.failure = result.failure->raw();
    facts.origin = send.id().raw();
  } else {
    const Allocation staging = device.create_buffer(64);
    const LaunchResult loaded =
        device.launch("load", {}, {staging.whole()}, [](const KernelContext&) {
          return LaunchOutcome::failure(Error::launch("bad config"));
        });
    const LaunchResult scaled =
        device.launch("scale", {staging.whole()}, {elements(send, span.first, span.last)},
                      [](const KernelContext&) { return LaunchOutcome::success(); });
    EXPECT_EQ(scaled.status, LaunchStatus::Skipped);
    facts.failure = loaded.failure->raw();
    facts.origin = staging.id().raw();
    facts.consumed = send.id().raw();
  }
  return facts;
}

/// The root text the summary must carry, built by hand.
std::string expected_root(const Case& c, const Facts& facts) {
  const std::string failure = "failure " + std::to_string(facts.failure);
  if (c.injection == Injection::out_of_memory) {
    return "allocation " + std::to_string(facts.origin) + " was left unwritten by " + failure +
           " (out of memory: producer: no room)";
  }
  return "allocation " + std::to_string(facts.origin) + " was left unwritten by " + failure +
         " (launch failed: load: bad config), then scale was skipped: it needed allocation " +
         std::to_string(facts.origin);
}

/// Every test ends at a barrier, even one whose assertion returned early, so
/// one rank's failure never leaves the others matching the wrong collective.
struct EndBarrier {
  EndBarrier() = default;
  EndBarrier(const EndBarrier&) = delete;
  EndBarrier& operator=(const EndBarrier&) = delete;
  EndBarrier(EndBarrier&&) = delete;
  EndBarrier& operator=(EndBarrier&&) = delete;
  ~EndBarrier() { MPI_Barrier(MPI_COMM_WORLD); }
};

class MpiCollectives : public ::testing::TestWithParam<Case> {};

TEST_P(MpiCollectives, C4_EveryRankReportsTheRemoteRootAndReadsTheCleanElements) {
  const Case c = GetParam();
  const int stale = c.last_rank_stale ? ranks() - 1 : 0;
  const int root = stale; // A broadcast from the stale rank: its taint must spread.
  const EndBarrier barrier;
  HostBackend host;
  Device device(host);
  Collectives collectives(device, *world);

  const std::uint64_t contribution =
      c.kind == Kind::reduce_scatter ? kBlock * static_cast<std::uint64_t>(ranks()) : kBlock;
  const std::uint64_t output =
      c.kind == Kind::all_gather ? kBlock * static_cast<std::uint64_t>(ranks()) : kBlock;
  std::vector<std::int32_t> mine(contribution);
  for (std::uint64_t element = 0; element < contribution; ++element) {
    mine[element] = value(me(), element);
  }
  const Allocation send = device.create_buffer(as_bytes(mine));
  const Allocation recv = device.create_buffer(output * 4);

  Facts facts;
  if (c.injection != Injection::none && me() == stale) {
    facts = inject(device, send, c);
  }
  MPI_Bcast(&facts, sizeof(facts), MPI_BYTE, stale, MPI_COMM_WORLD);

  const StreamId stream = device.default_stream();
  std::string op = kind_name(c.kind);
  const int next = (me() + 1) % ranks();
  const int previous = (me() + ranks() - 1) % ranks();
  switch (c.kind) {
  case Kind::all_reduce:
    collectives.all_reduce(stream, "grads", send.whole(), recv.whole(), DataType::i32,
                           ReduceOp::sum);
    break;
  case Kind::all_gather:
    collectives.all_gather(stream, "grads", send.whole(), recv.whole(), DataType::i32);
    break;
  case Kind::reduce_scatter:
    collectives.reduce_scatter(stream, "grads", send.whole(), recv.whole(), DataType::i32,
                               ReduceOp::sum);
    break;
  case Kind::broadcast:
    collectives.broadcast(stream, "grads", send.whole(), recv.whole(), DataType::i32, root);
    break;
  case Kind::send_recv:
    op = "recv";
    // A ring: even ranks send first, odd ranks receive first (MPI_Send rules).
    if (me() % 2 == 0) {
      collectives.send(stream, "grads", send.whole(), DataType::i32, next);
      collectives.recv(stream, "grads", recv.whole(), DataType::i32, previous);
    } else {
      collectives.recv(stream, "grads", recv.whole(), DataType::i32, previous);
      collectives.send(stream, "grads", send.whole(), DataType::i32, next);
    }
    break;
  }

  // What this rank's output must hold: per element, stale or its value.
  const Span span = stale_contribution(c);
  std::vector<bool> expect_stale(output, false);
  std::vector<std::int32_t> expect(output, 0);
  const auto n = static_cast<std::int32_t>(ranks());
  const std::int32_t base = 1000 * n * (n + 1) / 2;
  for (std::uint64_t element = 0; element < output; ++element) {
    const auto j = static_cast<std::int32_t>(element);
    bool hit = false;
    switch (c.kind) {
    case Kind::all_reduce:
      expect[element] = base + n * j;
      hit = element >= span.first && element < span.last;
      break;
    case Kind::all_gather: {
      const auto block = static_cast<int>(element / kBlock);
      expect[element] = value(block, element % kBlock);
      hit = block == stale && element % kBlock >= span.first && element % kBlock < span.last;
      break;
    }
    case Kind::reduce_scatter: {
      // Pieces of size() elements: the stale span's pieces, whole.
      const auto width = static_cast<std::uint64_t>(ranks());
      const std::uint64_t source = static_cast<std::uint64_t>(me()) * kBlock + element;
      expect[element] = base + n * static_cast<std::int32_t>(source);
      hit =
          source / width >= span.first / width && source / width < (span.last + width - 1) / width;
      break;
    }
    case Kind::broadcast:
      expect[element] = value(root, element);
      hit = element >= span.first && element < span.last;
      break;
    case Kind::send_recv:
      expect[element] = value(previous, element);
      hit = previous == stale && element >= span.first && element < span.last;
      break;
    }
    expect_stale[element] = c.injection != Injection::none && hit;
  }

  const std::string kernel = op + "(grads) on rank " + std::to_string(me());
  for (std::uint64_t element = 0; element < output; ++element) {
    const Binding one = elements(recv, element, element + 1);
    if (!expect_stale[element]) {
      std::vector<std::byte> bytes;
      ASSERT_NO_THROW(bytes = device.read_bytes(one)) << "rank " << me() << " element " << element;
      std::int32_t got = 0;
      std::memcpy(&got, bytes.data(), 4);
      EXPECT_EQ(got, expect[element]) << "rank " << me() << " element " << element;
      continue;
    }
    const std::vector<Report> reports = device.stale_reports(one);
    ASSERT_EQ(reports.size(), 1u) << "rank " << me() << " element " << element;
    const Report& report = reports[0];
    if (me() == stale) {
      // Its own contribution: its own root, through a "took part" record.
      EXPECT_EQ(report.failure.raw(), facts.failure);
      ASSERT_FALSE(report.path.empty());
      EXPECT_TRUE(report.path[0].took_part);
      EXPECT_EQ(report.path[0].kernel, kernel);
      EXPECT_EQ(report.origin.raw(), facts.origin);
    } else {
      EXPECT_EQ(report.root.kind(), ErrorKind::Remote);
      EXPECT_EQ(report.root.message(), kernel + ": fed stale bytes from rank " +
                                           std::to_string(stale) + ": " + expected_root(c, facts))
          << "rank " << me() << " element " << element;
    }
  }
  device.check_invariants();
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const Kind kind : {Kind::all_reduce, Kind::all_gather, Kind::reduce_scatter, Kind::broadcast,
                          Kind::send_recv}) {
    cases.push_back(Case{kind, Injection::none, false});
    for (const Injection injection : {Injection::out_of_memory, Injection::skipped_chain}) {
      for (const bool last : {false, true}) {
        cases.push_back(Case{kind, injection, last});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Matrix, MpiCollectives, ::testing::ValuesIn(all_cases()), case_name);

TEST(MpiCollectivesD2, D2_AStaleNonRootIsOverwrittenByTheBroadcast) {
  const EndBarrier barrier;
  HostBackend host;
  Device device(host);
  Collectives collectives(device, *world);
  const Allocation buffer = device.create_buffer(as_bytes(std::vector<std::int32_t>(kBlock, me())));
  if (me() == ranks() - 1) {
    static_cast<void>(device.launch("junk", {}, {buffer.whole()}, [](const KernelContext&) {
      return LaunchOutcome::failure(Error::launch("junk"));
    }));
  }
  collectives.broadcast(device.default_stream(), "weights", buffer.whole(), buffer.whole(),
                        DataType::i32, 0);
  const std::vector<std::byte> bytes = device.read_bytes(buffer.whole());
  std::int32_t first = -1;
  std::memcpy(&first, bytes.data(), 4);
  EXPECT_EQ(first, 0);
  EXPECT_EQ(device.graph().size(), 0u);
}

// ------------------------------------------------------------ C6

TEST(MpiTimeout, C6_APeerThatDoesNotTakePartInTimeBreaksTheCommunicator) {
  const EndBarrier barrier;
  // Staged (the default): rank 0's abandoned call never touches this
  // Device's memory, which is gone by the time rank 1 arrives.
  MpiCommunicator slow(MPI_COMM_WORLD, MpiOptions{std::chrono::milliseconds(1500)});
  HostBackend host;
  Device device(host);
  Collectives collectives(device, slow);
  const Allocation send = device.create_buffer(as_bytes(std::vector<std::int32_t>(kBlock, 1)));
  const Allocation recv = device.create_buffer(kBlock * 4);
  if (me() == 0) {
    const auto start = std::chrono::steady_clock::now();
    try {
      collectives.all_reduce(device.default_stream(), "grads", send.whole(), recv.whole(),
                             DataType::i32, ReduceOp::sum);
      ADD_FAILURE() << "rank 0 did not time out";
    } catch (const Exception& error) {
      EXPECT_EQ(error.kind(), ErrorKind::Communicator);
      EXPECT_NE(std::string(error.what()).find("not complete after 1500 ms"), std::string::npos)
          << error.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    // The outputs carry it (S3), and the communicator refuses further calls.
    const std::vector<Report> reports = device.stale_reports(recv.whole());
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_NE(reports[0].root.message().find("not complete after"), std::string::npos);
    EXPECT_TRUE(slow.broken());
    EXPECT_THROW(collectives.all_reduce(device.default_stream(), "grads", send.whole(),
                                        recv.whole(), DataType::i32, ReduceOp::sum),
                 Exception);
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
    if (me() == 1) {
      // Late, but it completes: rank 0's abandoned call still takes part.
      collectives.all_reduce(device.default_stream(), "grads", send.whole(), recv.whole(),
                             DataType::i32, ReduceOp::sum);
    }
  }
}

/// On ranks other than 0, gtest's own printer is replaced by one that says
/// only what failed, prefixed with the rank, so mpirun's output stays legible.
class RankFailures : public ::testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (result.failed()) {
      std::fprintf(stderr, "[rank %d] %s:%d: %s\n", me(), result.file_name(), result.line_number(),
                   result.summary());
    }
  }
};

} // namespace
} // namespace taintpool

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int status = 0;
  {
    // A failing test must not hang the others for the default ten minutes.
    // TAINTPOOL_MPI_UNSTAGED=1 runs MPI on the Device's buffers themselves.
    taintpool::MpiOptions options{std::chrono::seconds(60)};
    const char* unstaged = std::getenv("TAINTPOOL_MPI_UNSTAGED");
    options.stage = unstaged == nullptr || std::string(unstaged) != "1";
    taintpool::MpiCommunicator communicator(MPI_COMM_WORLD, options);
    taintpool::world = &communicator;
    if (communicator.rank() != 0) {
      auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
      listeners.Append(new taintpool::RankFailures);
    }
    status = RUN_ALL_TESTS();
    taintpool::world = nullptr;
  }
  MPI_Finalize();
  return status;
}
