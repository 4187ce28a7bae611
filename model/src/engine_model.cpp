#include <taintpool/model/engine_model.hpp>

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace taintpool::model {

namespace {
/// The model's refusals: a contract violation, in fixed words. The fuzzer
/// provokes them on purpose several times per input and compares only how
/// an op ended (std::logic_error against core's), and the op it printed on
/// a mismatch names the failure; a message built per refusal (to_string
/// and two concatenations) was three allocations each under the
/// sanitizers (issue 13, twenty-fourth round).
[[noreturn]] void refuse(const char* why) {
  throw std::logic_error(why);
}
} // namespace

std::size_t EngineModel::add_allocation() {
  if (spares_.empty()) {
    bytes_.emplace_back();
  } else {
    bytes_.push_back(std::move(spares_.back())); // Empty: restart() cleared it.
    spares_.pop_back();
  }
  return bytes_.size() - 1;
}

void EngineModel::restart() {
  // Last map first, so add_allocation() hands out allocation 0's map first,
  // then 1's ...: allocation i gets the buffers the last input's allocation
  // i grew. A map handed out with less capacity than it then needs mallocs
  // without a free, which libFuzzer takes for a possible leak: it runs the
  // input again and does a whole leak check.
  for (auto allocation = bytes_.rbegin(); allocation != bytes_.rend(); ++allocation) {
    allocation->reset();
    spares_.push_back(std::move(*allocation));
  }
  bytes_.clear();
  minted_ = 0; // The slots stay, as spares insert() copies into.
  owners_before_.clear();
}

void EngineModel::reset() {
  for (OwnerMap& allocation : bytes_) {
    allocation.reset();
  }
  minted_ = 0; // The slots stay, as spares insert() copies into.
  owners_before_.clear();
}

FailureId EngineModel::insert(const Error& error) {
  if (minted_ < failures_.size()) {
    // A slot an earlier input (before reset or restart) left: copied into,
    // its message's buffer and its records kept.
    Failure& slot = failures_[minted_];
    slot.error = error;
    slot.live = true;
    slot.recorded = 0;
  } else {
    failures_.push_back(Failure{error, true, {}, 0});
  }
  ++minted_;
  return FailureId::from_raw(minted_);
}

const EngineModel::Failure* EngineModel::find_live(FailureId failure) const {
  if (failure.raw() > minted_) {
    return nullptr;
  }
  const Failure& found = failures_[failure.raw() - 1];
  return found.live ? &found : nullptr;
}

void EngineModel::bury(const std::vector<std::uint64_t>& owners) {
  for (const std::uint64_t owner : owners) {
    const FailureId failure = FailureId::from_raw(owner);
    if (live(failure) && tags(failure) == 0) {
      failures_[owner - 1].live = false;
      failures_[owner - 1].recorded = 0;
    }
  }
}

void EngineModel::taint(std::size_t allocation, ByteRange range, FailureId failure) {
  if (!try_taint(allocation, range, failure)) {
    refuse("model: taint with a failure that is not live (R2)");
  }
}

bool EngineModel::try_taint(std::size_t allocation, ByteRange range, FailureId failure) {
  if (range.empty()) {
    return true;
  }
  if (find_live(failure) == nullptr) {
    return false;
  }
  bytes_.at(allocation).owners(owners_before_);
  bytes_.at(allocation).assign(range.begin(), range.end(), failure.raw());
  bury(owners_before_);
  return true;
}

void EngineModel::written(std::size_t allocation, ByteRange range) {
  bytes_.at(allocation).owners(owners_before_);
  bytes_.at(allocation).assign(range.begin(), range.end(), 0);
  bury(owners_before_);
}

void EngineModel::clear(std::size_t allocation) {
  bytes_.at(allocation).owners(owners_before_);
  bytes_.at(allocation).reset();
  bury(owners_before_);
}

void EngineModel::replace(FailureId failure, Error error) {
  if (find_live(failure) != nullptr) {
    failures_[failure.raw() - 1].error = std::move(error);
  }
}

void EngineModel::prune(FailureId failure) {
  if (find_live(failure) != nullptr && tags(failure) == 0) {
    failures_[failure.raw() - 1].live = false;
    failures_[failure.raw() - 1].recorded = 0;
  }
}

void EngineModel::skipped(FailureId root, const SkipRecord& record) {
  if (!try_skipped(root, record)) {
    refuse("model: skip recorded on a failure that is not live (G7)");
  }
}

bool EngineModel::try_skipped(FailureId root, const SkipRecord& record) {
  if (find_live(root) == nullptr) {
    return false;
  }
  Failure& found = failures_[root.raw() - 1];
  if (found.recorded < found.records.size()) {
    found.records[found.recorded] = record; // A spare: its kernel and produced buffers kept.
  } else {
    found.records.push_back(record);
  }
  ++found.recorded;
  return true;
}

std::vector<FailureId> EngineModel::failures(std::size_t allocation, ByteRange range) const {
  std::vector<FailureId> found;
  failures(allocation, range, found);
  return found;
}

void EngineModel::failures(std::size_t allocation, ByteRange range,
                           std::vector<FailureId>& into) const {
  bytes_.at(allocation).owners_in(range.begin(), range.end(), owners_in_);
  into.clear();
  for (const std::uint64_t owner : owners_in_) {
    into.push_back(FailureId::from_raw(owner));
  }
}

std::vector<std::pair<FailureId, ByteRange>> EngineModel::claims(std::size_t allocation) const {
  std::vector<std::pair<FailureId, ByteRange>> found;
  for (const OwnedRun& run : bytes_.at(allocation).runs()) {
    found.emplace_back(FailureId::from_raw(run.owner), ByteRange::of(run.begin, run.end));
  }
  return found;
}

bool EngineModel::live(FailureId failure) const {
  return find_live(failure) != nullptr;
}

const Error* EngineModel::error(FailureId failure) const {
  const Failure* found = find_live(failure);
  return found != nullptr ? &found->error : nullptr;
}

std::uint64_t EngineModel::tags(FailureId failure) const {
  if (!live(failure)) {
    return 0;
  }
  std::uint64_t carriers = 0;
  for (const OwnerMap& allocation : bytes_) {
    if (allocation.holds(failure.raw())) {
      ++carriers;
    }
  }
  return carriers;
}

std::vector<FailureId> EngineModel::live_failures() const {
  std::vector<FailureId> found;
  for (std::size_t index = 0; index < minted_; ++index) {
    if (failures_[index].live) {
      found.push_back(FailureId::from_raw(index + 1));
    }
  }
  return found;
}

std::size_t EngineModel::size() const {
  const auto minted = failures_.begin() + static_cast<std::ptrdiff_t>(minted_);
  return static_cast<std::size_t>(std::count_if(
      failures_.begin(), minted, [](const Failure& failure) { return failure.live; }));
}

EngineModel::FailureView EngineModel::view(FailureId failure) const {
  const Failure* found = find_live(failure);
  if (found == nullptr) {
    return {};
  }
  return {&found->error, found->recorded};
}

std::uint64_t EngineModel::skips_recorded(FailureId failure) const {
  const Failure* found = find_live(failure);
  return found != nullptr ? found->recorded : 0;
}

std::vector<SkipRecord> EngineModel::skip_records(FailureId failure) const {
  const std::span<const SkipRecord> kept = kept_records(failure);
  return {kept.begin(), kept.end()};
}

std::span<const SkipRecord> EngineModel::kept_records(FailureId failure) const {
  const Failure* found = find_live(failure);
  if (found == nullptr) {
    return {};
  }
  const std::size_t total = found->recorded;
  const std::size_t first = total > kept_skip_records ? total - kept_skip_records : 0;
  return std::span<const SkipRecord>(found->records).first(total).subspan(first);
}

Report EngineModel::report(FailureId failure, AllocationId read) const {
  std::vector<const SkipRecord*> path;
  const AllocationId origin = report_path(failure, read, path);
  const Failure& found = *find_live(failure);
  Report expected{failure, found.error, read,           std::nullopt,
                  {},      origin,      found.recorded, found.recorded > kept_skip_records};
  expected.path.reserve(path.size());
  for (const SkipRecord* record : path) {
    expected.path.push_back(*record);
  }
  return expected;
}

AllocationId EngineModel::report_path(FailureId failure, AllocationId read,
                                      std::vector<const SkipRecord*>& path) const {
  const std::optional<AllocationId> origin = try_report_path(failure, read, path);
  if (!origin) {
    refuse("model: report of a failure that is not live (G8)");
  }
  return *origin;
}

std::optional<AllocationId>
EngineModel::try_report_path(FailureId failure, AllocationId read,
                             std::vector<const SkipRecord*>& path) const {
  path.clear();
  if (find_live(failure) == nullptr) {
    return std::nullopt;
  }
  // G8: from the read allocation, repeatedly take the newest kept record
  // older than the last one taken that produced the current allocation.
  AllocationId origin = read;
  const std::span<const SkipRecord> kept = kept_records(failure);
  std::size_t older_than = kept.size();
  bool stepped = true;
  while (stepped) {
    stepped = false;
    for (std::size_t index = older_than; index > 0; --index) {
      const SkipRecord& record = kept[index - 1];
      if (std::count(record.produced.begin(), record.produced.end(), origin) > 0) {
        path.push_back(&record);
        origin = record.needed;
        older_than = index - 1;
        stepped = true;
        break;
      }
    }
  }
  return origin;
}

} // namespace taintpool::model
