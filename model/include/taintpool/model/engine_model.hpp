// EngineModel: the reference model of the taint engine — several Taints and
// one ErrorGraph — written to be obviously right rather than fast (§4).
//
// It shares only public value types with core (ByteRange, FailureId, Error,
// SkipRecord, Report); none of core's algorithms. Each allocation is an
// OwnerMap (per-byte owner, rebuilt from scratch on every update). Tag counts
// are never maintained: tags(F) recounts the allocations whose map holds F.
// A failure is alive from insert until either
//   * prune() finds it with no carrier (G5), or
//   * an operation takes the last byte any allocation held for it (G3) —
//     detected by recounting, after the operation, the carriers of every
//     failure that owned a byte of the allocation it changed (no other
//     failure can have lost one).
// Skip records are all kept; the graph's cap (G7) is applied when read.
//
// Contract errors the core reports (tagging a failure with no node, a skip
// or report of a failure that is gone) are thrown here as std::logic_error
// too, after checking and before changing anything, so a fuzzer can demand
// that core throws exactly when the model does, and that both are unchanged.
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/model/owner_map.hpp>
#include <taintpool/report.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace taintpool::model {

class EngineModel {
 public:
  /// The number of skip records the graph keeps per failure (G7).
  static constexpr std::size_t kept_skip_records = 16;

  /// A new, clean allocation; returns its index (0, 1, 2 …).
  std::size_t add_allocation();
  /// Back to the state just after the allocations were added: every byte
  /// owned by nobody, no failure ever minted (the next insert is id 1). The
  /// allocations stay, and so does every buffer's capacity, so a fuzzer
  /// that runs millions of inputs through one model allocates nothing for
  /// it once warm (AddressSanitizer makes each allocation cost).
  void reset();
  /// Back to a model just constructed: no allocation, no failure ever
  /// minted. The allocations' maps are kept, cleared, as spares that
  /// add_allocation() hands out again, so a model restarted per input grows
  /// nothing once warm — and, unlike reset(), walks no more maps than the
  /// input made (tags() visits every allocation; issue 13, eighteenth round).
  void restart();
  [[nodiscard]] std::size_t allocations() const { return bytes_.size(); }

  /// G1: a live failure with the next id (1, 2, 3 …). Copies `error` into
  /// the id's slot; a slot left by an input before reset() or restart()
  /// keeps its buffers, so a warm model allocates nothing for it.
  FailureId insert(const Error& error);

  /// T1: bytes of `range` now owned by `failure`. Throws std::logic_error,
  /// changing nothing, when the range is non-empty and `failure` is not live.
  void taint(std::size_t allocation, ByteRange range, FailureId failure);
  /// taint() that answers instead of throwing: false, changing nothing,
  /// exactly where taint() throws (taint() is built on it, so the two
  /// cannot disagree). For a fuzzer that compares only *whether* core
  /// refused: under AddressSanitizer a throw and its catch cost more than a
  /// whole op — two allocations (the exception, its message), the
  /// unwinder's two passes, a sigaltstack call per frame it leaves — and a
  /// third of taint_fuzzer's throws were the model's (issue 13, fortieth
  /// round).
  [[nodiscard]] bool try_taint(std::size_t allocation, ByteRange range, FailureId failure);
  /// T2: bytes of `range` owned by nobody.
  void written(std::size_t allocation, ByteRange range);
  /// T4: every byte owned by nobody.
  void clear(std::size_t allocation);
  /// G4: a live failure's error; a dead one is ignored.
  void replace(FailureId failure, Error error);
  /// G5: a live failure with no carrier dies.
  void prune(FailureId failure);
  /// G7: throws std::logic_error when `root` is not live. Copies `record`
  /// into the failure's next slot (a spare keeps its buffers, see insert).
  void skipped(FailureId root, const SkipRecord& record);
  /// skipped() that answers instead of throwing (see try_taint): false,
  /// changing nothing, exactly where skipped() throws.
  [[nodiscard]] bool try_skipped(FailureId root, const SkipRecord& record);

  /// T3: owners of a byte of `range`, ascending.
  [[nodiscard]] std::vector<FailureId> failures(std::size_t allocation, ByteRange range) const;
  /// The same owners into `into` (cleared first; its capacity kept, so a
  /// caller that reuses it allocates nothing once it has grown). The
  /// returning failures() is built on it, so the two cannot disagree; a
  /// fuzzer asks after every query op, and the fresh lists were two
  /// allocations a query (issue 13, forty-third round).
  void failures(std::size_t allocation, ByteRange range, std::vector<FailureId>& into) const;
  /// Maximal (failure, range) runs, ascending by offset.
  [[nodiscard]] std::vector<std::pair<FailureId, ByteRange>> claims(std::size_t allocation) const;
  /// The same runs as the OwnerMap holds them (raw owner ids), by reference:
  /// what a fuzzer compares after every op without copying.
  [[nodiscard]] const std::vector<OwnedRun>& runs(std::size_t allocation) const {
    return bytes_.at(allocation).runs();
  }

  [[nodiscard]] bool live(FailureId failure) const;
  /// Null when the failure is not live.
  [[nodiscard]] const Error* error(FailureId failure) const;
  /// R1, recounted: allocations owning at least one byte for `failure`; 0 if dead.
  [[nodiscard]] std::uint64_t tags(FailureId failure) const;
  /// Live failures, ascending.
  [[nodiscard]] std::vector<FailureId> live_failures() const;
  /// Live failures, counted.
  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] FailureId next_id() const { return FailureId::from_raw(minted_ + 1); }

  /// One failure as a fuzzer compares it after every op, from one lookup:
  /// error() (null when not live, so also live()) and skips_recorded().
  /// live(), error() and skips_recorded() each look the failure up again;
  /// under AddressSanitizer each out-of-line lookup costs, and a checker asks
  /// all three for every failure an op touched (issue 13, fifteenth round).
  struct FailureView {
    const Error* error = nullptr; ///< Null when not live.
    std::uint64_t skips = 0;      ///< skips_recorded(): 0 when not live.
  };
  [[nodiscard]] FailureView view(FailureId failure) const;

  /// Every record ever added to a live failure; 0 when dead.
  [[nodiscard]] std::uint64_t skips_recorded(FailureId failure) const;
  /// The newest kept_skip_records records of a live failure, oldest first.
  [[nodiscard]] std::vector<SkipRecord> skip_records(FailureId failure) const;
  /// The same records, in place (empty when not live): what a fuzzer
  /// compares after every skip without copying them. Valid until the next
  /// change to the model.
  [[nodiscard]] std::span<const SkipRecord> kept_records(FailureId failure) const;
  /// G8 as DESIGN.md states it. Throws std::logic_error when not live.
  [[nodiscard]] Report report(FailureId failure, AllocationId read) const;
  /// report()'s walk in place: the kept records it passes through, newest
  /// first, into `path` (cleared first; its capacity is kept, so a caller
  /// that reuses it allocates nothing once it has grown), and returns the
  /// origin. report() is built on it, so the two cannot disagree; a fuzzer
  /// compares core's Report with this after every skip without copying a
  /// record (issue 13). Throws std::logic_error when not live. Valid until
  /// the next change to the model.
  AllocationId report_path(FailureId failure, AllocationId read,
                           std::vector<const SkipRecord*>& path) const;
  /// report_path() that answers instead of throwing (see try_taint): none,
  /// with `path` emptied, exactly where report_path() throws.
  [[nodiscard]] std::optional<AllocationId>
  try_report_path(FailureId failure, AllocationId read, std::vector<const SkipRecord*>& path) const;

 private:
  struct Failure {
    Error error;
    bool live = true;
    /// All of them, oldest first: the first `recorded`. The rest are
    /// spares from an earlier life of the slot, copied into by skipped().
    std::vector<SkipRecord> records;
    std::size_t recorded = 0;
  };

  [[nodiscard]] const Failure* find_live(FailureId failure) const;
  /// Kills every live failure among `owners` (raw ids that owned a byte of
  /// an allocation before an update of it) that no allocation holds now.
  void bury(const std::vector<std::uint64_t>& owners);

  std::vector<OwnerMap> bytes_;
  std::vector<OwnerMap> spares_; ///< restart()'s maps, empty, for add_allocation().
  /// Index = id - 1; dead ones stay, marked. Only the first minted_ are
  /// failures; the rest are slots reset() and restart() left, kept with
  /// their buffers so that a model reset per input (taint_fuzzer's) copies
  /// each failure and skip record into memory it already has: a fresh
  /// vector per input was about a tenth of that fuzzer's allocations, the
  /// records' copies a fifth (issue 13, twenty-ninth round).
  std::vector<Failure> failures_;
  std::size_t minted_ = 0;
  /// The owners of the allocation an update changes, before it: the
  /// failures bury() looks at. Kept between updates, so they allocate nothing.
  std::vector<std::uint64_t> owners_before_;
  /// Scratch for failures(): the raw owners OwnerMap lists, kept so that a
  /// query allocates nothing once warm. Mutable: a const query's buffer,
  /// holding nothing between calls (the model is single-threaded).
  mutable std::vector<std::uint64_t> owners_in_;
};

} // namespace taintpool::model
