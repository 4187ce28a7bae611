// Pins: DeviceModel::mismatch(device, allocation, values) — the one-
// allocation comparison StreamRig makes after every launch for each
// allocation it bound — still names every difference it named (P1 held or
// not, D1 claims, D1/S1/O1 bytes), and allocates nothing when there is none.
//
// Why: it used to copy core's claims and the model's into two lists on
// every call, passing or not: 4% of stream_fuzzer's allocations (issue 13,
// twenty-seventh round). It now walks both in place (same_claims,
// same_values) and copies only to describe a difference, so both halves —
// same verdicts, no allocation — are pinned here. Its own executable: it
// counts allocations with the replaced global operator new
// (testing/src/replace_new.cpp); no assertion macro runs inside a measured
// region.
#include <taintpool/device/device.hpp>
#include <taintpool/model/device_model.hpp>
#include <taintpool/testing/heap_allocations.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "deferred_device_and_model.hpp"

namespace taintpool {
namespace {

using model::BodyKind;
using model::BodyPlan;
using model::DeviceModel;
using testing::allocations_during;

struct Both : test::DeferredDeviceAndModel {
  /// One launch of "k" writing `writes`, reading nothing.
  void launch(const std::vector<Binding>& writes, const BodyPlan& plan) {
    DeferredDeviceAndModel::launch("k", {}, writes, plan);
  }

  /// The verdict, and how many allocations asking for it took.
  std::pair<std::optional<std::string>, std::uint64_t> ask(AllocationId id, bool values) {
    std::optional<std::string> verdict;
    const std::uint64_t allocations =
        allocations_during([&] { verdict = oracle.mismatch(device, id, values); });
    return {std::move(verdict), allocations};
  }
};

BodyPlan failing_partly() {
  BodyPlan plan;
  plan.kind = BodyKind::fail;
  plan.error = Error::launch("boom");
  plan.written = {WrittenRange{0, ByteRange::of(4, 8)}}; // Two claims on A1 (S2).
  return plan;
}

TEST(DeviceModelMismatch, D1_P1_OneAllocationsComparisonAllocatesNothingWhenCoreAndModelAgree) {
  Both both;
  const Allocation a = both.device.create_buffer(16);
  const Allocation b = both.device.create_buffer(8);
  ASSERT_EQ(both.oracle.create(16), a.id());
  ASSERT_EQ(both.oracle.create(8), b.id());
  BodyPlan succeed;
  succeed.seed = 3;
  both.launch({b.whole()}, succeed); // Known values.
  both.launch({a.whole()}, failing_partly());
  both.device.synchronize();
  both.oracle.synchronize(false);
  for (const bool values : {false, true}) {
    for (const AllocationId id : {a.id(), b.id()}) {
      const auto [verdict, allocations] = both.ask(id, values);
      EXPECT_EQ(verdict, std::nullopt) << *verdict;
      EXPECT_EQ(allocations, 0u) << to_string(id) << (values ? " with values" : "");
    }
  }
}

TEST(DeviceModelMismatch, D1_OneAllocationsComparisonNamesAClaimCoreHasAndTheModelLacks) {
  Both both;
  const Allocation a = both.device.create_buffer(16);
  ASSERT_EQ(both.oracle.create(16), a.id());
  const FailureId extra = both.device.graph().insert(Error::launch("not the model's"));
  both.device.memory().taint(Binding{a.id(), ByteRange::of(2, 5)}, extra);
  const auto [verdict, allocations] = both.ask(a.id(), false);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->rfind("D1: ", 0), 0u) << *verdict;
  EXPECT_NE(verdict->find("[2, 5)"), std::string::npos) << *verdict;
  both.device.memory().written(Binding{a.id(), ByteRange::of(0, 16)});
  EXPECT_EQ(both.ask(a.id(), false).first, std::nullopt);
}

TEST(DeviceModelMismatch, D1_OneAllocationsComparisonNamesAByteOnlyWhenAskedForValues) {
  Both both;
  const Allocation a = both.device.create_buffer(8);
  ASSERT_EQ(both.oracle.create(8), a.id());
  BodyPlan succeed;
  succeed.seed = 9;
  both.launch({a.whole()}, succeed);
  both.device.synchronize();
  both.oracle.synchronize(false);
  std::byte* data = both.device.memory().resolve_swept(a.whole()).data;
  data[5] = static_cast<std::byte>(static_cast<std::uint8_t>(data[5]) ^ 0xffu);
  EXPECT_EQ(both.ask(a.id(), false).first, std::nullopt);
  const auto [verdict, allocations] = both.ask(a.id(), true);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->rfind("D1/S1/O1: byte 5 of ", 0), 0u) << *verdict;
}

TEST(DeviceModelMismatch, P1_OneAllocationsComparisonNamesAnAllocationOnlyOneSideHolds) {
  Both both;
  const Allocation a = both.device.create_buffer(8);
  ASSERT_EQ(both.oracle.create(8), a.id());
  const AllocationId model_only = both.oracle.create(4); // Core never made it.
  const auto [verdict, allocations] = both.ask(model_only, true);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->rfind("P1: the manager does not hold ", 0), 0u) << *verdict;
}

// The whole comparison's id check (mismatch_in): each id the manager lists
// is stamped as met, and the lists agree when every one is the model's, none
// comes twice and the counts match — no list is built or sorted unless they
// differ. Pinned both ways across drops and discoveries, which change the
// model's list of held allocations (thirty-sixth round).
TEST(DeviceModelMismatch, P1_TheWholeComparisonNamesIdsOneSideHoldsAndPassesWhenBothHoldTheSame) {
  Both both;
  Allocation a = both.device.create_buffer(8);
  Allocation b = both.device.create_buffer(4);
  const Allocation c = both.device.create_buffer(2);
  ASSERT_EQ(both.oracle.create(8), a.id());
  ASSERT_EQ(both.oracle.create(4), b.id());
  ASSERT_EQ(both.oracle.create(2), c.id());
  EXPECT_EQ(both.oracle.mismatch(both.device), std::nullopt);
  // The middle one dropped and discovered by both: 1 and 3 held.
  const AllocationId middle = b.id();
  b.reset();
  both.oracle.drop_handle(middle);
  both.device.sweep();
  both.oracle.sweep();
  EXPECT_EQ(both.oracle.mismatch(both.device), std::nullopt);
  EXPECT_EQ(both.oracle.allocations(), (std::vector<AllocationId>{a.id(), c.id()}));
  // The model alone makes one: the manager lacks it.
  const AllocationId model_only = both.oracle.create(1);
  const std::optional<std::string> lacking = both.oracle.mismatch(both.device);
  ASSERT_TRUE(lacking.has_value());
  EXPECT_EQ(*lacking, "P1: the manager holds allocations " + std::to_string(a.id().raw()) + " " +
                          std::to_string(c.id().raw()) + ", the model " +
                          std::to_string(a.id().raw()) + " " + std::to_string(c.id().raw()) + " " +
                          std::to_string(model_only.raw()));
  const Allocation d = both.device.create_buffer(1);
  ASSERT_EQ(d.id(), model_only);
  EXPECT_EQ(both.oracle.mismatch(both.device), std::nullopt);
  // The model alone ends one: the manager holds one more than the model,
  // as many as before in the per-op comparison too.
  const AllocationId first = a.id();
  both.oracle.drop_handle(first);
  both.oracle.sweep();
  for (const std::optional<std::string>& extra :
       {both.oracle.mismatch(both.device),
        both.oracle.mismatch_touched(both.device, std::span<const AllocationId>())}) {
    ASSERT_TRUE(extra.has_value());
    EXPECT_EQ(extra->rfind("P1: the manager holds allocations " + std::to_string(first.raw()), 0),
              0u)
        << *extra;
  }
}

// bury() runs once per launch, after the body's verdict (a bury on entry,
// keeping what the write set held, buried nothing and went). A failure whose
// last bytes a launch overwrites is gone after it; one keeping a byte
// elsewhere lives, and core agrees with both (R1, G5).
TEST(DeviceModelMismatch,
     R1_ALaunchOverwritingAFailuresLastBytesBuriesItAndOneLeavingAByteDoesNot) {
  Both both;
  const Allocation a = both.device.create_buffer(16);
  ASSERT_EQ(both.oracle.create(16), a.id());
  both.launch({a.whole()}, failing_partly()); // Claims [0, 4) and [8, 16).
  both.device.synchronize();
  both.oracle.synchronize(false);
  ASSERT_EQ(both.oracle.live_failures().size(), 1u);
  EXPECT_EQ(both.oracle.mismatch(both.device), std::nullopt);
  BodyPlan succeed;
  succeed.seed = 5;
  both.launch({Binding{a.id(), ByteRange::of(0, 4)}}, succeed);
  both.device.synchronize();
  both.oracle.synchronize(false);
  EXPECT_EQ(both.oracle.live_failures().size(), 1u); // [8, 16) still names it.
  EXPECT_EQ(both.oracle.mismatch(both.device), std::nullopt);
  both.launch({Binding{a.id(), ByteRange::of(8, 16)}}, succeed);
  both.device.synchronize();
  both.oracle.synchronize(false);
  EXPECT_TRUE(both.oracle.live_failures().empty());
  EXPECT_TRUE(both.oracle.claims(a.id()).empty());
  EXPECT_EQ(both.oracle.mismatch(both.device), std::nullopt);
}

} // namespace
} // namespace taintpool
