// CollectiveBackend: forwards to the inner backend and adds the pending
// collectives' verdicts (collective_backend.hpp).
#include <taintpool/collective/collective_backend.hpp>

#include <algorithm>
#include <array>
#include <new>
#include <span>
#include <stdexcept>
#include <string>

namespace taintpool {

void CollectiveBackend::expect(std::uint64_t launch, VerdictSource& source) {
  // Launch numbers only grow, so pending_ stays sorted by launch: the
  // oldest is the front, and unconfirmed() is a binary search.
  if (!pending_.empty() && pending_.back().launch >= launch) {
    throw std::logic_error("CollectiveBackend::expect: launch " + std::to_string(launch) +
                           " after launch " + std::to_string(pending_.back().launch));
  }
  pending_.push_back(Pending{launch, &source});
}

void CollectiveBackend::poll() {
  // Oldest first, and no further than the first that has not landed clean:
  // calls on one stream land in order, so the rest have not landed either
  // (and anything left is confirmed by a later poll or the synchronize).
  // So a poll costs O(1) however many collectives are in flight.
  std::size_t confirmed = 0;
  while (confirmed < pending_.size() &&
         pending_[confirmed].source->landed_clean(pending_[confirmed].launch)) {
    ++confirmed;
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(confirmed));
}

void CollectiveBackend::forget(const VerdictSource& source) noexcept {
  std::erase_if(pending_, [&](const Pending& pending) { return pending.source == &source; });
}

void CollectiveBackend::wait_for_collectives() {
  // Each source once, in the order of its oldest pending launch. The
  // sources waited for are listed on the stack while they are few (a
  // Device has one Collectives, or a few), and past that in a vector: a
  // vector from the first was an allocation per copy, finish and
  // synchronize with a collective in flight (issue 13). A search per
  // pending launch over the sources met so far, as before.
  constexpr std::size_t kFew = 8;
  std::array<VerdictSource*, kFew> few{};
  std::size_t met = 0;
  std::vector<VerdictSource*> more;
  for (const Pending& pending : pending_) {
    const std::span<VerdictSource* const> listed(few.data(), met);
    if (std::find(listed.begin(), listed.end(), pending.source) != listed.end() ||
        std::find(more.begin(), more.end(), pending.source) != more.end()) {
      continue;
    }
    if (met < kFew) {
      few[met++] = pending.source;
    } else {
      more.push_back(pending.source);
    }
    pending.source->wait_all();
  }
}

LaunchOutcome CollectiveBackend::run(KernelBody body, const KernelContext& context) {
  if (!pending_.empty()) {
    poll(); // A landed, clean verdict stops the Device's log as early as possible.
  }
  return inner_.run(body, context);
}

std::optional<Error> CollectiveBackend::copy_in(StreamHandle stream, std::byte* to,
                                                const std::byte* from, std::size_t bytes) {
  wait_for_collectives();
  return inner_.copy_in(stream, to, from, bytes);
}

std::optional<Error> CollectiveBackend::copy_out(StreamHandle stream, std::byte* to,
                                                 const std::byte* from, std::size_t bytes) {
  wait_for_collectives();
  return inner_.copy_out(stream, to, from, bytes);
}

void CollectiveBackend::destroy_stream(StreamHandle stream) noexcept {
  try {
    wait_for_collectives();
  } catch (...) {
    // Out of memory listing the sources (past the few listed on the
    // stack), or a source's wait that threw: every wait is bounded anyway,
    // and the stream goes regardless.
  }
  inner_.destroy_stream(stream);
}

void CollectiveBackend::finish(StreamHandle stream) {
  wait_for_collectives();
  inner_.finish(stream);
}

std::vector<LateFailure> CollectiveBackend::synchronize() {
  wait_for_collectives();
  // Each verdict moves into held_ before its source forgets it, and held_
  // has room for every one before the first moves, so running out of
  // memory here loses nothing (all stay pending). Room for all at once:
  // made room for one at a time, held_ grew (and moved) once per verdict
  // (issue 13).
  held_.reserve(held_.size() + pending_.size());
  while (!pending_.empty()) {
    const Pending next = pending_.front();
    if (std::optional<LateFailure> verdict = next.source->verdict(next.launch)) {
      held_.push_back(std::move(*verdict));
    }
    pending_.erase(pending_.begin());
  }
  std::vector<LateFailure> late = inner_.synchronize();
  if (held_.empty()) {
    return late;
  }
  try {
    late.reserve(late.size() + held_.size());
  } catch (const std::bad_alloc&) {
    return late; // held_ goes with the next call, and stays unconfirmed until then.
  }
  for (LateFailure& verdict : held_) {
    late.push_back(std::move(verdict));
  }
  held_.clear();
  return late;
}

std::optional<std::uint64_t> CollectiveBackend::oldest_unconfirmed_launch() const noexcept {
  std::optional<std::uint64_t> oldest = inner_.oldest_unconfirmed_launch();
  const auto consider = [&](std::uint64_t launch) {
    if (!oldest || launch < *oldest) {
      oldest = launch;
    }
  };
  if (!pending_.empty()) {
    consider(pending_.front().launch);
  }
  for (const LateFailure& verdict : held_) {
    consider(verdict.launch);
  }
  return oldest;
}

bool CollectiveBackend::unconfirmed(std::uint64_t launch) const noexcept {
  const auto found = std::lower_bound(
      pending_.begin(), pending_.end(), launch,
      [](const Pending& pending, std::uint64_t wanted) { return pending.launch < wanted; });
  return (found != pending_.end() && found->launch == launch) ||
         std::any_of(held_.begin(), held_.end(),
                     [&](const LateFailure& verdict) { return verdict.launch == launch; }) ||
         inner_.unconfirmed(launch);
}

} // namespace taintpool
