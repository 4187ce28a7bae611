// The device model's exchanges (C1-C5): a rank's half of a collective, one
// byte at a time, and the dependency question a collective asks first. See
// device_model.hpp; ranks_model.cpp works out the plans.
#include <taintpool/model/device_model.hpp>

#include <algorithm>
#include <limits>
#include <set>
#include <stdexcept>

namespace taintpool::model {

ModelLaunch DeviceModel::exchange(std::string_view kernel, std::span<const Binding> reads,
                                  std::span<const Binding> writes, const ExchangePlan& plan) {
  ModelLaunch out;
  discover();
  for (const auto* set : {&reads, &writes}) {
    for (const Binding& binding : *set) {
      if (const auto kind = check(binding)) {
        if (std::find(out.binding_errors.begin(), out.binding_errors.end(), *kind) ==
            out.binding_errors.end()) {
          out.binding_errors.push_back(*kind);
        }
      }
    }
  }
  if (!out.binding_errors.empty()) {
    return out;
  }
  const std::uint64_t launch = next_launch_++;
  // C1: no skip, whatever the reads hold.
  if (!writes.empty()) {
    // S1: a provisional failure is minted; it survives only as the fed
    // bytes' failure (G4: it takes the fed error).
    const std::uint64_t provisional = mint(Error::torn_down());
    // Each output's values copied whole, once both ends are checked (a
    // plan shorter than its output, or an output past its allocation, is
    // std::out_of_range as at() per byte made it).
    for (std::size_t index = 0; index < writes.size(); ++index) {
      const std::vector<std::optional<std::uint8_t>>& values = plan.values.at(index);
      const ByteRange range = writes[index].range;
      if (values.size() < range.size()) {
        throw std::out_of_range("model: an exchange plan shorter than its output");
      }
      std::copy_n(values.begin(), range.size(), values_in(writes[index]) + range.begin());
    }
    for (const Binding& output : writes) {
      set_writer(output, 0);
    }
    const Binding& first = writes.front();
    const auto in_output = [&](ByteRange range) {
      return Binding{first.allocation, ByteRange::of(first.range.begin() + range.begin(),
                                                     first.range.begin() + range.end())};
    };
    for (const auto& [range, failure] : plan.carried) {
      set_writer(in_output(range), failure.raw());
    }
    // One record per failure carried, in the order first carried: found by
    // looking back over the plan's few pieces (a list of them had been an
    // allocation per collective that carried any).
    for (auto piece = plan.carried.begin(); piece != plan.carried.end(); ++piece) {
      const FailureId failure = piece->second;
      if (std::any_of(plan.carried.begin(), piece,
                      [&](const auto& earlier) { return earlier.second == failure; })) {
        continue;
      }
      failures_.at(failure.raw())
          .records.push_back(SkipRecord{std::string(kernel), reads.front().allocation,
                                        distinct_writes(writes), true, true});
    }
    if (!plan.fed.empty()) {
      if (plan.deferred) {
        // The verdict lands late: the fed bytes read as written until the
        // next synchronize attributes it (C5).
        std::vector<WrittenRange> written;
        std::uint64_t at = 0;
        for (const ByteRange range : plan.fed) {
          if (at < range.begin()) {
            written.push_back(WrittenRange{0, ByteRange::of(at, range.begin())});
          }
          at = range.end();
        }
        if (at < first.range.size()) {
          written.push_back(WrittenRange{0, ByteRange::of(at, first.range.size())});
        }
        late_.push_back(Late{launch, *plan.fed_error, std::move(written)});
      } else {
        failures_.at(provisional).error = named_error(kernel, *plan.fed_error, 0);
        for (const ByteRange range : plan.fed) {
          set_writer(in_output(range), provisional);
        }
      }
    }
    bury();
  }
  if (plan.deferred) {
    require_rising(pending_exchanges_.empty() ? std::nullopt
                                              : std::optional(pending_exchanges_.back().launch),
                   launch, "pending_exchanges_");
    pending_exchanges_.push_back(PendingExchange{launch, !plan.fed.empty()});
  }
  log_entry(launch, kernel, LaunchStatus::Ran, reads, writes);
  out.result.status = LaunchStatus::Ran;
  return out;
}

std::vector<AllocationId> DeviceModel::distinct_writes(std::span<const Binding> writes) {
  std::vector<AllocationId> out;
  for (const Binding& binding : writes) {
    if (std::find(out.begin(), out.end(), binding.allocation) == out.end()) {
      out.push_back(binding.allocation);
    }
  }
  return out;
}

void DeviceModel::poll_exchanges() {
  std::size_t confirmed = 0;
  while (confirmed < pending_exchanges_.size() && !pending_exchanges_[confirmed].stale) {
    ++confirmed;
  }
  pending_exchanges_.erase(pending_exchanges_.begin(),
                           pending_exchanges_.begin() + static_cast<std::ptrdiff_t>(confirmed));
}

bool DeviceModel::awaits_verdict(std::span<const Binding> reads) const {
  // Launch numbers rise through log_, pending_exchanges_ and checked_ alike
  // (each appends as a launch or exchange ends, and none nests), so "is it
  // unconfirmed" is one comparison and a binary search, not a walk of both
  // lists per entry. And no byte is suspect before the first unconfirmed
  // entry (nothing before it is fed or unconfirmed): the replay starts
  // there, and a model with none answers at once — the common case, a
  // collective asking this of every contributing call (issue 13).
  constexpr std::uint64_t none = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t first_checked = checked_.empty() ? none : checked_.front();
  const std::uint64_t first = std::min(
      first_checked, pending_exchanges_.empty() ? none : pending_exchanges_.front().launch);
  if (first == none) {
    return false;
  }
  const auto unconfirmed = [&](std::uint64_t launch) {
    const auto pending = std::lower_bound(
        pending_exchanges_.begin(), pending_exchanges_.end(), launch,
        [](const PendingExchange& exchange, std::uint64_t at) { return exchange.launch < at; });
    return launch >= first_checked ||
           (pending != pending_exchanges_.end() && pending->launch == launch);
  };
  // Per byte: which bytes might still turn out stale, replayed launch by
  // launch since the last synchronize.
  Bytes& suspect = scratch_bytes_;
  suspect.clear();
  const auto from = std::find_if(log_.begin(), log_.end(),
                                 [&](const Logged& entry) { return entry.launch >= first; });
  for (const Logged& entry : std::span<const Logged>(from, log_.end())) {
    bool fed = false;
    for (const Binding& read : list_of(entry.reads)) {
      fed = fed || touches(suspect, read);
    }
    // S6: a wrote_only launch changed only the ranges it named.
    if (entry.status == LaunchStatus::Ran && (fed || unconfirmed(entry.launch))) {
      for (const Binding& output : covered(entry)) {
        add(suspect, output);
      }
      continue;
    }
    for (const Binding& output : covered(entry)) {
      remove(suspect, output);
    }
    if (fed) {
      for (const Binding& bytes : list_of(entry.released)) {
        add(suspect, bytes);
      }
    }
  }
  return std::any_of(reads.begin(), reads.end(),
                     [&](const Binding& read) { return touches(suspect, read); });
}

} // namespace taintpool::model
