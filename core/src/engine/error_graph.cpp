#include <taintpool/error_graph.hpp>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>

#include "words.hpp"

namespace taintpool {

void ErrorGraph::retire_hot() {
  cold_.insert(std::move(hot_));
}

void ErrorGraph::clear() {
  // R4 first, so a refused clear leaves every node as it was.
  for_each([](FailureId failure, const Error&, std::uint64_t tags) {
    if (tags != 0) [[unlikely]] {
      throw_carried_clear(failure, tags);
    }
  });
  // Each slot destroyed and default-constructed again (id 0, no tags,
  // TornDown, no skip log), as on a fresh graph — the NeverWritten slot too,
  // which mint_never_written sets again on its first use. Not vacate(): it
  // may leave a message buffer's capacity behind.
  for (detail::FailureNode* slot : {&hot_, &resident_, &never_written_}) {
    std::destroy_at(slot);
    std::construct_at(slot);
  }
  cold_.clear();
  size_ = 0;
  next_id_ = 1;
  ++removals_; // Every skip log went (for_each_skip_record).
}

void ErrorGraph::materialize_provisional(FailureId reserved) {
  // The contract, checked before anything changes: the id is the newest
  // minted, has no node yet, and an inline slot is vacant for it.
  if (reserved.raw() + 1 != next_id_ || find(reserved.raw()) != nullptr ||
      (hot_.id != 0 && resident_.id != 0)) [[unlikely]] {
    throw std::logic_error("ErrorGraph::materialize_provisional: " + to_string(reserved) +
                           " is not a reserved id whose node may still be made (G1)");
  }
  detail::FailureNode& slot = hot_.id == 0 ? hot_ : resident_;
  slot.id = reserved.raw();
  slot.tags = 0; // A vacant slot holds TornDown already, as insert_provisional relies on.
  ++size_;
}

// The contract violations below write their words into one string reserved
// once (words.hpp's appends): the operator+ chains they replace built a
// temporary per piece, and taint_fuzzer provokes these on purpose a few
// times an input (issue 13, twenty-ninth round). 128 bytes hold the longest
// (a 20-digit id included); std::logic_error then copies the text once.
// tests/engine/refusal_text_test.cpp pins the words.
namespace {
constexpr std::size_t violation_capacity = 128;
} // namespace

void ErrorGraph::throw_missing(const char* operation, FailureId failure) {
  std::string text;
  text.reserve(violation_capacity);
  text += "ErrorGraph::";
  text += operation;
  text += ": ";
  words::append(text, failure);
  text += " has no node (R2: a claim or skip must point at a live failure)";
  throw std::logic_error(text);
}

void ErrorGraph::throw_bad_untag(FailureId failure, bool exists) {
  std::string text;
  text.reserve(violation_capacity);
  text += "ErrorGraph::untag: ";
  words::append(text, failure);
  text += exists ? " has no tags left (an untag without a matching tag)"
                 : " has no node (R2: untag of a failure no carrier holds)";
  throw std::logic_error(text);
}

void ErrorGraph::throw_changed_during_visit(FailureId failure) {
  throw std::logic_error("ErrorGraph::for_each_skip_record: the visitor removed a node while " +
                         to_string(failure) +
                         "'s records were visited (it must not change the graph; the records "
                         "may be gone)");
}

void ErrorGraph::throw_carried_clear(FailureId failure, std::uint64_t tags) {
  throw std::logic_error("ErrorGraph::clear: " + to_string(failure) + " still has " +
                         std::to_string(tags) +
                         " tag(s) (R4: clear only a graph that nothing carries)");
}

void ErrorGraph::throw_ids_exhausted() {
  throw std::overflow_error("ErrorGraph::insert: every 64-bit failure id has been used (G1)");
}

void ErrorGraph::skipped(FailureId root, SkipRecord&& record) {
  detail::FailureNode* node = find(root.raw());
  if (node == nullptr) {
    throw_missing("skipped", root);
  }
  if (node->skips == nullptr) {
    auto* log = new detail::SkipLog();
    try {
      log->ring.reserve(kept_skip_records);
    } catch (...) {
      delete log;
      throw;
    }
    node->skips = log;
  }
  detail::SkipLog& log = *node->skips;
  if (log.ring.size() < kept_skip_records) {
    log.ring.push_back(std::move(record));
  } else {
    log.ring[log.recorded % kept_skip_records] = std::move(record);
  }
  ++log.recorded;
}

void ErrorGraph::skipped(FailureId root, const SkipRecord& record) {
  detail::FailureNode* node = find(root.raw());
  if (node == nullptr) {
    throw_missing("skipped", root);
  }
  if (node->skips == nullptr || node->skips->ring.size() < kept_skip_records) {
    // A new slot: the copy is made before the log changes, then moved in.
    skipped(root, SkipRecord(record));
    return;
  }
  detail::SkipLog& log = *node->skips;
  SkipRecord& slot = log.ring[log.recorded % kept_skip_records];
  // Room first (a reserve never shrinks, and may throw with nothing
  // changed); then the assignment fits the slot's buffers and cannot throw.
  slot.kernel.reserve(record.kernel.size());
  slot.produced.reserve(record.produced.size());
  slot = record;
  ++log.recorded;
}

std::vector<SkipRecord> ErrorGraph::skip_records(FailureId failure) const {
  const detail::FailureNode* node = find(failure.raw());
  if (node == nullptr || node->skips == nullptr) {
    return {};
  }
  const detail::SkipLog& log = *node->skips;
  std::vector<SkipRecord> oldest_first(log.ring.begin(), log.ring.end());
  if (log.recorded > kept_skip_records) {
    // The ring's next write position holds the oldest kept record.
    const auto oldest = static_cast<std::ptrdiff_t>(log.recorded % kept_skip_records);
    std::rotate(oldest_first.begin(), oldest_first.begin() + oldest, oldest_first.end());
  }
  return oldest_first;
}

const detail::FailureNode& ErrorGraph::reported_node(FailureId failure) const {
  const detail::FailureNode* node = find(failure.raw());
  if (node == nullptr) {
    std::string text;
    text.reserve(violation_capacity);
    text += "ErrorGraph::report: ";
    words::append(text, failure);
    text += " has no node; only a live failure can explain a read (G8)";
    throw std::logic_error(text);
  }
  return *node;
}

Report ErrorGraph::report(FailureId failure, AllocationId read) const {
  const detail::FailureNode& node = reported_node(failure);
  // The root copied once, from the node: a placeholder root that the walk
  // then overwrote was one more Error built per fresh report (its message
  // an allocation; issue 13, twenty-second round).
  Report report{failure, node.error, read, std::nullopt, {}, read, 0, false};
  walk_into(failure, node, report);
  return report;
}

void ErrorGraph::report_into(FailureId failure, AllocationId read, Report& out) const {
  const detail::FailureNode& node = reported_node(failure);
  out.failure = failure;
  out.root = node.error; // Assigned: the message keeps out's capacity.
  out.read = read;
  out.stale.reset();
  out.origin = read;
  walk_into(failure, node, out);
}

void ErrorGraph::walk_into(FailureId failure, const detail::FailureNode& node, Report& out) const {
  out.skips_recorded = skips_recorded(failure);
  out.path_may_be_incomplete = out.skips_recorded > kept_skip_records;
  std::size_t steps = 0;
  if (node.skips != nullptr) {
    // The kept records in place, oldest first at logical index 0 (as
    // skip_records() orders its copy; no copy here: the walk reads a few).
    const detail::SkipLog& log = *node.skips;
    const std::size_t kept = log.ring.size();
    const std::size_t oldest =
        log.recorded > kept_skip_records ? static_cast<std::size_t>(log.recorded % kept) : 0;
    const auto record_at = [&](std::size_t at) -> const SkipRecord& {
      return log.ring[(oldest + at) % kept];
    };
    // Walk backwards: each step is the newest record, strictly older than
    // the last step, that produced the allocation we are explaining. Reads
    // at most kept_skip_records records.
    std::size_t older_than = kept;
    while (older_than > 0) {
      std::size_t found = older_than;
      for (std::size_t at = older_than; at-- > 0;) {
        const auto& produced = record_at(at).produced;
        if (std::find(produced.begin(), produced.end(), out.origin) != produced.end()) {
          found = at;
          break;
        }
      }
      if (found == older_than) {
        break;
      }
      if (steps < out.path.size()) {
        out.path[steps] = record_at(found); // In place: name and list keep capacity.
      } else {
        if (steps == 0) {
          // Every later step is strictly older than this one: the path
          // holds at most found + 1 records, so a fresh path is allocated
          // once here rather than regrown (1, 2, 4, 8, 16: up to five
          // allocations per report). No step, no allocation.
          out.path.reserve(found + 1);
        }
        out.path.push_back(record_at(found));
      }
      ++steps;
      out.origin = record_at(found).needed;
      older_than = found;
    }
  }
  // Cut to the walk's length; a longer path left by an earlier report goes.
  out.path.erase(out.path.begin() + static_cast<std::ptrdiff_t>(steps), out.path.end());
}

std::vector<Report>
ErrorGraph::reports(std::span<const std::pair<FailureId, AllocationId>> claims) const {
  std::vector<Report> out;
  for (const auto& claim : claims) {
    const bool seen = std::any_of(out.begin(), out.end(),
                                  [&](const Report& done) { return done.failure == claim.first; });
    if (!seen) {
      out.push_back(report(claim.first, claim.second));
    }
  }
  return out;
}

void ErrorGraph::check_invariants() const {
  cold_.check_invariants("ErrorGraph failure table");
  const std::size_t live = cold_.size() + (hot_.id != 0 ? 1 : 0) + (resident_.id != 0 ? 1 : 0) +
                           (never_written_.id != 0 ? 1 : 0);
  if (live != size_) {
    throw std::logic_error("ErrorGraph: size() is " + std::to_string(size_) + " but " +
                           std::to_string(live) + " nodes are live");
  }
  auto check_node = [&](const detail::FailureNode& node) {
    if (node.id >= next_id_) {
      throw std::logic_error("ErrorGraph: failure " + std::to_string(node.id) +
                             " was never minted (G1: next id is " + std::to_string(next_id_) + ")");
    }
    if (node.skips != nullptr) {
      const auto kept = node.skips->ring.size();
      const auto expected = std::min<std::uint64_t>(node.skips->recorded, kept_skip_records);
      if (kept != expected) {
        throw std::logic_error("ErrorGraph: failure " + std::to_string(node.id) + " keeps " +
                               std::to_string(kept) + " skip records, expected " +
                               std::to_string(expected) + " (G7)");
      }
    }
  };
  if (hot_.id != 0) {
    check_node(hot_);
  }
  if (resident_.id != 0) {
    check_node(resident_);
  }
  if (never_written_.id != 0) {
    check_node(never_written_);
  }
  // G1: an id names one node. The table holds each id once; a slot's id
  // must be neither the other slot's nor in the table.
  auto check_once = [&](const detail::FailureNode& slot, const detail::FailureNode& other,
                        const detail::FailureNode& third) {
    if (slot.id != 0 &&
        (slot.id == other.id || slot.id == third.id || cold_.find(slot.id) != nullptr)) {
      throw std::logic_error("ErrorGraph: failure " + std::to_string(slot.id) +
                             " is held by two nodes (G1: ids are never reused)");
    }
  };
  check_once(hot_, resident_, never_written_);
  check_once(resident_, hot_, never_written_);
  check_once(never_written_, hot_, resident_);
  cold_.for_each(check_node);
}

} // namespace taintpool
