// The engine harness (see engine_harness.hpp): ops, their application to core
// and model, and the observable-state comparison.
#include "engine_harness.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace taintpool::testing {

namespace {

const char* kind_name(OpKind kind) {
  switch (kind) {
  case OpKind::Insert:
    return "insert";
  case OpKind::Taint:
    return "taint";
  case OpKind::Written:
    return "written";
  case OpKind::Clear:
    return "clear";
  case OpKind::Replace:
    return "replace";
  case OpKind::Prune:
    return "prune";
  case OpKind::Skipped:
    return "skipped";
  }
  return "?";
}

template <class Fn>
Outcome guarded(Fn&& fn) {
  Outcome outcome;
  try {
    fn(outcome);
  } catch (const std::logic_error& error) {
    outcome.threw = true;
    outcome.what = error.what();
  }
  return outcome;
}

std::string show(const Claims& claims) {
  std::ostringstream out;
  out << "{";
  for (const auto& [failure, range] : claims) {
    out << " " << failure.raw() << ":" << range;
  }
  out << " }";
  return out.str();
}

std::string show(const std::vector<FailureId>& ids) {
  std::ostringstream out;
  out << "{";
  for (FailureId id : ids) {
    out << " " << id.raw();
  }
  out << " }";
  return out.str();
}

std::string show(const Report& report) {
  std::ostringstream out;
  PrintTo(report, &out);
  return out.str();
}

} // namespace

std::string describe(const Op& op) {
  std::ostringstream out;
  out << kind_name(op.kind);
  switch (op.kind) {
  case OpKind::Insert:
    out << "(" << op.error << ")";
    break;
  case OpKind::Taint:
    out << "(alloc " << op.allocation << ", " << op.range << ", failure " << op.failure << ")";
    break;
  case OpKind::Written:
    out << "(alloc " << op.allocation << ", " << op.range << ")";
    break;
  case OpKind::Clear:
    out << "(alloc " << op.allocation << ")";
    break;
  case OpKind::Replace:
    out << "(failure " << op.failure << ", " << op.error << ")";
    break;
  case OpKind::Prune:
    out << "(failure " << op.failure << ")";
    break;
  case OpKind::Skipped:
    out << "(failure " << op.failure << ", " << op.skips.size() << " records:";
    for (const SkipRecord& record : op.skips) {
      out << " ";
      PrintTo(record, &out);
    }
    out << ")";
    break;
  }
  return out.str();
}

std::string describe(std::span<const Op> ops) {
  std::string text;
  for (const Op& op : ops) {
    text += "\n  " + describe(op);
  }
  return text;
}

CoreEngine::CoreEngine(std::size_t allocations) {
  taints.resize(allocations);
}

CoreEngine::~CoreEngine() {
  for (Taint& taint : taints) {
    taint.clear(graph);
  }
}

model::EngineModel make_model(std::size_t allocations) {
  model::EngineModel model;
  for (std::size_t at = 0; at < allocations; ++at) {
    model.add_allocation();
  }
  return model;
}

Outcome apply(CoreEngine& core, const Op& op) {
  return guarded([&](Outcome& outcome) {
    const FailureId failure = FailureId::from_raw(op.failure);
    switch (op.kind) {
    case OpKind::Insert:
      outcome.minted = core.graph.insert(op.error);
      break;
    case OpKind::Taint:
      core.taints.at(op.allocation).taint(op.range, failure, core.graph);
      break;
    case OpKind::Written:
      core.taints.at(op.allocation).written(op.range, core.graph);
      break;
    case OpKind::Clear:
      core.taints.at(op.allocation).clear(core.graph);
      break;
    case OpKind::Replace:
      core.graph.replace(failure, op.error);
      break;
    case OpKind::Prune:
      core.graph.prune(failure);
      break;
    case OpKind::Skipped:
      for (const SkipRecord& record : op.skips) {
        core.graph.skipped(failure, record);
      }
      break;
    }
  });
}

Outcome apply(model::EngineModel& model, const Op& op) {
  return guarded([&](Outcome& outcome) {
    const FailureId failure = FailureId::from_raw(op.failure);
    switch (op.kind) {
    case OpKind::Insert:
      outcome.minted = model.insert(op.error);
      break;
    case OpKind::Taint:
      model.taint(op.allocation, op.range, failure);
      break;
    case OpKind::Written:
      model.written(op.allocation, op.range);
      break;
    case OpKind::Clear:
      model.clear(op.allocation);
      break;
    case OpKind::Replace:
      model.replace(failure, op.error);
      break;
    case OpKind::Prune:
      model.prune(failure);
      break;
    case OpKind::Skipped:
      for (const SkipRecord& record : op.skips) {
        model.skipped(failure, record);
      }
      break;
    }
  });
}

std::string compare_outcomes(const Outcome& core, const Outcome& model) {
  if (core.threw != model.threw) {
    return core.threw ? "core threw (" + core.what + ") and the model did not"
                      : "the model threw (" + model.what + ") and core did not";
  }
  if (core.minted != model.minted) {
    return "core minted " + (core.minted ? to_string(*core.minted) : std::string("nothing")) +
           ", the model " + (model.minted ? to_string(*model.minted) : std::string("nothing"));
  }
  return {};
}

std::vector<ByteRange> all_ranges(std::uint64_t bytes) {
  std::vector<ByteRange> ranges;
  for (std::uint64_t begin = 0; begin <= bytes; ++begin) {
    for (std::uint64_t end = begin; end <= bytes; ++end) {
      ranges.push_back(ByteRange::of(begin, end));
    }
  }
  return ranges;
}

std::vector<ByteRange> boundary_probes(const CoreEngine& core, const model::EngineModel& model) {
  std::set<std::uint64_t> points{0, UINT64_MAX};
  auto add = [&](std::uint64_t point) {
    points.insert(point);
    if (point > 0) {
      points.insert(point - 1);
    }
    if (point < UINT64_MAX) {
      points.insert(point + 1);
    }
  };
  for (const Taint& taint : core.taints) {
    taint.for_each_claim([&](FailureId, ByteRange range) {
      add(range.begin());
      add(range.end());
    });
  }
  for (std::size_t at = 0; at < model.allocations(); ++at) {
    for (const auto& [failure, range] : model.claims(at)) {
      add(range.begin());
      add(range.end());
    }
  }
  const std::vector<std::uint64_t> sorted(points.begin(), points.end());
  std::vector<ByteRange> probes;
  for (std::size_t a = 0; a < sorted.size(); ++a) {
    probes.push_back(ByteRange::of(sorted[a], sorted[a])); // empty, at every boundary
    // Every span between boundaries when there are few, else the short ones.
    const std::size_t reach = sorted.size() <= 24 ? sorted.size() : a + 4;
    for (std::size_t b = a + 1; b < std::min(reach, sorted.size()); ++b) {
      probes.push_back(ByteRange::of(sorted[a], sorted[b]));
    }
  }
  return probes;
}

std::string first_difference(const CoreEngine& core, const model::EngineModel& model,
                             std::span<const ByteRange> probes, std::uint64_t report_allocations) {
  // Core's own shape checks (T5, T6, G-invariants, R1-R3).
  std::vector<FailureId> held; // R3: live nodes no carrier holds, as the model sees them
  for (FailureId id : model.live_failures()) {
    if (model.tags(id) == 0) {
      held.push_back(id);
    }
  }
  std::vector<const Taint*> carriers;
  for (const Taint& taint : core.taints) {
    carriers.push_back(&taint);
  }
  try {
    core.graph.check_invariants();
    for (const Taint& taint : core.taints) {
      taint.check_invariants();
    }
    check_refcounts(core.graph, carriers, held);
  } catch (const std::logic_error& error) {
    return std::string("core invariant: ") + error.what();
  }

  if (core.graph.size() != model.size()) {
    return "graph size " + std::to_string(core.graph.size()) + ", model " +
           std::to_string(model.size());
  }
  if (core.graph.next_id() != model.next_id()) {
    return "next id " + to_string(core.graph.next_id()) + ", model " + to_string(model.next_id());
  }
  if (core.graph.empty() != (model.size() == 0)) {
    return "graph empty() disagrees with size";
  }

  // Every id ever minted: liveness, error, tags, skips, reports (G1-G9, R1).
  for (std::uint64_t raw = 1; raw < model.next_id().raw(); ++raw) {
    const FailureId id = FailureId::from_raw(raw);
    const std::string name = to_string(id);
    if (core.graph.contains(id) != model.live(id)) {
      return name + ": core contains() " + std::to_string(core.graph.contains(id)) +
             ", model live " + std::to_string(model.live(id));
    }
    const Error* core_error = core.graph.error(id);
    const Error* model_error = model.error(id);
    // The model's one-lookup view (what taint_fuzzer compares after every
    // op) answers as its separate accessors do: the same error object, or
    // none exactly when not live, and the same skip count.
    const model::EngineModel::FailureView view = model.view(id);
    if (view.error != model_error || view.skips != model.skips_recorded(id)) {
      return name + ": the model's view() disagrees with its error() or skips_recorded()";
    }
    if ((core_error == nullptr) != (model_error == nullptr) ||
        (core_error != nullptr && *core_error != *model_error)) {
      return name + ": errors differ";
    }
    if (core.graph.tags(id) != model.tags(id)) {
      return name + ": core has " + std::to_string(core.graph.tags(id)) + " tags, model " +
             std::to_string(model.tags(id));
    }
    if (core.graph.skips_recorded(id) != model.skips_recorded(id)) {
      return name + ": skip counts differ";
    }
    if (core.graph.skip_records(id) != model.skip_records(id)) {
      return name + ": kept skip records differ";
    }
    if (model.live(id)) {
      for (std::uint64_t read = 1; read <= report_allocations; ++read) {
        const AllocationId allocation = AllocationId::from_raw(read);
        const Report core_report = core.graph.report(id, allocation);
        const Report model_report = model.report(id, allocation);
        if (core_report != model_report) {
          return name + ": report for " + to_string(allocation) + " differs:\n  core  " +
                 show(core_report) + "\n  model " + show(model_report);
        }
      }
    }
  }

  // Every allocation's claims, and queries over the probes (T1-T6).
  std::vector<std::pair<FailureId, AllocationId>> read_claims;
  for (std::size_t at = 0; at < core.taints.size(); ++at) {
    const Taint& taint = core.taints[at];
    const std::string where = "allocation index " + std::to_string(at);
    const Claims core_claims = claims_of(taint);
    const Claims model_claims = model.claims(at);
    if (core_claims != model_claims) {
      return where + ": claims differ: core " + show(core_claims) + ", model " + show(model_claims);
    }
    std::vector<FailureId> owners = model.failures(at, ByteRange::of(0, UINT64_MAX));
    if (taint.is_clean() != model_claims.empty()) {
      return where + ": is_clean() is " + std::to_string(taint.is_clean());
    }
    if (taint.claim_count() != owners.size()) {
      return where + ": claim_count() " + std::to_string(taint.claim_count()) + ", model " +
             std::to_string(owners.size());
    }
    if (Taint::inline_claims && taint.is_spilled() != (model_claims.size() > 1)) {
      return where + ": is_spilled() is " + std::to_string(taint.is_spilled()) + " with " +
             std::to_string(model_claims.size()) + " claimed ranges (T6)";
    }
    for (std::uint64_t raw = 1; raw < model.next_id().raw(); ++raw) {
      const FailureId id = FailureId::from_raw(raw);
      const bool owned = std::find(owners.begin(), owners.end(), id) != owners.end();
      if (taint.carries(id) != owned) {
        return where + ": carries(" + to_string(id) + ") is " + std::to_string(taint.carries(id));
      }
    }
    for (const ByteRange probe : probes) {
      const std::vector<FailureId> expected = model.failures(at, probe);
      const std::vector<FailureId> got = taint.failures(probe);
      if (got != expected) {
        return where + ": failures(" + to_string(probe) + ") core " + show(got) + ", model " +
               show(expected);
      }
      const std::optional<FailureId> one = taint.failure(probe);
      const bool one_ok = one ? std::find(expected.begin(), expected.end(), *one) != expected.end()
                              : expected.empty();
      if (!one_ok) {
        return where + ": failure(" + to_string(probe) + ") names " +
               (one ? to_string(*one) : std::string("none")) + ", model owners " + show(expected);
      }
    }
    for (const auto& [failure, range] : core_claims) {
      read_claims.emplace_back(failure, AllocationId::from_raw(at + 1));
    }
  }

  // G9 over every claim: one report per distinct failure, first-seen order.
  std::vector<Report> expected_reports;
  for (const auto& claim : read_claims) {
    const bool seen = std::any_of(expected_reports.begin(), expected_reports.end(),
                                  [&](const Report& done) { return done.failure == claim.first; });
    if (!seen) {
      expected_reports.push_back(model.report(claim.first, claim.second));
    }
  }
  if (core.graph.reports(read_claims) != expected_reports) {
    return "reports() over every claim differs from one model report per failure";
  }
  return {};
}

} // namespace taintpool::testing
