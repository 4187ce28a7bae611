// The device model's exchanges (C1-C5): a rank's half of a collective, one
// byte at a time, and the dependency question a collective asks first. See
// device_model.hpp; ranks_model.cpp works out the plans.
#include <taintpool/model/device_model.hpp>

#include <algorithm>
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
    for (std::size_t index = 0; index < writes.size(); ++index) {
      Allocation& allocation = allocations_.at(index_of(writes[index].allocation));
      for (std::uint64_t at = 0; at < writes[index].range.size(); ++at) {
        allocation.value.at(writes[index].range.begin() + at) = plan.values.at(index).at(at);
      }
    }
    for (const Binding& output : writes) {
      set_writer(output, 0);
    }
    const Binding& first = writes.front();
    const auto in_output = [&](ByteRange range) {
      return Binding{first.allocation, ByteRange::of(first.range.begin() + range.begin(),
                                                     first.range.begin() + range.end())};
    };
    std::vector<std::uint64_t> recorded;
    for (const auto& [range, failure] : plan.carried) {
      set_writer(in_output(range), failure.raw());
      if (std::find(recorded.begin(), recorded.end(), failure.raw()) == recorded.end()) {
        recorded.push_back(failure.raw());
      }
    }
    for (const std::uint64_t failure : recorded) {
      failures_.at(failure).records.push_back(SkipRecord{
          std::string(kernel), reads.front().allocation, distinct_writes(writes), true, true});
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
  const auto unconfirmed = [&](std::uint64_t launch) {
    return std::any_of(pending_exchanges_.begin(), pending_exchanges_.end(),
                       [&](const PendingExchange& pending) { return pending.launch == launch; }) ||
           std::any_of(checked_.begin(), checked_.end(),
                       [&](std::uint64_t checked) { return checked <= launch; });
  };
  // Per byte: which bytes might still turn out stale, replayed launch by
  // launch since the last synchronize.
  Bytes suspect;
  for (const Logged& entry : log_) {
    bool fed = false;
    for (const Binding& read : entry.reads) {
      fed = fed || touches(suspect, read);
    }
    // S6: a wrote_only launch changed only the ranges it named.
    if (entry.status == LaunchStatus::Ran && (fed || unconfirmed(entry.launch))) {
      for (const Binding& output : entry.covered()) {
        add(suspect, output);
      }
      continue;
    }
    for (const Binding& output : entry.covered()) {
      remove(suspect, output);
    }
    if (fed) {
      for (const Binding& bytes : entry.released) {
        add(suspect, bytes);
      }
    }
  }
  return std::any_of(reads.begin(), reads.end(),
                     [&](const Binding& read) { return touches(suspect, read); });
}

} // namespace taintpool::model
