// Device::exchange — the Device's half of a collective (C1-C5): a write
// scope whose reads are ordered but never checked, and whose body says which
// outputs it computed from stale bytes. See device/exchange.hpp for the rules
// in words; this file keeps them apart from the launch path in device.cpp,
// whose helpers (resolve_bindings, order, commit, run_body, tear_down, log_if_unconfirmed)
// it reuses unchanged.
#include <taintpool/device/device.hpp>
#include <taintpool/taint.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace taintpool {

namespace {

/// The error a failure of this exchange stores: named after it, like a
/// failed launch's (device.cpp names launches the same way).
Error named_after(std::string_view kernel, const Error& error) {
  std::string message(kernel);
  message += ": ";
  message += error.message().empty() ? std::string(name(error.kind())) : error.message();
  return Error(error.kind(), std::move(message));
}

/// `whole` less every range of `cut`, appended to `out` in ascending order.
/// Cut in place at the end of `out`, with no scratch vector: it used to
/// build a fresh list per range of `cut`, the exchange path's largest
/// allocation site (issue 13: 765 of 13,331 allocations of eight
/// collective_fuzzer inputs). Each cut replaces a piece by its left part
/// and appends its right part; the pieces stay disjoint (all are parts of
/// `whole`), so sorting them by their first byte at the end gives the
/// order the piece-by-piece rebuild kept. `out` grows only by the pieces
/// it returns, so a caller that reuses it allocates nothing once warm.
void append_rest(ByteRange whole, std::span<const ByteRange> cut, std::vector<ByteRange>& out) {
  const std::size_t first = out.size();
  out.push_back(whole);
  // Nothing cut out of it (the common case): the range itself.
  if (std::none_of(cut.begin(), cut.end(),
                   [&](const ByteRange taken) { return whole.overlaps(taken); })) {
    return;
  }
  for (const ByteRange taken : cut) {
    // Pieces appended for this cut lie past its end: only [first, last)
    // can overlap it.
    std::size_t last = out.size();
    for (std::size_t at = first; at < last;) {
      const ByteRange piece = out[at];
      if (!piece.overlaps(taken)) {
        ++at;
        continue;
      }
      const bool left = piece.begin() < taken.begin();
      const bool right = taken.end() < piece.end();
      if (left) {
        out[at] = ByteRange::of(piece.begin(), taken.begin());
        if (right) {
          out.push_back(ByteRange::of(taken.end(), piece.end()));
        }
        ++at;
      } else if (right) {
        out[at] = ByteRange::of(taken.end(), piece.end());
        ++at;
      } else {
        // Wholly cut: the last piece takes its place (and is looked at
        // next, if it is one this cut has not seen).
        out[at] = out.back();
        out.pop_back();
        last = std::min(last, out.size());
      }
    }
  }
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
            [](ByteRange a, ByteRange b) { return a.begin() < b.begin(); });
}

bool overlaps_any(const Binding& binding, std::span<const Binding> set) {
  return std::any_of(set.begin(), set.end(), [&](const Binding& held) {
    return held.allocation == binding.allocation && held.range.overlaps(binding.range);
  });
}

/// Removes `cut`'s bytes from `set`, splitting what it lands in. In place,
/// as append_rest cuts: a binding cut on the left keeps its slot, one cut
/// on the right appends its right part, one wholly cut takes the last
/// binding's slot. So `set` is unordered — its readers (overlaps_any and
/// the replay's appends) need no order — and grows only by the parts it
/// keeps: it used to build the whole set afresh per logged write.
void remove_bytes(std::vector<Binding>& set, const Binding& cut) {
  // Parts appended here lie past cut.end(): only [0, last) can overlap.
  std::size_t last = set.size();
  for (std::size_t at = 0; at < last;) {
    const Binding held = set[at];
    if (held.allocation != cut.allocation || !held.range.overlaps(cut.range)) {
      ++at;
      continue;
    }
    const bool left = held.range.begin() < cut.range.begin();
    const bool right = cut.range.end() < held.range.end();
    if (left) {
      set[at].range = ByteRange::of(held.range.begin(), cut.range.begin());
      if (right) {
        set.push_back({held.allocation, ByteRange::of(cut.range.end(), held.range.end())});
      }
      ++at;
    } else if (right) {
      set[at].range = ByteRange::of(cut.range.end(), held.range.end());
      ++at;
    } else {
      set[at] = set.back();
      set.pop_back();
      last = std::min(last, set.size());
    }
  }
}

} // namespace

LaunchResult Device::exchange_locked(std::uint32_t slot, std::string_view kernel,
                                     std::span<const Binding> reads,
                                     std::span<const Binding> writes, ExchangeBody body) {
  // As launch_locked, less the S1 check: every binding is checked before
  // anything is claimed (P3), and the launch gets its number.
  memory_.sweep();
  resolve_bindings(reads, writes, slot);
  released_.clear();
  named_only_ = false;
  named_.clear();
  const std::uint64_t launch = next_launch_++;

  // C1: no skip. C2: what the inputs hold, as known now, for the summary.
  collect_stale_inputs();
  struct Holds {
    explicit Holds(Device& owner) noexcept
        : device(owner) {}
    ~Holds() { device.drop_input_holds(); }
    Holds(const Holds&) = delete;
    Holds& operator=(const Holds&) = delete;
    Holds(Holds&&) = delete;
    Holds& operator=(Holds&&) = delete;
    Device& device;
  } const holds{*this};

  const bool ordering = ordering_active();
  if (ordering) {
    order(slot, launch);
  }
  LaunchResult result;
  try {
    result = enter_exchange(slot, launch, kernel, body);
  } catch (...) {
    StreamPoint work;
    if (ordering) {
      commit(slot, launch);
      work = StreamPoint{slot, streams_.order().tail(slot), launch};
    }
    log_if_unconfirmed(launch, kernel, reads, writes, LaunchStatus::Failed, work);
    throw;
  }
  StreamPoint work;
  if (ordering) {
    commit(slot, launch);
    work = StreamPoint{slot, streams_.order().tail(slot), launch};
    if (!hazards_.empty()) {
      taint_races(kernel, slot, launch, result);
    }
  }
  log_if_unconfirmed(launch, kernel, reads, writes, result.status, work);
  return result;
}

void Device::collect_stale_inputs() {
  stale_inputs_.clear();
  input_reports_used_ = 0; // The kept reports are refilled, not rebuilt.
  input_held_.clear();
  try {
    for (std::size_t index = 0; index < reads_.size(); ++index) {
      const ByteRange range = reads_[index].range;
      if (!read_taints_[index]->failure(range)) {
        continue; // The common path: one inline check per input.
      }
      const std::size_t first = stale_inputs_.size();
      read_taints_[index]->for_each_claim([&](FailureId failure, ByteRange claimed) {
        if (claimed.overlaps(range)) {
          const ByteRange bytes = claimed.intersect(range);
          stale_inputs_.push_back(StaleInput{
              static_cast<std::uint32_t>(index),
              ByteRange::of(bytes.begin() - range.begin(), bytes.end() - range.begin()), failure});
        }
      });
      std::sort(stale_inputs_.begin() + static_cast<std::ptrdiff_t>(first), stale_inputs_.end(),
                [](const StaleInput& a, const StaleInput& b) {
                  return a.range.begin() < b.range.begin();
                });
    }
    for (const StaleInput& stale : stale_inputs_) {
      const AllocationId input = reads_[stale.input].allocation;
      const auto done = input_reports_.begin() + static_cast<std::ptrdiff_t>(input_reports_used_);
      const bool reported = std::any_of(input_reports_.begin(), done, [&](const Report& report) {
        return report.failure == stale.failure && report.read == input;
      });
      if (!reported) {
        // A report kept from an earlier exchange is refilled in place (its
        // message, path records and lists keep their capacity: issue 13, a
        // fresh Report per stale input per exchange was a tenth of a traced
        // collective input's allocations); past them, a fresh one is kept.
        if (input_reports_used_ < input_reports_.size()) {
          graph_.report_into(stale.failure, input, input_reports_[input_reports_used_]);
        } else {
          input_reports_.push_back(graph_.report(stale.failure, input));
        }
        ++input_reports_used_;
      }
      if (std::find(input_held_.begin(), input_held_.end(), stale.failure) == input_held_.end()) {
        input_held_.push_back(stale.failure);
        graph_.tag(stale.failure); // Held: see the declaration.
      }
    }
  } catch (...) {
    drop_input_holds();
    throw;
  }
}

void Device::drop_input_holds() noexcept {
  for (const FailureId failure : input_held_) {
    graph_.untag(failure);
  }
  input_held_.clear();
}

void Device::check_exchange_outcome(const ExchangeOutcome& outcome) const {
  const auto fits = [&](std::uint32_t output, ByteRange range) {
    return output < writes_.size() && range.end() <= writes_[output].range.size();
  };
  for (const CarriedStale& carried : outcome.carried) {
    const bool given =
        std::any_of(stale_inputs_.begin(), stale_inputs_.end(), [&](const StaleInput& stale) {
          return stale.failure == carried.failure && stale.input == carried.input;
        });
    if (!fits(carried.output, carried.range) || !given) {
      throw std::logic_error("Device::exchange: the body says output " +
                             std::to_string(carried.output) + " bytes " + to_string(carried.range) +
                             " carry " + to_string(carried.failure) + " from input " +
                             std::to_string(carried.input) +
                             ", which is outside its outputs or not a failure of that input");
    }
  }
  for (const WrittenRange& fed : outcome.fed) {
    if (!fits(fed.output, fed.range)) {
      throw std::logic_error("Device::exchange: the body says output " +
                             std::to_string(fed.output) + " bytes " + to_string(fed.range) +
                             " were fed stale bytes, which is outside its outputs");
    }
  }
  if (!outcome.fed.empty() && !outcome.fed_error) {
    throw std::logic_error("Device::exchange: fed stale bytes without an error to carry");
  }
}

LaunchResult Device::enter_exchange(std::uint32_t slot, std::uint64_t launch,
                                    std::string_view kernel, ExchangeBody body) {
  const KernelContext context(launch, kernel, reads_, writes_, backend_data_, streams_.id(slot),
                              streams_.handle(slot));
  const ExchangeContext exchange(
      context, stale_inputs_, std::span<const Report>(input_reports_).first(input_reports_used_));
  ExchangeOutcome said;
  // Through the backend like any body, so a driver error it caused becomes
  // a failure (CudaBackend::run).
  auto run = [&](const KernelContext&) {
    said = body(exchange);
    return LaunchOutcome::success();
  };
  LaunchResult result;
  if (writes_.empty()) {
    // Nothing to claim (a send): a failure is only reported.
    const LaunchOutcome outcome = run_body(run, context);
    if (!outcome.ok()) {
      result.status = LaunchStatus::Failed;
      result.error = named_after(kernel, *outcome.error());
    }
    return result;
  }

  // S1: the provisional failure claims the whole write set.
  const FailureId provisional = graph_.insert_provisional();
  try {
    for (std::size_t index = 0; index < writes_.size(); ++index) {
      write_taints_[index]->taint(writes_[index].range, provisional, graph_);
    }
  } catch (...) {
    graph_.prune(provisional);
    throw;
  }
  const LaunchOutcome outcome = [&] {
    try {
      return run_body(run, context);
    } catch (...) {
      tear_down(provisional, kernel); // S3
      throw;
    }
  }();
  if (!outcome.ok()) {
    // The backend refused or failed the run: every output carries its error.
    Error error = named_after(kernel, *outcome.error());
    graph_.replace(provisional, error);
    graph_.prune(provisional);
    result.status = LaunchStatus::Failed;
    if (graph_.contains(provisional)) {
      result.failure = provisional;
    }
    result.error = std::move(error);
    return result;
  }

  // C4, while the provisional failure still claims every output byte, so
  // that running out of memory halfway leaves bytes torn down (stale), never
  // released by mistake: carried bytes take their input's failure, fed
  // bytes keep the provisional one under the fed error, the rest is
  // released.
  try {
    check_exchange_outcome(said);
    // Kept lists (members), emptied here: fresh ones per exchange were 7% of
    // a traced collective input's allocations (issue 13).
    std::vector<std::pair<FailureId, std::uint32_t>>& recorded = exchange_recorded_;
    recorded.clear();
    for (const CarriedStale& carried : said.carried) {
      const BoundBuffer& output = writes_[carried.output];
      write_taints_[carried.output]->taint(
          ByteRange::of(output.range.begin() + carried.range.begin(),
                        output.range.begin() + carried.range.end()),
          carried.failure, graph_);
      const std::pair<FailureId, std::uint32_t> key{carried.failure, carried.input};
      if (std::find(recorded.begin(), recorded.end(), key) == recorded.end()) {
        recorded.push_back(key);
      }
    }
    for (const auto& [failure, input] : recorded) {
      SkipRecord record{std::string(kernel), reads_[input].allocation, {}, true, true};
      for (const BoundBuffer& output : writes_) {
        if (std::find(record.produced.begin(), record.produced.end(), output.allocation) ==
            record.produced.end()) {
          record.produced.push_back(output.allocation);
        }
      }
      graph_.skipped(failure, std::move(record));
    }
    if (!said.fed.empty()) {
      graph_.replace(provisional, named_after(kernel, *said.fed_error));
    }
    // Released: every output byte neither carried nor fed, on any output
    // that aliases the same allocation.
    std::vector<ByteRange>& stale = exchange_stale_;
    std::vector<ByteRange>& clean = exchange_clean_;
    for (std::size_t index = 0; index < writes_.size(); ++index) {
      const BoundBuffer& output = writes_[index];
      stale.clear();
      const auto absolute = [&](std::uint32_t owner, ByteRange range) {
        const BoundBuffer& at = writes_[owner];
        return ByteRange::of(at.range.begin() + range.begin(), at.range.begin() + range.end());
      };
      for (const CarriedStale& carried : said.carried) {
        if (writes_[carried.output].allocation == output.allocation) {
          stale.push_back(absolute(carried.output, carried.range));
        }
      }
      for (const WrittenRange& fed : said.fed) {
        if (writes_[fed.output].allocation == output.allocation) {
          stale.push_back(absolute(fed.output, fed.range));
        }
      }
      if (stale.empty()) {
        write_taints_[index]->written(output.range, graph_); // The common case: no list.
        continue;
      }
      clean.clear();
      append_rest(output.range, stale, clean);
      for (const ByteRange bytes : clean) {
        write_taints_[index]->written(bytes, graph_);
      }
    }
  } catch (...) {
    graph_.prune(provisional);
    throw;
  }
  graph_.prune(provisional);
  return result;
}

bool Device::awaits_verdict_locked(std::span<const Binding> reads) {
  for (const Binding& read : reads) {
    static_cast<void>(memory_.resolve(read)); // Bad bindings throw, as for a launch.
  }
  if (log_.empty() || !backend_.oldest_unconfirmed_launch()) {
    return false; // Every launch is confirmed: nothing can turn stale late.
  }
  // The common case, a collective whose input nothing logged wrote (the
  // send buffer of a gradient bucket while earlier buckets are in flight):
  // one scan, no allocation.
  const bool written = std::any_of(log_.begin(), log_.end(), [&](const LoggedLaunch& entry) {
    return std::any_of(entry.writes.begin(), entry.writes.end(),
                       [&](const Binding& output) { return overlaps_any(output, reads); });
  });
  if (!written) {
    return false;
  }
  // The replay attribute() would make, for every unconfirmed launch at once:
  // an unconfirmed launch that ran may turn out to have written garbage; a
  // launch that ran on such bytes wrote garbage too; anything else that
  // wrote the bytes replaced them (with good data, or with its own failure).
  // A wrote_only launch (S6) wrote only the ranges it named: the rest of
  // its write set stays as suspect as it was.
  std::vector<Binding>& suspect = suspect_;
  suspect.clear();
  for (const LoggedLaunch& entry : log_) {
    const bool fed = std::any_of(entry.reads.begin(), entry.reads.end(),
                                 [&](const Binding& read) { return overlaps_any(read, suspect); });
    const std::vector<Binding>& covered = entry.covered();
    if (entry.status == LaunchStatus::Ran && (fed || backend_.unconfirmed(entry.launch))) {
      suspect.insert(suspect.end(), covered.begin(), covered.end());
      continue;
    }
    for (const Binding& output : covered) {
      remove_bytes(suspect, output);
    }
    if (fed) {
      suspect.insert(suspect.end(), entry.released.begin(), entry.released.end());
    }
  }
  return std::any_of(reads.begin(), reads.end(),
                     [&](const Binding& read) { return overlaps_any(read, suspect); });
}

} // namespace taintpool
