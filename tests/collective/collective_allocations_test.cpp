// What the collective path allocates on a passing run (issue 13: the
// collective fuzzer makes a few hundred heap allocations an input, each
// costing it the sanitizer's bookkeeping), pinned as counts with the rules
// the counts must not cost: the loopback's buffers serve the next
// collective, CollectiveBackend waits for each source once and in order,
// and a synchronize hands back every late verdict in launch order. Its own
// executable: it replaces the global operator new with a counting one.
#include <taintpool/collective/collective_backend.hpp>
#include <taintpool/collective/communicator.hpp>
#include <taintpool/collective/loopback.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/testing/heap_allocations.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace taintpool {
namespace {

using testing::allocations_during;

/// Counts its waits into a log shared with other sources; fails the
/// launches it was told to, with a message short enough that copying it
/// allocates nothing.
class LoggingSource final : public VerdictSource {
 public:
  LoggingSource(char name, std::string& log)
      : name_(name)
      , log_(log) {}
  bool landed_clean(std::uint64_t) override { return false; }
  void wait_all() override { log_ += name_; }
  std::optional<LateFailure> verdict(std::uint64_t launch) override {
    if (!fails) {
      return std::nullopt;
    }
    return LateFailure{launch, Error::communicator("gone"), {}};
  }
  bool fails = false;

 private:
  char name_;
  std::string& log_;
};

TEST(CollectiveAllocations,
     C5_EachSourceIsWaitedForOnceInTheOrderOfItsOldestLaunchAllocatingNothing) {
  HostBackend host;
  CollectiveBackend backend(host);
  std::string log;
  log.reserve(16);
  LoggingSource a('a', log);
  LoggingSource b('b', log);
  backend.expect(1, b);
  backend.expect(2, a);
  backend.expect(3, b);
  backend.expect(4, a);
  std::array<std::byte, 8> from{};
  std::array<std::byte, 8> to{};
  const std::uint64_t allocations = allocations_during([&] {
    static_cast<void>(backend.copy_in(nullptr, to.data(), from.data(), to.size()));
    static_cast<void>(backend.copy_out(nullptr, to.data(), from.data(), to.size()));
  });
  EXPECT_EQ(log, "baba") << "each copy waits for b (launch 1), then a (launch 2), once each";
  EXPECT_EQ(allocations, 0u);
}

TEST(CollectiveAllocations, C5_ASynchronizeMakesRoomForEveryLateVerdictAtOnceAndKeepsTheirOrder) {
  HostBackend host;
  CollectiveBackend backend(host);
  std::string log;
  log.reserve(16);
  LoggingSource a('a', log);
  a.fails = true;
  for (std::uint64_t launch = 1; launch <= 5; ++launch) {
    backend.expect(launch, a);
  }
  std::vector<LateFailure> late;
  const std::uint64_t allocations = allocations_during([&] { late = backend.synchronize(); });
  ASSERT_EQ(late.size(), 5u);
  for (std::uint64_t launch = 1; launch <= 5; ++launch) {
    EXPECT_EQ(late[launch - 1].launch, launch);
    EXPECT_EQ(late[launch - 1].error, Error::communicator("gone"));
  }
  EXPECT_EQ(backend.pending(), 0u);
  EXPECT_EQ(log, "a");
  // The held list once (room for all five) and the list returned once:
  // made room for one verdict at a time, the held list grew per verdict.
  EXPECT_LE(allocations, 2u);
}

/// One all-reduce of `count` u8 over two ranks of `world`, each with a
/// summary, both tickets released once landed.
void all_reduce_round(LoopbackWorld& world, std::array<std::vector<std::byte>, 2>& send,
                      std::array<std::vector<std::byte>, 2>& recv,
                      const std::array<std::vector<std::byte>, 2>& summary) {
  std::array<Ticket, 2> tickets{};
  for (int rank = 0; rank < 2; ++rank) {
    const auto index = static_cast<std::size_t>(rank);
    CollectiveCall call;
    call.kind = CollectiveKind::all_reduce;
    call.send = send[index].data();
    call.recv = recv[index].data();
    call.count = send[index].size();
    call.type = DataType::u8;
    call.summary = summary[index];
    tickets[index] = world.rank(rank).start(call);
  }
  for (int rank = 0; rank < 2; ++rank) {
    world.rank(rank).release(tickets[static_cast<std::size_t>(rank)]);
  }
}

TEST(CollectiveAllocations, C3_AWorldRunsItsSecondCollectiveOfTheSameShapeInTheBuffersOfItsFirst) {
  LoopbackWorld world(2);
  std::array<std::vector<std::byte>, 2> send{std::vector<std::byte>(16, std::byte{1}),
                                             std::vector<std::byte>(16, std::byte{2})};
  std::array<std::vector<std::byte>, 2> recv{std::vector<std::byte>(16),
                                             std::vector<std::byte>(16)};
  const std::array<std::vector<std::byte>, 2> summary{std::vector<std::byte>(1024, std::byte{7}),
                                                      std::vector<std::byte>(1024, std::byte{9})};
  all_reduce_round(world, send, recv, summary);
  // Every buffer of the first round (each call's bytes and summary, each
  // rank's landed summaries) is a spare now, and the second round takes
  // one that fits for each: a call's few bytes must not take a rank's
  // landed summaries' buffer, which would then be allocated again.
  send[0].assign(16, std::byte{3});
  const std::uint64_t allocations =
      allocations_during([&] { all_reduce_round(world, send, recv, summary); });
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(recv[0], std::vector<std::byte>(16, std::byte{5}));
  EXPECT_EQ(recv[1], std::vector<std::byte>(16, std::byte{5}));
  EXPECT_EQ(world.waiting(), 0u);
}

} // namespace
} // namespace taintpool
