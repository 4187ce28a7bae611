// Pins EngineModel's kept slots (issue 13, twenty-ninth round): reset() and
// restart() keep every failure slot and skip record an input used, and the
// next input's insert() and skipped() copy into them. A model so reset must
// answer exactly as a fresh one does — no failure, record or message of an
// earlier life visible — and, once its slots are wide enough, copying into
// them allocates nothing (taint_fuzzer resets one model per input; its
// copies were a third of that fuzzer's allocations). Its own executable's
// counting operator new (engine_steady_state_alloc_test).
#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/model/engine_model.hpp>
#include <taintpool/report.hpp>
#include <taintpool/testing/heap_allocations.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace taintpool {
namespace {

using model::EngineModel;
using testing::allocations_during;

SkipRecord record(const std::string& kernel, std::uint64_t needed,
                  std::vector<std::uint64_t> produced) {
  SkipRecord made{kernel, AllocationId::from_raw(needed), {}};
  for (const std::uint64_t id : produced) {
    made.produced.push_back(AllocationId::from_raw(id));
  }
  return made;
}

/// An earlier life: many failures, long messages, more records than the
/// graph keeps, claims, a pruned failure.
void wide_life(EngineModel& model) {
  const std::string long_text = "a message long enough to live on the heap, past any buffer";
  for (int failure = 0; failure < 6; ++failure) {
    const FailureId id = model.insert(Error::launch(long_text));
    for (std::uint64_t at = 0; at < 20; ++at) {
      model.skipped(id, record("a_kernel_name_long_enough_for_the_heap", at + 1, {at + 2, at + 3}));
    }
  }
  model.taint(0, ByteRange::of(0, 50), FailureId::from_raw(2));
  model.taint(1, ByteRange::of(10, 20), FailureId::from_raw(5));
  model.prune(FailureId::from_raw(1));
}

/// A later, narrower life.
void narrow_life(EngineModel& model) {
  const FailureId a = model.insert(Error::generic("x"));
  const FailureId b = model.insert(Error::launch("oom"));
  model.skipped(a, record("k", 1, {2}));
  model.skipped(b, record("linear", 2, {3, 4}));
  model.skipped(b, record("", 3, {}));
  model.taint(0, ByteRange::of(5, 9), b);
  model.prune(a); // Uncarried: dies, its records with it.
}

void expect_same(const EngineModel& got, const EngineModel& fresh) {
  EXPECT_EQ(got.next_id(), fresh.next_id());
  EXPECT_EQ(got.size(), fresh.size());
  EXPECT_EQ(got.live_failures(), fresh.live_failures());
  for (std::uint64_t raw = 1; raw <= 8; ++raw) {
    const FailureId id = FailureId::from_raw(raw);
    EXPECT_EQ(got.live(id), fresh.live(id)) << "failure " << raw;
    EXPECT_EQ(got.skips_recorded(id), fresh.skips_recorded(id)) << "failure " << raw;
    EXPECT_EQ(got.skip_records(id), fresh.skip_records(id)) << "failure " << raw;
    EXPECT_EQ(got.view(id).skips, fresh.view(id).skips) << "failure " << raw;
    ASSERT_EQ(got.error(id) == nullptr, fresh.error(id) == nullptr) << "failure " << raw;
    if (got.error(id) != nullptr) {
      EXPECT_EQ(*got.error(id), *fresh.error(id)) << "failure " << raw;
      EXPECT_EQ(got.report(id, AllocationId::from_raw(3)),
                fresh.report(id, AllocationId::from_raw(3)))
          << "failure " << raw;
    }
  }
}

TEST(EngineModelSlots, G1_G7_AResetModelAnswersAsAFreshOneWhateverItsSlotsHeld) {
  EngineModel kept;
  kept.add_allocation();
  kept.add_allocation();
  wide_life(kept);
  kept.reset();
  narrow_life(kept);
  EngineModel fresh;
  fresh.add_allocation();
  fresh.add_allocation();
  narrow_life(fresh);
  expect_same(kept, fresh);
}

TEST(EngineModelSlots, G1_G7_ARestartedModelAnswersAsAFreshOneWhateverItsSlotsHeld) {
  EngineModel kept;
  kept.add_allocation();
  kept.add_allocation();
  wide_life(kept);
  kept.restart();
  kept.add_allocation();
  kept.add_allocation();
  narrow_life(kept);
  EngineModel fresh;
  fresh.add_allocation();
  fresh.add_allocation();
  narrow_life(fresh);
  expect_same(kept, fresh);
}

TEST(EngineModelSlots, G1_G7_AWarmResetModelCopiesFailuresAndRecordsIntoItsSlotsWithoutAllocating) {
  EngineModel model;
  model.add_allocation();
  const Error message = Error::launch("a message long enough to live on the heap, past any buffer");
  const SkipRecord skip = record("a_kernel_name_long_enough_for_the_heap", 1, {2, 3, 4});
  auto life = [&] {
    for (int failure = 0; failure < 4; ++failure) {
      const FailureId id = model.insert(message);
      for (int at = 0; at < 20; ++at) {
        model.skipped(id, skip);
      }
    }
    model.reset();
  };
  life(); // The slots, their messages and records made.
  EXPECT_EQ(allocations_during(life), 0u);
}

} // namespace
} // namespace taintpool
