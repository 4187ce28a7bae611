// Pins EngineModel's answering calls (try_taint, try_skipped,
// try_report_path; issue 13, fortieth round): each refuses exactly where its
// throwing twin throws, changing nothing then, and otherwise does exactly
// what the twin does. taint_fuzzer compares core's refusals with these
// answers instead of with the model's exceptions, so a difference between
// the twins would be a check quietly lost. A refusal answers without
// throwing and without allocating (this executable counts operator new).
#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/model/engine_model.hpp>
#include <taintpool/report.hpp>
#include <taintpool/testing/heap_allocations.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

namespace taintpool {
namespace {

using model::EngineModel;
using testing::allocations_during;

/// Two models with the same history: a live failure carried by allocation
/// 0 with two chained skip records, a pruned one, and one never minted.
struct Twins {
  EngineModel answering;
  EngineModel throwing;
  FailureId live = FailureId::from_raw(1);
  FailureId pruned = FailureId::from_raw(2);
  FailureId unminted = FailureId::from_raw(3);

  Twins() {
    for (EngineModel* model : {&answering, &throwing}) {
      model->add_allocation();
      model->add_allocation();
      live = model->insert(Error::launch("a message long enough to live on the heap"));
      pruned = model->insert(Error::generic("x"));
      model->taint(0, ByteRange::of(0, 8), live);
      model->skipped(live,
                     SkipRecord{"linear", AllocationId::from_raw(3), {AllocationId::from_raw(4)}});
      model->skipped(live,
                     SkipRecord{"softmax", AllocationId::from_raw(4), {AllocationId::from_raw(5)}});
      model->prune(pruned);
    }
    unminted = answering.next_id();
  }
};

/// Everything a fuzzer compares of a model, for two models side by side.
void expect_same(const EngineModel& a, const EngineModel& b) {
  ASSERT_EQ(a.next_id(), b.next_id());
  ASSERT_EQ(a.allocations(), b.allocations());
  for (std::size_t at = 0; at < a.allocations(); ++at) {
    EXPECT_EQ(a.claims(at), b.claims(at)) << "alloc " << at;
  }
  for (std::uint64_t raw = 1; raw < a.next_id().raw(); ++raw) {
    const FailureId id = FailureId::from_raw(raw);
    EXPECT_EQ(a.live(id), b.live(id)) << raw;
    EXPECT_EQ(a.tags(id), b.tags(id)) << raw;
    EXPECT_EQ(a.skips_recorded(id), b.skips_recorded(id)) << raw;
    EXPECT_EQ(a.skip_records(id), b.skip_records(id)) << raw;
  }
}

TEST(EngineModelAnswers, R2_TryTaintRefusesExactlyWhereTaintThrowsAndChangesNothing) {
  Twins twins;
  const ByteRange range = ByteRange::of(4, 12);
  for (const FailureId failure : {twins.pruned, twins.unminted}) {
    bool answered = true;
    const std::uint64_t allocations =
        allocations_during([&] { answered = twins.answering.try_taint(1, range, failure); });
    EXPECT_FALSE(answered) << failure.raw();
    EXPECT_EQ(allocations, 0u) << "a refusal allocates nothing";
    EXPECT_THROW(twins.throwing.taint(1, range, failure), std::logic_error) << failure.raw();
    expect_same(twins.answering, twins.throwing);
  }
  // An empty range is no claim: neither refuses, whatever the failure.
  EXPECT_TRUE(twins.answering.try_taint(1, ByteRange::of(6, 6), twins.pruned));
  EXPECT_NO_THROW(twins.throwing.taint(1, ByteRange::of(6, 6), twins.pruned));
  // A live failure: both taint, and alike (the claim splits allocation 0's).
  EXPECT_TRUE(twins.answering.try_taint(0, range, twins.live));
  EXPECT_TRUE(twins.answering.try_taint(1, range, twins.live));
  twins.throwing.taint(0, range, twins.live);
  twins.throwing.taint(1, range, twins.live);
  expect_same(twins.answering, twins.throwing);
  EXPECT_EQ(twins.answering.tags(twins.live), 2u);
}

TEST(EngineModelAnswers, G7_TrySkippedRefusesExactlyWhereSkippedThrowsAndChangesNothing) {
  Twins twins;
  const SkipRecord record{"k", AllocationId::from_raw(5), {AllocationId::from_raw(6)}};
  for (const FailureId failure : {twins.pruned, twins.unminted}) {
    EXPECT_FALSE(twins.answering.try_skipped(failure, record)) << failure.raw();
    EXPECT_THROW(twins.throwing.skipped(failure, record), std::logic_error) << failure.raw();
    expect_same(twins.answering, twins.throwing);
  }
  EXPECT_TRUE(twins.answering.try_skipped(twins.live, record));
  twins.throwing.skipped(twins.live, record);
  expect_same(twins.answering, twins.throwing);
  EXPECT_EQ(twins.answering.skips_recorded(twins.live), 3u);
}

TEST(EngineModelAnswers, G8_TryReportPathRefusesExactlyWhereReportPathThrowsElseWalksTheSame) {
  Twins twins;
  std::vector<const SkipRecord*> answered{nullptr};
  std::vector<const SkipRecord*> thrown;
  for (const FailureId failure : {twins.pruned, twins.unminted}) {
    EXPECT_EQ(twins.answering.try_report_path(failure, AllocationId::from_raw(5), answered),
              std::nullopt)
        << failure.raw();
    EXPECT_TRUE(answered.empty()) << "a refused walk leaves no path";
    EXPECT_THROW((void)twins.throwing.report_path(failure, AllocationId::from_raw(5), thrown),
                 std::logic_error)
        << failure.raw();
  }
  // Reads 5 (the chain back through both records to 3), 4 (one record) and
  // 1 (no record: the empty path): the same origin and the same records.
  for (const std::uint64_t read : {5u, 4u, 1u}) {
    const std::optional<AllocationId> origin =
        twins.answering.try_report_path(twins.live, AllocationId::from_raw(read), answered);
    ASSERT_TRUE(origin.has_value()) << read;
    EXPECT_EQ(*origin,
              twins.answering.report_path(twins.live, AllocationId::from_raw(read), thrown))
        << read;
    EXPECT_EQ(answered, thrown) << read;
  }
  EXPECT_EQ(answered.size(), 0u);
  EXPECT_EQ(*twins.answering.try_report_path(twins.live, AllocationId::from_raw(5), answered),
            AllocationId::from_raw(3));
  EXPECT_EQ(answered.size(), 2u);
}

TEST(EngineModelAnswers, T3_FailuresIntoAKeptListAreFailuresOwnersAndAllocateNothingOnceWarm) {
  // failures(allocation, range, into), which taint_fuzzer's query check
  // reads (issue 13, forty-third round): the owners failures() returns,
  // ascending and distinct, whatever the list held before; once the list
  // and the model's scratch have grown, no allocation.
  EngineModel model;
  model.add_allocation();
  const FailureId f = model.insert(Error::generic("f"));
  const FailureId g = model.insert(Error::generic("g"));
  const FailureId h = model.insert(Error::generic("h"));
  model.taint(0, ByteRange::of(0, 4), g);
  model.taint(0, ByteRange::of(4, 8), f);
  model.taint(0, ByteRange::of(8, 12), g);
  model.taint(0, ByteRange::of(20, 24), h);
  std::vector<FailureId> into{h, h, h, h, h};
  const std::vector<ByteRange> probes = {ByteRange::of(0, 64), ByteRange::of(2, 10),
                                         ByteRange::of(12, 20), ByteRange::of(21, 22),
                                         ByteRange::of(8, 9)};
  for (const ByteRange probe : probes) {
    model.failures(0, probe, into);
    EXPECT_EQ(into, model.failures(0, probe)) << probe.begin() << ".." << probe.end();
  }
  model.failures(0, ByteRange::of(0, 64), into);
  EXPECT_EQ(into, (std::vector<FailureId>{f, g, h}));
  model.failures(0, ByteRange::of(12, 20), into);
  EXPECT_TRUE(into.empty());
  EXPECT_EQ(allocations_during([&] {
              for (const ByteRange probe : probes) {
                model.failures(0, probe, into);
              }
            }),
            0u);
}

} // namespace
} // namespace taintpool
