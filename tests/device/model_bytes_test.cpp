// Pins: DeviceModel's per-byte lists (each allocation's writers and values)
// come from one block of the model's (DeviceModel::ByteArena), so a create
// after the first costs no heap allocation; a model moved, copied or
// assigned still answers for every allocation it made; and named_error
// words a failure as before in one string.
//
// Why: the two lists were two heap allocations per create, device_fuzzer's
// largest site (issue 13, forty-fourth round); named_error built its text
// piece by piece and a late failure's suffix in a copy. The block lives in
// the model, so whatever moves the model (RanksModel's vector of them)
// must leave the lists where their resource is. Its own executable: it
// counts allocations with the replaced global operator new
// (testing/src/replace_new.cpp); no assertion macro runs inside a measured
// region.
#include <taintpool/device/device.hpp>
#include <taintpool/model/device_model.hpp>
#include <taintpool/testing/heap_allocations.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "deferred_device_and_model.hpp"

namespace taintpool {
namespace {

using model::DeviceModel;
using testing::allocations_during;

TEST(DeviceModelBytes, D1_CreatesAfterTheFirstTakeNoHeapAllocationWhileTheBlockHasRoom) {
  DeviceModel model;
  (void)model.create(32); // The block, the allocation list, the held list.
  std::uint64_t taken = 0;
  const std::uint64_t allocations = allocations_during([&] {
    for (int at = 0; at < 7; ++at) {
      taken += model.create(32).raw() != 0 ? 1u : 0u;
    }
  });
  EXPECT_EQ(taken, 7u);
  // Seven more of 32 bytes (ten bytes a byte: 2,240) fit the first block;
  // the allocation and held lists have room for eight from the first.
  EXPECT_EQ(allocations, 0u);
  for (std::uint64_t number = 1; number <= 8; ++number) {
    const AllocationId id = allocation_id(0, number);
    EXPECT_EQ(model.size(id), 32u);
    EXPECT_EQ(model.bytes_in_place(id).size(), 32u);
    EXPECT_EQ(model.writers_in_place(id).size(), 32u);
  }
}

TEST(DeviceModelBytes, D1_AModelMovedCopiedOrAssignedStillAgreesWithTheDeviceOnEveryAllocation) {
  test::DeferredDeviceAndModel both;
  std::vector<Allocation> held;
  for (const std::uint64_t size : {16u, 40u, 8u}) {
    held.push_back(both.device.create_buffer(size));
    ASSERT_EQ(both.oracle.create(size), held.back().id());
  }
  model::BodyPlan succeed;
  succeed.seed = 5;
  both.launch("fill", {held[0].whole()}, {held[1].whole()}, succeed); // Known values.
  model::BodyPlan fail;
  fail.kind = model::BodyKind::fail;
  fail.error = Error::launch("boom");
  fail.written = {WrittenRange{0, ByteRange::of(2, 6)}};
  both.launch("k", {}, {held[2].whole()}, fail); // Claims (S2).
  ASSERT_EQ(both.oracle.mismatch(both.device), std::nullopt);

  DeviceModel moved = std::move(both.oracle);
  EXPECT_EQ(moved.mismatch(both.device), std::nullopt);
  DeviceModel copied = moved;
  {
    const DeviceModel gone = std::move(moved); // Takes the block with it.
  }
  EXPECT_EQ(copied.mismatch(both.device), std::nullopt);
  DeviceModel assigned;
  (void)assigned.create(64); // Lists in its own block, given to `copied` by the swap.
  assigned = std::move(copied);
  EXPECT_EQ(assigned.mismatch(both.device), std::nullopt);
  // And it goes on: a create in the assigned model lands where core's does.
  held.push_back(both.device.create_buffer(24));
  EXPECT_EQ(assigned.create(24), held.back().id());
  EXPECT_EQ(assigned.mismatch(both.device), std::nullopt);
}

TEST(DeviceModelBytes, G4_ALaunchFailuresErrorIsWordedInOneStringWithItsCountAndSuffix) {
  const Error boom = Error::launch("a message long enough to live on the heap");
  std::optional<Error> named;
  const std::uint64_t allocations = allocations_during([&] {
    named.emplace(
        model::named_error("kernel", boom, 12, " (reported when the device synchronised)"));
  });
  EXPECT_EQ(named->kind(), boom.kind());
  EXPECT_EQ(named->message(),
            "kernel: a message long enough to live on the heap (12 reported written ranges lay "
            "outside their outputs and were ignored) (reported when the device synchronised)");
  EXPECT_EQ(allocations, 1u); // The message, sized once.
  // No count, no suffix; an empty message is the kind's name.
  EXPECT_EQ(model::named_error("k", Error::launch("boom"), 0).message(), "k: boom");
  const Error unnamed(ErrorKind::OutOfMemory, "");
  EXPECT_EQ(model::named_error("k", unnamed, 1).message(),
            "k: " + std::string(name(ErrorKind::OutOfMemory)) +
                " (1 reported written ranges lay outside their outputs and were ignored)");
}

} // namespace
} // namespace taintpool
