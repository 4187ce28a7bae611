#include <taintpool/model/owner_map.hpp>

#include <algorithm>

namespace taintpool::model {

void OwnerMap::assign(std::uint64_t begin, std::uint64_t end, std::uint64_t owner) {
  if (begin >= end) {
    return;
  }
  std::vector<OwnedRun>& rebuilt = rebuilt_;
  rebuilt.clear();
  // Keep what lies outside [begin, end) of every run.
  for (const OwnedRun& run : runs_) {
    if (run.begin < begin) {
      rebuilt.push_back({run.begin, std::min(run.end, begin), run.owner});
    }
    if (run.end > end) {
      rebuilt.push_back({std::max(run.begin, end), run.end, run.owner});
    }
  }
  if (owner != 0) {
    rebuilt.push_back({begin, end, owner});
  }
  std::sort(rebuilt.begin(), rebuilt.end(),
            [](const OwnedRun& a, const OwnedRun& b) { return a.begin < b.begin; });
  // Merge neighbours of one owner that touch.
  runs_.clear();
  for (const OwnedRun& run : rebuilt) {
    if (!runs_.empty() && runs_.back().owner == run.owner && runs_.back().end == run.begin) {
      runs_.back().end = run.end;
    } else {
      runs_.push_back(run);
    }
  }
  rebuilt.clear();
}

std::vector<std::uint64_t> OwnerMap::owners_in(std::uint64_t begin, std::uint64_t end) const {
  std::vector<std::uint64_t> found;
  owners_in(begin, end, found);
  return found;
}

void OwnerMap::owners_in(std::uint64_t begin, std::uint64_t end,
                         std::vector<std::uint64_t>& into) const {
  into.clear();
  for (const OwnedRun& run : runs_) {
    if (std::max(run.begin, begin) < std::min(run.end, end)) {
      into.push_back(run.owner);
    }
  }
  std::sort(into.begin(), into.end());
  into.erase(std::unique(into.begin(), into.end()), into.end());
}

bool OwnerMap::holds(std::uint64_t owner) const {
  return std::any_of(runs_.begin(), runs_.end(),
                     [&](const OwnedRun& run) { return run.owner == owner; });
}

std::vector<std::uint64_t> OwnerMap::owners() const {
  std::vector<std::uint64_t> found;
  owners(found);
  return found;
}

void OwnerMap::owners(std::vector<std::uint64_t>& into) const {
  into.clear();
  for (const OwnedRun& run : runs_) {
    into.push_back(run.owner);
  }
  std::sort(into.begin(), into.end());
  into.erase(std::unique(into.begin(), into.end()), into.end());
}

} // namespace taintpool::model
