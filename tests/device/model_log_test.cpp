// Pins: DeviceModel's log of the launches since the last synchronize — what
// awaits_verdict replays and a late failure's attribution walks — answers as
// core does, once its entries share one list of bindings and one string of
// kernel names, and awaits_verdict's replay starts at the oldest unconfirmed
// launch (none: no replay at all).
//
// Why: an entry's own lists and name were three to five allocations per
// launch or exchange, and awaits_verdict tested every entry against both
// lists of unconfirmed launches; collective_fuzzer pays both per collective
// (issue 13, thirty-eighth round). These tests fail if an entry's slice or
// name points at another entry's (as when the shared buffers grow or are
// refilled after a synchronize), or if the replay skips or misjudges a
// launch it must count.
#include <taintpool/device/device.hpp>
#include <taintpool/model/device_model.hpp>
#include <taintpool/testing/heap_allocations.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "deferred_device_and_model.hpp"

namespace taintpool {
namespace {

using model::BodyKind;
using model::BodyPlan;

struct Both : test::DeferredDeviceAndModel {
  Allocation create(std::uint64_t size) {
    Allocation made = device.create_buffer(size);
    EXPECT_EQ(oracle.create(size), made.id());
    return made;
  }

  /// Both answers to "does `read` await a verdict"; they must agree.
  bool awaits(const Binding& read) {
    const std::array<Binding, 1> reads{read};
    const bool core = device.awaits_verdict(reads);
    EXPECT_EQ(oracle.awaits_verdict(reads), core) << to_string(read.allocation);
    return core;
  }

  void synchronize() {
    device.synchronize();
    oracle.synchronize(false);
  }
};

BodyPlan with_seed(std::uint8_t seed) {
  BodyPlan plan;
  plan.seed = seed;
  return plan;
}

// A late failure of the first launch reaches every later launch that read
// what it (or a reader before it) wrote: each such launch is recorded by its
// own kernel name, oldest first. Forty readers with names of growing length
// outgrow the log's first room for entries and names; a second round after
// a synchronize refills the emptied buffers.
TEST(DeviceModelLog, S5_ALateFailureRecordsEveryLaterReaderByItsOwnKernelAfterTheLogGrows) {
  Both both;
  const std::array<Allocation, 2> ping{both.create(8), both.create(8)};
  const Allocation other = both.create(4);
  for (int round = 0; round < 2; ++round) {
    BodyPlan late;
    late.kind = BodyKind::fail_late;
    late.error = Error::launch("late " + std::to_string(round));
    both.launch("origin", {}, {ping[0].whole()}, late);
    std::vector<std::string> readers;
    for (std::size_t at = 0; at < 40; ++at) {
      // Every third launch reads nothing stale: it must not be recorded.
      const bool reads_stale = at % 3 != 2;
      std::string kernel = "reader " + std::to_string(round) + "." + std::to_string(at) + " ";
      kernel.append(at, 'x');
      const Binding from = reads_stale ? ping[at % 2].whole() : other.whole();
      const Binding into = reads_stale ? ping[(at + 1) % 2].whole() : other.whole();
      both.launch(kernel, {from}, {into}, with_seed(static_cast<std::uint8_t>(at)));
      if (reads_stale) {
        readers.push_back(kernel);
      }
    }
    both.synchronize();
    ASSERT_EQ(both.oracle.mismatch(both.device), std::nullopt) << "round " << round;
    const std::vector<FailureId> live = both.oracle.live_failures();
    ASSERT_FALSE(live.empty());
    const std::vector<SkipRecord> records = both.oracle.skip_records(live.back());
    ASSERT_EQ(both.oracle.skips_recorded(live.back()), readers.size()) << "round " << round;
    ASSERT_EQ(records.size(), model::DeviceModel::kept_skip_records);
    for (std::size_t at = 0; at < records.size(); ++at) {
      EXPECT_EQ(records[at].kernel, readers[readers.size() - records.size() + at])
          << "round " << round << ", record " << at;
    }
  }
}

// C2: with a checked launch since the last synchronize, every launch from
// it on awaits a verdict, whatever it read — and none before it does, nor
// (after the synchronize) any at all.
TEST(DeviceModelLog, C2_EveryLaunchFromTheOldestCheckedOneOnAwaitsAVerdictAndNoneBefore) {
  Both both;
  const Allocation before = both.create(8);
  const Allocation checked = both.create(8);
  const Allocation after = both.create(8);
  const Allocation untouched = both.create(8);
  both.launch("before", {}, {before.whole()}, with_seed(1));
  EXPECT_FALSE(both.awaits(before.whole()));
  BodyPlan check;
  check.kind = BodyKind::check;
  both.launch("checked", {}, {checked.whole()}, check);
  both.launch("after", {}, {after.whole()}, with_seed(2)); // Reads nothing: still unconfirmed.
  EXPECT_FALSE(both.awaits(before.whole()));
  EXPECT_TRUE(both.awaits(checked.whole()));
  EXPECT_TRUE(both.awaits(after.whole()));
  EXPECT_FALSE(both.awaits(untouched.whole()));
  both.synchronize();
  for (const Allocation* allocation : {&before, &checked, &after, &untouched}) {
    EXPECT_FALSE(both.awaits(allocation->whole()));
  }
  EXPECT_EQ(both.oracle.mismatch(both.device), std::nullopt);
}

// With nothing unconfirmed the answer is "no" without replaying the log: no
// byte set is built, so the question allocates nothing, however long the log.
TEST(DeviceModelLog, C2_AwaitsVerdictAllocatesNothingWhenNoLaunchIsUnconfirmed) {
  Both both;
  const Allocation a = both.create(16);
  const Allocation b = both.create(16);
  for (std::uint8_t at = 0; at < 20; ++at) {
    both.launch("k", {a.whole()}, {b.whole()}, with_seed(at));
    both.launch("k", {b.whole()}, {a.whole()}, with_seed(at));
  }
  const std::array<Binding, 2> reads{a.whole(), b.whole()};
  bool awaits = true;
  const std::uint64_t allocations =
      testing::allocations_during([&] { awaits = both.oracle.awaits_verdict(reads); });
  EXPECT_FALSE(awaits);
  EXPECT_EQ(allocations, 0u);
  EXPECT_FALSE(both.device.awaits_verdict(reads));
}

} // namespace
} // namespace taintpool
