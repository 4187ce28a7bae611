// HappensBefore: which earlier accesses to a byte are not yet ordered before
// the next piece of work on a stream — the ordering rule (O1, O2) at byte
// grain, as plain bookkeeping with no hardware in it.
//
// The Device runs work on several streams. Two accesses to the same byte on
// different streams, at least one of them a write, must run in the order the
// host issued them (O1). Work on one stream runs in queue order, so only
// accesses across streams can go wrong. This class keeps what is needed to
// tell, and nothing more:
//
//   * per stream, a count of the work queued on it (its `seq`), and a vector
//     clock: for every other stream, the newest seq known to run before this
//     stream's next work — because this stream waited on an event recorded
//     after it (ordered()), directly or through a chain of waits;
//   * per stream, the newest seq the host knows completed (completed()):
//     finished work is before everything queued later, on any stream;
//   * per allocation that more than one stream has touched, a record at byte
//     grain: for each run of bytes, its last writer and, per stream, its
//     newest reader since that write. In detect mode (every allocation
//     tracked) races leave more behind, and all of it is kept: an earlier
//     writer the last one raced with, and every reader not known complete,
//     so each later access is checked against everything that may still
//     run (O4).
//
// Why an allocation touched only by its home stream (the stream it was
// allocated on) has no record: that is nearly every allocation, and stream
// order already orders it, so the common launch costs one hash probe per
// binding here and nothing more. The first access from another stream
// materialises its record conservatively — as if the home stream had just
// written every byte at its current tail — which is also what makes reusing
// memory safe: the home stream's earlier use of the same memory, under a
// previous allocation, is before that tail (O3).
//
// plan() lists the hazards of a piece of work: for a read, the last writer
// (read after write); for a write, the last writer and every reader since
// (write after write, write after read) — each only when it is on another
// stream and not yet ordered before. The Device either makes the stream wait
// for them (ordering mode: one event per source stream, O2) or reports them
// (detect mode, O4). commit() then records the work's accesses.
//
// Cost: with no record on any binding, plan() and commit() are a probe per
// binding. A record's work is linear in the runs its bindings overlap; runs
// split and are rewritten as accesses land (std::vector per record: this is
// the cross-stream path, which already pays an event record and a wait).
// Memory: a record lives until its allocation ends (forget()) or everything
// in it is known complete (prune_completed()).
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/detail/id_table.hpp>
#include <taintpool/failure_id.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace taintpool {

/// One piece of work on one stream: the stream's slot, its place in that
/// stream's queue (1, 2, ...; 0 is "nothing yet"), and the Device's launch
/// number for messages (0 when unknown: work before a record existed).
struct StreamPoint {
  std::uint32_t stream = 0;
  std::uint64_t seq = 0;
  std::uint64_t launch = 0;

  friend bool operator==(const StreamPoint&, const StreamPoint&) = default;
};

/// How an earlier access conflicts with the planned one.
enum class Conflict : std::uint8_t {
  ReadAfterWrite,  ///< The planned work reads bytes the earlier one wrote.
  WriteAfterRead,  ///< The planned work writes bytes the earlier one read.
  WriteAfterWrite, ///< Both write.
};

/// One binding of a piece of work, as the ordering sees it.
struct StreamAccess {
  AllocationId allocation;
  ByteRange range;        ///< Allocation-relative.
  std::uint64_t size = 0; ///< The allocation's size (a record covers it all).
  std::uint32_t home = 0; ///< Slot of the stream the allocation was made on.
};

/// An earlier access not ordered before the planned work (O1).
struct Hazard {
  Conflict conflict = Conflict::ReadAfterWrite;
  bool write = false;        ///< The planned binding is one of the writes.
  std::uint32_t binding = 0; ///< Its index among the planned reads or writes.
  StreamPoint earlier;       ///< The earlier access.
  AllocationId allocation;   ///< Whose bytes.
  ByteRange bytes;           ///< The bytes both touch (allocation-relative).
};

/// The bookkeeping of O1/O2 (see above). Not thread-safe: the Device calls
/// it under its lock.
class HappensBefore {
 public:
  /// One stream, slot 0 (a Device's default stream).
  HappensBefore();

  /// Keep a record for every allocation from its creation (created()), not
  /// only once a second stream touches it: what detect mode needs to name
  /// the earlier access of a race precisely (O4). Costs a record per
  /// allocation and work per access. An allocation with no record then has
  /// no access outstanding (its record was pruned complete, or it predates
  /// the second stream), so it plans no hazard.
  void track_every_allocation() noexcept { track_all_ = true; }
  /// Whether track_every_allocation() was asked for.
  [[nodiscard]] bool tracks_every_allocation() const noexcept { return track_all_; }
  /// A new allocation: with every allocation tracked, its record starts
  /// with its memory's earlier use — everything queued on its home stream
  /// so far — as the writer of every byte. Otherwise nothing.
  void created(const StreamAccess& allocation);

  /// Back to what the constructor makes — one stream, slot 0, with nothing
  /// queued and no record — keeping the tracking mode (the caller's
  /// setting, not state) and the capacity of every table: what
  /// StreamTable::restart needs, allocation-free. Records go whatever they
  /// hold: their allocations' ids may be handed out again.
  void clear() noexcept;

  /// A new stream's slot: a free one (a removed stream's, whose work all
  /// completed) or a new one. Its clock starts empty: nothing is ordered
  /// before it but completed work.
  [[nodiscard]] std::uint32_t add_stream();
  /// The stream in `slot` is gone and every piece of its work completed.
  void remove_stream(std::uint32_t slot);
  /// Slots in use or free (the largest slot + 1).
  [[nodiscard]] std::uint32_t slots() const noexcept {
    return static_cast<std::uint32_t>(seq_.size());
  }

  /// Pieces of work queued on the stream so far: its newest seq.
  [[nodiscard]] std::uint64_t tail(std::uint32_t stream) const { return seq_.at(stream); }

  /// Whether any allocation has a record (any binding crossed streams).
  [[nodiscard]] bool any_record() const noexcept { return records_.size() != 0; }
  /// Whether this allocation has a record.
  [[nodiscard]] bool tracked(AllocationId allocation) const { return find(allocation) != nullptr; }
  /// Allocations with a record.
  [[nodiscard]] std::size_t records() const noexcept { return records_.size(); }

  /// Whether work `point` runs before the next work queued on `stream`.
  [[nodiscard]] bool ordered_before(const StreamPoint& point, std::uint32_t stream) const noexcept {
    return point.stream == stream || point.seq <= clock_[stream * seq_.size() + point.stream] ||
           point.seq <= completed_[point.stream];
  }

  /// Appends to `hazards` every earlier access that conflicts with work on
  /// `stream` binding `reads` and `writes` and is not ordered before it.
  /// Changes nothing.
  void plan(std::uint32_t stream, std::span<const StreamAccess> reads,
            std::span<const StreamAccess> writes, std::vector<Hazard>& hazards) const;

  /// `waiter` now waits for an event recorded on `source` after its work
  /// `source_seq`: everything before that is before waiter's next work
  /// (vector clock join).
  void ordered(std::uint32_t waiter, std::uint32_t source, std::uint64_t source_seq);

  /// The host learned that `stream`'s work up to `seq` completed.
  void completed(std::uint32_t stream, std::uint64_t seq);
  /// Newest seq of `stream` known complete.
  [[nodiscard]] std::uint64_t completed(std::uint32_t stream) const {
    return completed_.at(stream);
  }

  /// Queues one piece of work on `stream` (its seq is tail()+1) and records
  /// its accesses: reads join each byte's readers, writes become each byte's
  /// writer (keeping only earlier writers not ordered before it) and, in
  /// ordering mode, clear its readers. Returns the work's point. An access on
  /// the allocation's home stream with no record leaves none (fast path).
  StreamPoint commit(std::uint32_t stream, std::uint64_t launch,
                     std::span<const StreamAccess> reads, std::span<const StreamAccess> writes);

  /// Queues one piece of work on `stream` that binds nothing another
  /// stream touched: every binding is homed on `stream` and no allocation
  /// has a record (any_record() is false). Returns its point. The fast path
  /// of commit(): O(1).
  StreamPoint queued(std::uint32_t stream, std::uint64_t launch) noexcept {
    const StreamPoint point{stream, seq_[stream] + 1, launch};
    seq_[stream] = point.seq;
    return point;
  }

  /// The allocation ended: its record goes.
  void forget(AllocationId allocation) noexcept {
    if (Record* record = find(allocation)) {
      records_.erase(record);
    }
  }

  /// Drops every record whose accesses are all known complete; returns how
  /// many went. Linear in the records.
  std::size_t prune_completed();

  /// Every run of every record: sorted, disjoint, covering its allocation,
  /// no point newer than its stream's tail; in ordering mode at most one
  /// writer and one reader per stream.
  /// Throws std::logic_error naming the first violation.
  void check_invariants() const;

 private:
  struct Run {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    /// The last write, and any earlier one it was not ordered after (they
    /// raced: detect mode only), so a later access is checked against every
    /// write that may still land. Empty: nothing outstanding.
    std::vector<StreamPoint> writers;
    /// Ordering mode: reads since the last write, the newest per stream.
    /// Detect mode: every read not known complete, before the last write
    /// or after, since a later write may race with each of them (O4).
    std::vector<StreamPoint> readers;
  };
  /// An allocation's runs, kept in an IdTable by its id: a probe is a
  /// multiply and a shift (no division, as a prime-bucketed hash map's
  /// is), and after warm-up a new record allocates only its runs.
  struct Record {
    std::uint64_t id = 0; ///< The allocation's raw id; 0: a vacant slot.
    std::uint32_t home = 0;
    std::vector<Run> runs; ///< Sorted, disjoint, covering [0, size).

    Record() = default;
    Record(const Record&) = delete;
    Record& operator=(const Record&) = delete;
    Record(Record&& other) noexcept
        : id(std::exchange(other.id, 0))
        , home(other.home)
        , runs(std::move(other.runs)) {}
    Record& operator=(Record&& other) noexcept {
      id = std::exchange(other.id, 0);
      home = other.home;
      runs = std::move(other.runs);
      return *this;
    }
    ~Record() = default;
    void vacate() noexcept {
      id = 0;
      runs = {};
    }
  };

  /// The allocation's record, or null. Id 0 is no allocation's (ids count
  /// from 1); to the table it marks a vacant slot, so it is never looked up.
  [[nodiscard]] const Record* find(AllocationId allocation) const {
    return allocation.raw() == 0 ? nullptr : records_.find(allocation.raw());
  }
  [[nodiscard]] Record* find(AllocationId allocation) {
    return const_cast<Record*>(std::as_const(*this).find(allocation));
  }
  /// The allocation's record, made if it has none: when `creating` (or
  /// not every allocation is tracked), with its home stream's whole queue
  /// so far as the writer of every byte; else with no earlier access.
  Record& materialise(const StreamAccess& access, bool creating);
  /// Splits runs so that `range`'s ends are run boundaries; returns the
  /// index of the first run inside it.
  static std::size_t split(Record& record, ByteRange range);
  void plan_one(std::uint32_t stream, const StreamAccess& access, bool write, std::uint32_t binding,
                std::vector<Hazard>& hazards) const;

  std::vector<std::uint64_t> seq_;       ///< Per slot: work queued so far.
  std::vector<std::uint64_t> completed_; ///< Per slot: newest seq known complete.
  /// clock_[b * slots() + a]: a's newest seq before b's next work. One
  /// matrix, not a vector per stream: ordered_before is one load away.
  std::vector<std::uint64_t> clock_;
  std::vector<bool> free_; ///< Per slot: no stream uses it.
  detail::IdTable<Record> records_;
  bool track_all_ = false;
};

} // namespace taintpool
