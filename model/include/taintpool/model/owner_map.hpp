// OwnerMap: which failure (if any) owns each byte of one allocation — the
// reference model's whole idea of a Taint.
//
// Deliberately naive, so that it is right by reading: a std::vector of
// maximal runs {begin, end, owner}, and every update rebuilds the vector from
// scratch — cut every run at the update's bounds, overwrite the runs inside,
// then merge neighbours with the same owner. No binary search, no splice, no
// inline storage, no incremental bookkeeping: nothing the core does. Owner 0
// means "no failure" (written or fresh) and is never stored.
//
// The rebuild goes through a second vector the map keeps between updates,
// so a warm map updates without touching the heap: fuzzers run it millions
// of times under AddressSanitizer, where every allocation costs.
//
// Only std::vector, so a MemorySanitizer build of the model needs nothing
// else instrumented.
#pragma once

#include <cstdint>
#include <vector>

namespace taintpool::model {

struct OwnedRun {
  std::uint64_t begin;
  std::uint64_t end;   ///< begin < end.
  std::uint64_t owner; ///< Raw failure id, never 0.

  friend bool operator==(const OwnedRun&, const OwnedRun&) = default;
};

class OwnerMap {
 public:
  /// Every byte of [begin, end) now belongs to `owner` (0: to nobody).
  /// Empty ranges change nothing.
  void assign(std::uint64_t begin, std::uint64_t end, std::uint64_t owner);

  /// Every byte to nobody.
  void reset() { runs_.clear(); }

  /// Owners of at least one byte of [begin, end), ascending, each once.
  [[nodiscard]] std::vector<std::uint64_t> owners_in(std::uint64_t begin, std::uint64_t end) const;
  /// The same, into `into` (cleared first): no allocation once it has grown.
  void owners_in(std::uint64_t begin, std::uint64_t end, std::vector<std::uint64_t>& into) const;

  /// Whether `owner` owns any byte.
  [[nodiscard]] bool holds(std::uint64_t owner) const;

  /// Owners of any byte, ascending, each once.
  [[nodiscard]] std::vector<std::uint64_t> owners() const;
  /// The same, into `into` (cleared first): no allocation once it has grown.
  void owners(std::vector<std::uint64_t>& into) const;

  /// Maximal runs, ascending by offset: neighbours with one owner that touch
  /// are one run, so this is the canonical form core claims are compared to.
  [[nodiscard]] const std::vector<OwnedRun>& runs() const { return runs_; }

  [[nodiscard]] bool empty() const { return runs_.empty(); }

 private:
  std::vector<OwnedRun> runs_;
  std::vector<OwnedRun> rebuilt_; ///< assign()'s scratch; empty between calls.
};

} // namespace taintpool::model
