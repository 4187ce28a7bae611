// Pins: on a tiny byte space, every operation sequence up to a fixed length
// leaves core and the reference model in the same observable state after
// every operation (T1–T6, G1–G9, R1–R3; see engine_harness.hpp for what is
// compared).
//
// Why: random testing samples; small-scope exhaustive testing covers. Most
// interval bugs (an off-by-one at a touching boundary, a split that keeps the
// wrong remnant, an untag skipped when two allocations share a failure, a
// node removed one release too early) show up on three or four bytes within
// four operations, so enumerating all of those sequences proves their absence
// at that scope. The enumeration replays each prefix on a fresh core and
// copies the model, so every sequence starts from the same empty state.
#include <taintpool/model/engine_model.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "engine_harness.hpp"

namespace taintpool::testing {
namespace {

struct Scope {
  std::uint64_t bytes;     ///< Offsets 0..bytes.
  std::size_t allocations; ///< Taints in the engine.
  std::size_t length;      ///< Longest sequence enumerated.
  std::vector<Op> alphabet;
};

bool touches_allocation(const Op& op) {
  return op.kind == OpKind::Taint || op.kind == OpKind::Written || op.kind == OpKind::Clear;
}

/// Allocations are interchangeable — nothing in the engine or the model
/// depends on a taint's index — so a sequence that touches allocation 1
/// before allocation 0 is the mirror image of one that does not, and only
/// the latter are enumerated.
bool mirrored(const Op& op, bool touched_first) {
  return touches_allocation(op) && op.allocation != 0 && !touched_first;
}

Op make(OpKind kind, std::size_t allocation = 0, ByteRange range = {}, std::uint64_t failure = 1,
        Error error = Error::torn_down()) {
  Op op;
  op.kind = kind;
  op.allocation = allocation;
  op.range = range;
  op.failure = failure;
  op.error = std::move(error);
  return op;
}

class Enumerator {
 public:
  explicit Enumerator(const Scope& scope)
      : scope_(scope)
      , probes_(all_ranges(scope.bytes)) {}

  /// Runs every sequence; returns how many were checked (each prefix counts).
  std::uint64_t run() {
    std::vector<Op> prefix;
    visit(prefix, make_model(scope_.allocations), false);
    return checked_;
  }

 private:
  void visit(std::vector<Op>& prefix, const model::EngineModel& model, bool touched_first) {
    for (const Op& op : scope_.alphabet) {
      if (failed_) {
        return;
      }
      if (mirrored(op, touched_first)) {
        continue;
      }
      CoreEngine core(scope_.allocations);
      for (const Op* earlier : effective_) {
        (void)apply(core, *earlier); // verified when that prefix was visited
      }
      model::EngineModel next = model;
      const Outcome model_outcome = apply(next, op);
      const Outcome core_outcome = apply(core, op);
      std::string difference = compare_outcomes(core_outcome, model_outcome);
      if (difference.empty()) {
        difference = first_difference(core, next, probes_, scope_.allocations);
      }
      ++checked_;
      prefix.push_back(op);
      if (!difference.empty()) {
        failed_ = true;
        ADD_FAILURE() << "core and model differ after:" << describe(prefix) << "\n" << difference;
        return;
      }
      if (prefix.size() < scope_.length) {
        // An op that threw changed nothing (checked above against the
        // model's snapshot), so replays skip it.
        if (!core_outcome.threw) {
          effective_.push_back(&op);
        }
        visit(prefix, next, touched_first || (touches_allocation(op) && op.allocation == 0));
        if (!core_outcome.threw) {
          effective_.pop_back();
        }
      }
      prefix.pop_back();
    }
  }

  const Scope& scope_;
  std::vector<ByteRange> probes_;
  std::vector<const Op*> effective_; ///< The prefix without the ops that threw.
  std::uint64_t checked_ = 0;
  bool failed_ = false;
};

/// The number of sequences of length 1..length over `alphabet` that are not
/// mirror images, counted directly from the alphabet (no engine involved).
std::uint64_t sequences(const std::vector<Op>& alphabet, std::size_t length,
                        bool touched_first = false) {
  if (length == 0) {
    return 0;
  }
  std::uint64_t total = 0;
  for (const Op& op : alphabet) {
    if (!mirrored(op, touched_first)) {
      total += 1 + sequences(alphabet, length - 1,
                             touched_first || (touches_allocation(op) && op.allocation == 0));
    }
  }
  return total;
}

/// Three bytes (every non-empty range: left, right, middle, whole, and each
/// touching pair), two allocations, two failures, and the operations that
/// move bytes and tags: insert, taint, written, clear, prune. Length 4.
Scope byte_algebra_scope() {
  Scope scope{3, 2, 4, {}};
  scope.alphabet.push_back(make(OpKind::Insert, 0, {}, 1, Error::launch("boom")));
  for (std::size_t allocation = 0; allocation < 2; ++allocation) {
    for (std::uint64_t begin = 0; begin < 3; ++begin) {
      for (std::uint64_t end = begin + 1; end <= 3; ++end) {
        for (std::uint64_t failure = 1; failure <= 2; ++failure) {
          scope.alphabet.push_back(
              make(OpKind::Taint, allocation, ByteRange::of(begin, end), failure));
        }
        scope.alphabet.push_back(make(OpKind::Written, allocation, ByteRange::of(begin, end)));
      }
    }
    scope.alphabet.push_back(make(OpKind::Clear, allocation));
  }
  for (std::uint64_t failure = 1; failure <= 2; ++failure) {
    scope.alphabet.push_back(make(OpKind::Prune, 0, {}, failure));
  }
  return scope;
}

/// Every operation of the engine: four bytes (ranges including empty ones),
/// two allocations, three failures, plus replace, skipped (one record) and
/// a TornDown insert beside a real one. Length 3.
Scope whole_engine_scope() {
  Scope scope{4, 2, 3, {}};
  scope.alphabet.push_back(make(OpKind::Insert, 0, {}, 1, Error::launch("boom")));
  scope.alphabet.push_back(make(OpKind::Insert, 0, {}, 1, Error::torn_down()));
  const std::vector<ByteRange> ranges{ByteRange::of(0, 4), ByteRange::of(0, 2), ByteRange::of(2, 4),
                                      ByteRange::of(1, 3), ByteRange::of(1, 2), ByteRange::of(3, 4),
                                      ByteRange::of(2, 2)};
  for (std::size_t allocation = 0; allocation < 2; ++allocation) {
    for (const ByteRange range : ranges) {
      for (std::uint64_t failure = 1; failure <= 3; ++failure) {
        scope.alphabet.push_back(make(OpKind::Taint, allocation, range, failure));
      }
      scope.alphabet.push_back(make(OpKind::Written, allocation, range));
    }
    scope.alphabet.push_back(make(OpKind::Clear, allocation));
  }
  for (std::uint64_t failure = 1; failure <= 3; ++failure) {
    scope.alphabet.push_back(make(OpKind::Prune, 0, {}, failure));
    scope.alphabet.push_back(
        make(OpKind::Replace, 0, {}, failure, Error::out_of_memory("replaced")));
    Op skipped = make(OpKind::Skipped, 0, {}, failure);
    skipped.skips.push_back({"linear", AllocationId::from_raw(1), {AllocationId::from_raw(2)}});
    scope.alphabet.push_back(skipped);
  }
  return scope;
}

TEST(EngineExhaustive, T1_T5_R1_EverySequenceOfFourOnThreeBytesMatchesTheModel) {
  const Scope scope = byte_algebra_scope();
  const auto started = std::chrono::steady_clock::now();
  const std::uint64_t checked = Enumerator(scope).run();
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started);
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(checked, sequences(scope.alphabet, scope.length))
      << "the enumeration must visit every sequence";
  RecordProperty("sequences", std::to_string(checked));
  RecordProperty("seconds", std::to_string(seconds.count()));
}

TEST(EngineExhaustive, T1_T6_G1_G9_R1_R3_EverySequenceOfThreeOverEveryOperationMatchesTheModel) {
  const Scope scope = whole_engine_scope();
  const std::uint64_t checked = Enumerator(scope).run();
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(checked, sequences(scope.alphabet, scope.length))
      << "the enumeration must visit every sequence";
  RecordProperty("sequences", std::to_string(checked));
}

} // namespace
} // namespace taintpool::testing
