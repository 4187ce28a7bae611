// Pins: a DeviceModel made with the lists another model gave up
// (DeviceModel::Room, take_room()) answers exactly as a fresh one — every
// list it takes over is emptied, so only capacity carries over — and a
// verdict handed back (recycle()) lends the next verdict its lists' room,
// never their contents.
//
// Why: device_fuzzer makes a model per input and now hands each one the
// last input's room, and hands every launch's and read's verdict back
// (issue 13, forty-seventh round: the lists grown from empty were some 20
// of an input's 130 heap allocations). A list kept but not emptied would
// make an input's expectations depend on the inputs before it — the
// fuzzer's checks would then pass or fail by history. Its own executable:
// it counts allocations with the replaced global operator new
// (testing/src/replace_new.cpp); no assertion macro runs inside a measured
// region.
#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/model/device_model.hpp>
#include <taintpool/testing/heap_allocations.hpp>
#include <taintpool/testing/planned_body.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace taintpool {
namespace {

using model::BodyKind;
using model::BodyPlan;
using model::DeviceModel;
using model::ModelLaunch;
using model::ModelRead;
using testing::allocations_during;

/// The model's whole observable state, as text: every allocation it holds
/// (size, claims, known bytes), every live failure (error, tags, skip
/// records), the next failure id and launch number.
std::string state_of(const DeviceModel& model) {
  std::string text;
  for (const AllocationId id : model.allocations()) {
    text += to_string(id) + " size " + std::to_string(model.size(id)) +
            (model.live(id) ? "" : " dropped") + " claims";
    for (const auto& [failure, range] : model.claims(id)) {
      text += " " + to_string(failure) + to_string(range);
    }
    text += " bytes";
    for (const std::optional<std::uint8_t>& byte : model.bytes(id)) {
      text += byte ? " " + std::to_string(*byte) : std::string(" ?");
    }
    text += "\n";
  }
  for (const FailureId failure : model.live_failures()) {
    text += to_string(failure) + " {" + to_string(*model.error(failure)) + "} tags " +
            std::to_string(model.tags(failure)) + " records";
    for (const SkipRecord& record : model.skip_records(failure)) {
      text += " " + record.kernel + (record.ran ? " ran " : " skipped ") + to_string(record.needed);
      for (const AllocationId produced : record.produced) {
        text += " " + to_string(produced);
      }
    }
    text += "\n";
  }
  return text + "next " + to_string(model.next_failure()) + " launch " +
         std::to_string(model.next_launch()) + "\n";
}

/// A launch's verdict, as text: every field the fuzzers compare.
std::string verdict_of(const ModelLaunch& verdict) {
  std::string text = "errors";
  for (const ErrorKind kind : verdict.binding_errors) {
    text += " " + std::string(name(kind));
  }
  text += verdict.body_threw ? " threw" : "";
  text += " status " + std::to_string(static_cast<int>(verdict.result.status));
  text += " failure " + (verdict.result.failure ? to_string(*verdict.result.failure) : "-");
  text += " needed " + (verdict.result.needed ? to_string(*verdict.result.needed) : "-");
  text += " error " + (verdict.result.error ? to_string(*verdict.result.error) : "-");
  text += " unwritten " + std::to_string(verdict.result.unwritten.size()) + " roots";
  for (const auto& [root, needed] : verdict.acceptable_roots) {
    text += " " + to_string(root) + "/" + to_string(needed);
  }
  return text + (verdict.choice_acceptable ? "" : " unacceptable") + " wording " +
         std::to_string(verdict.race_wording.size()) + "\n";
}

/// A read's verdict, as text.
std::string verdict_of(const ModelRead& verdict) {
  std::string text = "read errors";
  for (const ErrorKind kind : verdict.binding_errors) {
    text += " " + std::string(name(kind));
  }
  text += " reports";
  for (const Report& report : verdict.reports) {
    text += " " + to_string(report.failure) + " {" + to_string(report.root) + "} path " +
            std::to_string(report.path.size()) + " skips " + std::to_string(report.skips_recorded);
  }
  text += " bytes";
  for (const std::optional<std::uint8_t>& byte : verdict.bytes) {
    text += byte ? " " + std::to_string(*byte) : std::string(" ?");
  }
  return text + "\n";
}

/// A Device on a DeferredHostBackend and the model under test, side by
/// side, running one script; `log` gets every verdict and, after every
/// step, the model's state. `recycle`: hand every verdict back, as
/// device_fuzzer does.
class Script {
 public:
  Script(DeviceModel model, bool recycle)
      : oracle_(std::move(model))
      , recycle_(recycle) {
    oracle_.set_id_space(device_.memory().id_space());
  }

  /// Every kind of step the fuzzer takes: creates (one from bytes), runs,
  /// a failure with S2 ranges, a throw, a skip on a stale read, a refused
  /// binding, a host write, a late failure attributed at synchronize,
  /// reads (one refused, one of stale bytes), drops and a sweep. With
  /// `leave` it stops with handles held, a late failure pending and the
  /// log full — what a model gives its room up with mid-input.
  std::string run(bool leave = false) {
    std::vector<Allocation> held;
    for (const std::uint64_t size : {16u, 40u, 8u, 24u}) {
      held.push_back(device_.create_buffer(size));
      expect_same(held.back().id(), oracle_.create(size));
    }
    const std::vector<std::byte> seeded(12, std::byte{7});
    held.push_back(device_.create_buffer(seeded));
    expect_same(held.back().id(), oracle_.create(std::span<const std::byte>(seeded)));
    step();

    BodyPlan succeed;
    succeed.seed = 3;
    launch("fill", {held[4].whole()}, {held[0].whole()}, succeed);
    BodyPlan fail;
    fail.kind = BodyKind::fail;
    fail.error = Error::launch("a message long enough to live on the heap, past any buffer");
    fail.written = {WrittenRange{0, ByteRange::of(2, 6)}, WrittenRange{3, ByteRange::of(0, 1)}};
    launch("matmul", {held[0].whole()}, {held[1].whole()}, fail);
    BodyPlan throws;
    throws.kind = BodyKind::throws;
    throws.what = "a throw long enough to live on the heap as well";
    launch("gelu", {}, {held[2].whole()}, throws);
    launch("softmax", {held[1].whole(), held[2].whole()}, {held[3].whole()}, succeed); // Skip.
    launch("refused", {Binding{held[0].id(), ByteRange::of(0, 99)}}, {held[3].whole()}, succeed);
    if (leave) {
      BodyPlan late;
      late.kind = BodyKind::fail_late;
      late.error = Error::launch("late");
      launch("a_kernel_name_long_enough_for_the_heap", {held[0].whole()}, {held[4].whole()}, late);
      return log_; // Handles held, a late failure pending, the log full.
    }
    const std::vector<std::byte> bytes(24, std::byte{9});
    const LaunchResult written = device_.write(held[3].whole(), bytes);
    (void)written;
    keep(oracle_.write(held[3].whole(), bytes));
    BodyPlan late;
    late.kind = BodyKind::fail_late;
    late.error = Error::launch("late");
    late.written = {WrittenRange{0, ByteRange::of(0, 4)}};
    launch("a_kernel_name_long_enough_for_the_heap", {held[0].whole()}, {held[4].whole()}, late);
    device_.synchronize();
    oracle_.synchronize(false);
    step();

    std::vector<std::byte> into(16);
    (void)device_.read(held[0].whole(), into);
    keep(oracle_.read(held[0].whole(), into.size()));
    (void)device_.stale_reports(held[1].whole());
    keep(oracle_.stale_reports(held[1].whole()));
    keep(oracle_.read(Binding{held[2].id(), ByteRange::of(0, 9)}, 9)); // InvalidBinding.
    step();

    for (Allocation& allocation : held) {
      oracle_.drop_handle(allocation.id());
      allocation.reset();
    }
    device_.sweep();
    oracle_.sweep();
    step();
    return log_;
  }

  [[nodiscard]] DeviceModel::Room take_room() noexcept { return oracle_.take_room(); }

 private:
  void launch(std::string_view kernel, const std::vector<Binding>& reads,
              const std::vector<Binding>& writes, const BodyPlan& plan) {
    auto body = [&](const KernelContext& context) {
      return testing::run_planned_body(plan, context, backend_);
    };
    LaunchResult result;
    try {
      result = device_.launch(kernel, reads, writes, body);
    } catch (...) { // The verdict says whether it should have (compared below).
    }
    std::optional<std::pair<FailureId, AllocationId>> choice;
    if (result.status == LaunchStatus::Skipped && result.failure && result.needed) {
      choice.emplace(*result.failure, *result.needed);
    }
    keep(oracle_.launch(kernel, reads, writes, plan, choice));
    step();
  }

  template <class Verdict>
  void keep(Verdict verdict) {
    log_ += verdict_of(verdict);
    if (recycle_) {
      oracle_.recycle(std::move(verdict));
    }
  }

  /// The model agrees with the Device, and its state goes in the log.
  void step() {
    const std::optional<std::string> difference = oracle_.mismatch(device_);
    EXPECT_EQ(difference, std::nullopt);
    log_ += state_of(oracle_);
  }

  static void expect_same(AllocationId core, AllocationId model) { EXPECT_EQ(core, model); }

  DeferredHostBackend backend_;
  Device device_{backend_};
  DeviceModel oracle_;
  bool recycle_;
  std::string log_;
};

TEST(DeviceModelRoom, D1_S1_G7_AModelMadeWithAnotherModelsRoomAnswersAsAFreshOne) {
  const std::string fresh = Script(DeviceModel(), false).run();
  ASSERT_NE(fresh.find("skipped"), std::string::npos); // The script skips, fails, throws.

  // A room given up mid-input (handles held, a late failure pending, the
  // log and the failure table full), then one given up after a whole run
  // that handed every verdict back: each next model answers as a fresh one.
  // One Device at a time, so every one mints ids in space 0, as the fresh
  // run's did.
  DeviceModel::Room room;
  {
    Script first(DeviceModel(), true);
    (void)first.run(true);
    room = first.take_room();
  }
  for (int again = 0; again < 2; ++again) {
    Script next(DeviceModel(false, std::move(room)), true);
    EXPECT_EQ(next.run(), fresh);
    room = next.take_room();
  }
  // A room taken from a model that gave its own room up (nothing left in it).
  DeviceModel emptied(false, std::move(room));
  EXPECT_EQ(Script(DeviceModel(false, emptied.take_room()), true).run(), fresh);
}

TEST(DeviceModelRoom, D1_AModelMadeWithARoomAllocatesLessForTheSameWorkThanAFreshOne) {
  // The model alone (it needs no Device to predict): the same creates,
  // launches and read, once in a fresh model and once in one made with the
  // room the first gave up, each verdict handed back.
  const auto work = [](DeviceModel& model) {
    std::vector<AllocationId> ids;
    for (const std::uint64_t size : {16u, 40u, 8u, 24u}) {
      ids.push_back(model.create(size));
    }
    const std::vector<Binding> first{Binding{ids[0], ByteRange::of(0, 16)}};
    const std::vector<Binding> second{Binding{ids[1], ByteRange::of(0, 40)}};
    const std::vector<Binding> past_the_end{Binding{ids[2], ByteRange::of(0, 99)}};
    BodyPlan fail;
    fail.kind = BodyKind::fail;
    fail.error = Error::launch("boom");
    fail.written = {WrittenRange{0, ByteRange::of(2, 6)}};
    model.recycle(model.launch("k", {}, first, fail));
    const BodyPlan succeed;
    model.recycle(model.launch("k", first, second, succeed)); // Skipped.
    model.recycle(model.launch("k", past_the_end, {}, succeed));
    model.recycle(model.read(Binding{ids[3], ByteRange::of(0, 24)}, 24));
    for (const AllocationId id : ids) {
      model.drop_handle(id);
    }
    model.sweep();
  };
  std::optional<DeviceModel> first;
  const std::uint64_t fresh = allocations_during([&] {
    first.emplace();
    work(*first);
  });
  DeviceModel::Room room = first->take_room();
  first.reset();
  std::optional<DeviceModel> second;
  const std::uint64_t roomed = allocations_during([&] {
    second.emplace(false, std::move(room));
    work(*second);
  });
  // What is left is what the model keeps as state (the byte block, the
  // failures' errors and skip records), not its lists.
  EXPECT_LT(roomed, fresh);
  EXPECT_LE(roomed + 8, fresh) << "fresh " << fresh << ", with a room " << roomed;
}

} // namespace
} // namespace taintpool
