// The naive boxed layout the engine is measured against: what the Rust
// original looked like before it went inline (its own doc comment: "behind a
// Box<Vec<Vec<_>>> that case cost three allocations and three frees per
// written buffer per launch"), with the error graph as a std::map.
//
//   BoxedTaint  = unique_ptr<vector<Claim>>, each Claim a failure and a
//                 vector of ranges; null when clean.
//   BoxedGraph  = std::map<uint64_t, Node>: one tree node per insert.
//
// Same semantics as the engine (T1–T4, G1–G5: set-never-add, fuse on touch,
// untag at once, remove at zero tags), written the obvious way — retain,
// subtract, insert sorted — so the comparison is of layout and bookkeeping,
// not of a different algorithm. Not a test oracle: bench only.
#pragma once

#include <taintpool/error.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace taintpool::bench {

class BoxedGraph {
 public:
  std::uint64_t insert(Error error) {
    nodes_.emplace(next_, Node{std::move(error), 0});
    return next_++;
  }
  void tag(std::uint64_t failure) { ++nodes_.at(failure).tags; }
  void untag(std::uint64_t failure) {
    const auto found = nodes_.find(failure);
    if (--found->second.tags == 0) {
      nodes_.erase(found);
    }
  }
  void prune(std::uint64_t failure) {
    const auto found = nodes_.find(failure);
    if (found != nodes_.end() && found->second.tags == 0) {
      nodes_.erase(found);
    }
  }
  [[nodiscard]] std::size_t size() const { return nodes_.size(); }

 private:
  struct Node {
    Error error;
    std::uint64_t tags;
  };
  std::map<std::uint64_t, Node> nodes_;
  std::uint64_t next_ = 1;
};

class BoxedTaint {
 public:
  using Range = std::pair<std::uint64_t, std::uint64_t>; // [first, second)

  BoxedTaint() = default;
  BoxedTaint(BoxedTaint&&) noexcept = default;
  BoxedTaint& operator=(BoxedTaint&&) noexcept = default;

  void taint(Range range, std::uint64_t failure, BoxedGraph& graph) {
    if (range.first >= range.second) {
      return;
    }
    if (!claims_) {
      claims_ = std::make_unique<std::vector<Claim>>();
    }
    release(range, failure, graph);
    for (Claim& claim : *claims_) {
      if (claim.failure == failure) {
        add(claim.ranges, range);
        return;
      }
    }
    graph.tag(failure);
    claims_->push_back(Claim{failure, {range}});
  }

  void written(Range range, BoxedGraph& graph) {
    if (range.first >= range.second || !claims_) {
      return;
    }
    release(range, 0, graph);
    if (claims_->empty()) {
      claims_.reset();
    }
  }

  void clear(BoxedGraph& graph) {
    if (claims_) {
      for (const Claim& claim : *claims_) {
        graph.untag(claim.failure);
      }
      claims_.reset();
    }
  }

  [[nodiscard]] bool is_clean() const { return !claims_; }

 private:
  struct Claim {
    std::uint64_t failure;
    std::vector<Range> ranges;
  };

  /// Every claim but `keep`'s loses `cut`; emptied claims drop and untag.
  void release(Range cut, std::uint64_t keep, BoxedGraph& graph) {
    auto& claims = *claims_;
    claims.erase(std::remove_if(claims.begin(), claims.end(),
                                [&](Claim& claim) {
                                  if (claim.failure == keep) {
                                    return false;
                                  }
                                  subtract(claim.ranges, cut);
                                  if (claim.ranges.empty()) {
                                    graph.untag(claim.failure);
                                    return true;
                                  }
                                  return false;
                                }),
                 claims.end());
  }

  static void subtract(std::vector<Range>& ranges, Range cut) {
    for (std::size_t at = 0; at < ranges.size();) {
      const Range held = ranges[at];
      if (std::max(held.first, cut.first) >= std::min(held.second, cut.second)) {
        ++at;
        continue;
      }
      const Range left{held.first, std::min(cut.first, held.second)};
      const Range right{std::max(cut.second, held.first), held.second};
      const bool keep_left = left.first < left.second;
      const bool keep_right = right.first < right.second;
      if (keep_left && keep_right) {
        ranges[at] = left;
        ranges.insert(ranges.begin() + static_cast<std::ptrdiff_t>(at) + 1, right);
        at += 2;
      } else if (keep_left || keep_right) {
        ranges[at] = keep_left ? left : right;
        ++at;
      } else {
        ranges.erase(ranges.begin() + static_cast<std::ptrdiff_t>(at));
      }
    }
  }

  static void add(std::vector<Range>& ranges, Range range) {
    ranges.erase(std::remove_if(ranges.begin(), ranges.end(),
                                [&](const Range& held) {
                                  const bool fuses =
                                      held.first <= range.second && range.first <= held.second;
                                  if (fuses) {
                                    range.first = std::min(range.first, held.first);
                                    range.second = std::max(range.second, held.second);
                                  }
                                  return fuses;
                                }),
                 ranges.end());
    const auto at = std::find_if(ranges.begin(), ranges.end(),
                                 [&](const Range& held) { return range.second < held.first; });
    ranges.insert(at, range);
  }

  std::unique_ptr<std::vector<Claim>> claims_;
};

} // namespace taintpool::bench
