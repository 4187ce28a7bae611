// DeviceModel: the D1 oracle — what a Device must do, stated per byte
// (DESIGN.md §3.5, S1–S5, D1–D2; §4 "device: per-byte last-writer state").
//
// Why it is shaped so. The point of a model is that it is right by reading,
// so it keeps the state the contract talks about and nothing cleverer:
//   * every byte of every allocation has a *last writer*: 0 when the work
//     that last wrote it succeeded (fresh memory counts as written, D1), else
//     the id of the failure that left it stale — one std::vector<uint64_t>
//     per allocation, one entry per byte, rewritten byte by byte;
//   * every byte also has the value the harness's reference kernel put there
//     (or "unknown", for fresh memory and whatever was computed from it), so
//     a successful read can be compared byte for byte;
//   * a failure is live exactly while some byte of some existing allocation
//     names it. Between operations that is the whole rule (R1–R3); inside
//     one, the failure an operation has just minted (a scope's provisional
//     TornDown, a late failure being attributed) lives until the operation
//     ends. So liveness is recomputed from the bytes after every operation
//     instead of being counted — there are no tags to get wrong;
//   * skip records are all kept, in order; the graph's cap of 16 (G7) is
//     applied only when a report is built (G8).
// It shares no algorithm with core (no intervals, no splitting, no id
// tables, no replay over binding lists): only public value types, and the
// Device itself only to read its observable state in mismatch().
//
// Where the contract leaves core a choice, the model accepts every valid one
// and then follows the one core made, so that the two stay in step:
//   * S1/T3: a skipped launch names as root *some* failure owning a byte of
//     *some* read binding, and that binding's allocation as `needed`
//     (launch() computes every acceptable pair and checks core's);
//   * P3: a launch with several bad bindings throws the kind of one of them;
//   * P1: dropped handles are discovered at the manager's next call;
//     synchronize() calls it only when it has stale bytes to taint, so the
//     harness says whether core discovered them.
//
// Failure ids are predicted exactly (G1, S4): every launch that enters with
// a non-empty write set mints one, even when it succeeds or its bindings are
// all empty; a skip mints none; a late failure on a launch that ran mints one
// when it is attributed.
//
// S6: a body that succeeds naming the only ranges it wrote (wrote_only)
// writes those bytes, which are released; every other byte of its write set
// keeps the writer it had before the launch — a failure it held stays alive
// through the scope for that.
//
// Streams and detect mode (O4). Which bytes a launch touched unordered is the
// StreamModel's business (stream_model.hpp); in detect mode the harness hands
// its findings to launch(). Then, after the skip check and before the body:
// every unordered earlier *reader* whose outputs a write of this launch may
// have changed under it gets a Race late failure, oldest reader first, exactly
// as a late failure at synchronize (below) — dropped when that launch no
// longer stands as "ran", unless it failed having reported bytes written
// (S2): those were computed from what the write may have changed, so they
// are the stale set (and the replay runs from them). After the body, unless it threw: if the launch
// read bytes an unordered launch wrote, everything it produced (its write set if it ran — a
// wrote_only body's named ranges, S6 — else the bytes it reported written, S2) is claimed by one
// new Race failure; else, if it wrote bytes an unordered launch also wrote, only those of its
// produced bytes; and the launch then reports Failed with that error. The wording of a Race message
// has run-grain detail core chooses (which conflict it names first, how many more it counts); the
// model checks it names the launch, its stream, one of the conflicts it found, and bytes inside
// that conflict, then follows core's text. In detect mode a byte's value is only promised where it
// carries no failure: a race may have changed it, and then it is claimed.
//
// Late failures (an asynchronous device, DeferredHostBackend), in the model's
// own words. Every launch since the last synchronize is remembered with its
// verdict (ran / failed / skipped) and bindings. At synchronize, late
// failures are taken oldest launch first. One whose launch no longer stands
// as "ran" (its body failed or threw, or an earlier late failure already
// found it ran on garbage) is dropped: its outputs carry a failure already.
// Otherwise a failure is minted, the launch is marked failed, and a set of
// stale bytes starts as its outputs less what it reported finished (ranges
// outside their output are ignored and counted in the message, S2). Then
// every later launch, in order: if it stands as "ran" and one of its reads
// (the first such, in binding order, is `needed`) touches a stale byte, it
// computed garbage — it gets a record with `ran` set, is marked failed, and
// its outputs become stale. Here a wrote_only launch's outputs (S6) are only
// the ranges it named, everywhere in this replay (and as the origin's stale
// set): every other byte of its write set kept its writer, so it stays stale
// or clean as it was (one naming nothing changes nothing and stays "ran"). A launch whose body
// failed but reported some bytes written (S2) and whose reads touch a stale byte wrote those bytes
// from garbage too: its outputs stop being stale except those bytes, which
// become stale, with a `ran` record (D1: they were not written by work that
// succeeded). Any other launch wrote its outputs (good data, or its own
// failure), so they stop being stale. Finally every stale byte of an
// allocation that still exists is claimed by the new failure.
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/device/launch.hpp>
#include <taintpool/error.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/model/id_table.hpp>
#include <taintpool/model/stream_model.hpp>
#include <taintpool/pool/allocation.hpp>
#include <taintpool/pool/fresh_bytes.hpp>
#include <taintpool/report.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <memory_resource>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taintpool {
class Device;
}

namespace taintpool::model {

// ------------------------------------------------------------ the reference kernel
//
// What every harness body computes, so that the model can compute it too: a
// digest of every input byte (all read before any output is written, so
// in-place and aliased bindings are well defined), then each output byte a
// function of the digest, the seed, the output's index and the position.

[[nodiscard]] constexpr std::uint32_t kernel_digest_step(std::uint32_t digest,
                                                         std::uint8_t byte) noexcept {
  return digest * 31u + byte + 1u;
}

[[nodiscard]] constexpr std::uint8_t kernel_output_byte(std::uint32_t digest, std::uint8_t seed,
                                                        std::size_t output,
                                                        std::uint64_t position) noexcept {
  return static_cast<std::uint8_t>((digest >> 3) + seed * 7u + output * 13u + position);
}

/// What a launch's body does. The harness's body does exactly this to core;
/// the model does it to itself.
enum class BodyKind : std::uint8_t {
  succeed,    ///< Writes its outputs, returns success.
  fail,       ///< Writes its outputs, returns failure(error) — partial(error, written)
              ///< when `written` is non-empty (S2).
  throws,     ///< Writes its outputs, then throws (S3).
  check,      ///< DeferredHostBackend::check (unconfirmed until synchronize), success.
  fail_late,  ///< DeferredHostBackend::fail_later(error, written), success.
  wrote_only, ///< Writes only the `written` ranges, returns wrote_only(written) (S6).
};

struct BodyPlan {
  BodyKind kind = BodyKind::succeed;
  Error error = Error::launch("");   ///< fail, fail_late.
  std::vector<WrittenRange> written; ///< fail (S2), fail_late, wrote_only (S6); untrusted.
  bool std_exception = true;         ///< throws: std::runtime_error(what), else an int.
  std::string what = "boom";         ///< throws: the exception's message.
  std::uint8_t seed = 0;             ///< What it writes (kernel_output_byte).
};

/// What a launch on a Device with streams adds to launch(): where core's
/// choices are, and what the stream model found.
struct LaunchContext {
  /// For a skip: the (root, needed) core named (see launch()).
  std::optional<std::pair<FailureId, AllocationId>> core_choice;
  /// The launch's stream (StreamId number), for Race messages.
  std::uint32_t stream = 0;
  /// Detect mode: the unordered conflicts StreamModel::begin() found.
  std::span<const RaceFinding> races;
  /// Core's LaunchResult::error (nullptr if none), whose Race wording the
  /// model follows. Borrowed, not copied: the result outlives the call.
  const Error* core_error = nullptr;
  /// Core's stored error of a failure (nullptr if none), whose Race wording
  /// the model follows for write-after-read late failures.
  std::function<const Error*(FailureId)> core_failure_error;
};

/// The model's verdict on one launch or host write.
struct ModelLaunch {
  /// Non-empty: the launch must throw Exception of one of these kinds
  /// (NotFound, InvalidBinding) before anything is claimed (P3); nothing
  /// else happened, not even a launch number.
  std::vector<ErrorKind> binding_errors;
  /// The body threw: the exception must reach the caller (S3).
  bool body_threw = false;
  /// Otherwise: what launch() must return.
  LaunchResult result;
  /// Skipped: every (root, needed) pair S1 allows.
  std::vector<std::pair<FailureId, AllocationId>> acceptable_roots;
  /// Skipped: whether the choice the caller passed was among them (the
  /// model followed it if so, else the first acceptable pair).
  bool choice_acceptable = true;
  /// O4: each Race message of core's that does not say what the model
  /// found (empty when every one does).
  std::vector<std::string> race_wording;
};

/// The model's verdict on a read (or stale_reports).
struct ModelRead {
  /// Non-empty: the read must throw Exception of one of these kinds.
  std::vector<ErrorKind> binding_errors;
  /// D1/G9: one per distinct failure owning a byte read, ascending by
  /// failure; empty means the bytes are copied out.
  std::vector<Report> reports;
  /// The bytes copied out; nullopt where the value is unknown (fresh memory,
  /// or computed from it).
  std::vector<std::optional<std::uint8_t>> bytes;
};

class DeviceModel {
 public:
  /// The number of skip records the graph keeps per failure (G7).
  static constexpr std::size_t kept_skip_records = 16;

  /// `detect`: the Device runs in detect mode (O4): values are promised
  /// only for bytes without a failure.
  explicit DeviceModel(bool detect = false)
      : detect_(detect) {}

  class Room;
  /// The same, starting with the lists an earlier model gave up (`room`,
  /// from take_room()): their capacity, never their contents — every list
  /// is emptied, so the model answers exactly as DeviceModel(detect) would
  /// (pinned by DeviceModelRoom.*). device_fuzzer makes a model per input,
  /// and the lists it grew from empty (its allocations, held, log, failure
  /// table and scratch lists, each allocation's owners list) were some 15
  /// of an input's 130 heap allocations, each paying ASan's stack trace
  /// (issue 13, forty-seventh round).
  DeviceModel(bool detect, Room room);
  /// Gives up the model's lists (see Room) for the next model to start
  /// with. The model is left with none of its state: destroy it next.
  [[nodiscard]] Room take_room() noexcept;
  /// Hands a verdict back once the caller is done with it: its lists'
  /// capacity (emptied) serves the next launch's verdict, which would
  /// otherwise grow its lists from empty per launch. Optional: a verdict
  /// not handed back costs only those allocations.
  void recycle(ModelLaunch&& done) noexcept;
  /// The same for a read's verdict.
  void recycle(ModelRead&& done) noexcept;

  /// Mint ids in the id space `space` (allocation_space), as the Device's
  /// MemoryManager does (its id_space()): the first device alive gets 0,
  /// each one alive beside it another. Before the first create.
  void set_id_space(std::uint32_t space) noexcept { space_ = space; }

  /// N1, N2: the never-written mode, as MemoryConfig::fresh_bytes and
  /// DeviceOptions::unwritten_reads set it on the Device; before the first
  /// create. Under NeverWritten every byte of a fresh allocation (size > 0)
  /// has as last writer the one NeverWritten failure, minted when the first
  /// allocation needs it and none lives; it dies as any failure does, when
  /// no byte names it. Under Report, a launch whose reads' failures are all
  /// NeverWritten runs, and its result lists, per read binding in order,
  /// each maximal run of such bytes it read.
  void set_fresh_bytes(FreshBytes fresh, UnwrittenReads reads = UnwrittenReads::Skip) noexcept {
    fresh_ = fresh;
    unwritten_reads_ = reads;
  }
  /// N2: the launch policy set_fresh_bytes set (collectives follow it).
  [[nodiscard]] UnwrittenReads unwritten_reads() const noexcept { return unwritten_reads_; }
  /// The live NeverWritten failure, if any.
  [[nodiscard]] std::optional<FailureId> never_written_failure() const {
    if (never_written_ != 0 && failures_.count(never_written_) != 0) {
      return FailureId::from_raw(never_written_);
    }
    return std::nullopt;
  }

  // ---- allocations and handles

  /// create_buffer(size): discovers dropped handles, then a new allocation
  /// (ids 1, 2, 3 …) whose bytes are all written-ok and of unknown value.
  /// It has one handle.
  AllocationId create(std::uint64_t size);
  /// create_buffer(bytes): create, then a host write of `bytes`.
  AllocationId create(std::span<const std::byte> bytes);
  /// A handle was copied.
  void copy_handle(AllocationId allocation);
  /// A handle was dropped; the last one makes the allocation *dropped*: it
  /// keeps its bytes until the manager's next call discovers it (P1).
  void drop_handle(AllocationId allocation);
  /// sweep() / cleanup(): discover every dropped allocation now.
  void sweep();

  // ---- work

  /// launch(kernel, reads, writes, body) with `body` doing `plan`. For a
  /// skip, `core_choice` is the (root, needed) core named; the model checks
  /// it is acceptable and follows it.
  ModelLaunch launch(std::string_view kernel, std::span<const Binding> reads,
                     std::span<const Binding> writes, const BodyPlan& plan,
                     std::optional<std::pair<FailureId, AllocationId>> core_choice = {});
  /// As above, on a Device with streams: `context` says core's choices and
  /// the races StreamModel found (detect mode).
  ModelLaunch launch(std::string_view kernel, std::span<const Binding> reads,
                     std::span<const Binding> writes, const BodyPlan& plan,
                     const LaunchContext& context);
  /// write(into, bytes): a host write (S5). `context`: as for launch().
  ModelLaunch write(const Binding& into, std::span<const std::byte> bytes,
                    const LaunchContext& context = {});
  /// synchronize(): attributes every late failure (see the header comment).
  /// `drops_discovered`: whether core's manager discovered dropped handles
  /// during it (it does when it had stale bytes to taint).
  void synchronize(bool drops_discovered);
  /// read(from, into) with into.size() == `into_size` (D1).
  ModelRead read(const Binding& from, std::uint64_t into_size);
  /// stale_reports(from): the reports a read would give, whether or not
  /// there are any.
  ModelRead stale_reports(const Binding& from);

  // ---- exchanges: a rank's half of a collective (C1-C5; device_model_exchange.cpp)

  /// What a collective did on this rank, as RanksModel worked it out.
  struct ExchangePlan {
    /// Per write binding, per byte: the value the collective wrote there.
    std::vector<std::vector<std::optional<std::uint8_t>>> values;
    /// Output 0's bytes computed from this rank's own stale input: each
    /// range takes the failure, in order (input 0 is the record's `needed`).
    std::vector<std::pair<ByteRange, FailureId>> carried;
    /// Output 0's bytes fed stale by other ranks, and their error.
    std::vector<ByteRange> fed;
    std::optional<Error> fed_error;
    /// The verdict about `fed` arrives at the next synchronize (C5), as a
    /// late failure of the exchange; otherwise it is applied at once.
    bool deferred = false;
  };
  /// Device::exchange: as a launch, but the reads are never checked (C1);
  /// the write set is written, `carried` bytes take their failure (with a
  /// `took_part` record), `fed` bytes take one failure minted as the
  /// exchange's provisional one (or, deferred, a late failure at the next
  /// synchronize), the rest is released. A deferred exchange stays pending
  /// until the next synchronize, stale or not.
  ModelLaunch exchange(std::string_view kernel, std::span<const Binding> reads,
                       std::span<const Binding> writes, const ExchangePlan& plan);
  /// CollectiveBackend::poll: the pending exchanges are confirmed oldest
  /// first, up to the first whose verdict is stale.
  void poll_exchanges();
  /// Device::awaits_verdict: whether a byte of `reads` was written by an
  /// unconfirmed launch (a pending exchange; with a checked launch since the
  /// last synchronize, every launch from the oldest such on), or computed
  /// since from such bytes by launches that ran.
  [[nodiscard]] bool awaits_verdict(std::span<const Binding> reads) const;

  // ---- observable state

  /// Allocations the manager still holds: live, and dropped but not yet
  /// discovered. Ascending.
  [[nodiscard]] std::vector<AllocationId> allocations() const;
  /// Whether allocations() would list any, without building the list: a
  /// fuzzer asks this per binding it decodes (issue 13).
  [[nodiscard]] bool holds_any() const;
  /// Dropped, not yet discovered.
  [[nodiscard]] std::vector<AllocationId> dropped() const;
  /// The first of dropped(), without building the list (issue 13).
  [[nodiscard]] std::optional<AllocationId> first_dropped() const;
  /// Whether a binding of it resolves (created, not dropped).
  [[nodiscard]] bool live(AllocationId allocation) const;
  [[nodiscard]] std::uint64_t size(AllocationId allocation) const;
  /// Maximal runs of stale bytes, ascending by offset: the canonical form of
  /// an allocation's claims (T5).
  [[nodiscard]] std::vector<std::pair<FailureId, ByteRange>> claims(AllocationId allocation) const;
  /// The value of every byte, nullopt where unknown.
  [[nodiscard]] std::vector<std::optional<std::uint8_t>> bytes(AllocationId allocation) const;
  /// bytes(), in place: valid until the model next changes. For readers
  /// that run per collective (RanksModel), where the copy was an allocation
  /// ASan pays for each time (issue 13).
  [[nodiscard]] std::span<const std::optional<std::uint8_t>>
  bytes_in_place(AllocationId allocation) const;
  /// Per byte: the failure that owns it (raw id), 0 where no failure does —
  /// claims() before it is cut into runs, in place; empty for an allocation
  /// the model does not hold (gone or unknown), as claims() is. Valid until
  /// the model next changes.
  [[nodiscard]] std::span<const std::uint64_t> writers_in_place(AllocationId allocation) const;

  [[nodiscard]] std::vector<FailureId> live_failures() const;
  [[nodiscard]] const Error* error(FailureId failure) const;
  /// R1, counted from the bytes: allocations with a byte owned by `failure`.
  [[nodiscard]] std::uint64_t tags(FailureId failure) const;
  [[nodiscard]] std::uint64_t skips_recorded(FailureId failure) const;
  /// The newest kept_skip_records records, oldest first.
  [[nodiscard]] std::vector<SkipRecord> skip_records(FailureId failure) const;
  /// G8, as DESIGN.md words it.
  [[nodiscard]] Report report(FailureId failure, AllocationId read) const;
  /// The same report into `out`, every field set again (its strings and
  /// lists keep their capacity).
  void report(FailureId failure, AllocationId read, Report& out) const;
  /// report()'s walk without a copy: `path` refilled with the model's own
  /// records, newest step first as Report::path (its capacity kept: a
  /// caller that reuses it allocates nothing once it has grown), and the
  /// origin returned. Both report() forms are built on it, so none can
  /// disagree; RanksModel words a collective's root lines from it without
  /// copying a record (issue 13: the copies were some 17 allocations of a
  /// collective_fuzzer input). Throws std::logic_error when `failure` is
  /// not live. Valid until the next change to the model.
  AllocationId report_path(FailureId failure, AllocationId read,
                           std::vector<const SkipRecord*>& path) const;
  [[nodiscard]] FailureId next_failure() const { return FailureId::from_raw(next_failure_); }
  /// The number the next launch will get (KernelContext::launch()).
  [[nodiscard]] std::uint64_t next_launch() const { return next_launch_; }
  /// Late failures waiting for the next synchronize.
  [[nodiscard]] std::size_t pending_late_failures() const { return late_.size(); }
  /// How many verdicts have been attributed so far (a late failure at a
  /// synchronize, or a race reaching its readers): the only steps that
  /// rewrite bytes of allocations the op that caused them did not name
  /// (S5, C5, O4). Why: a fuzzer compares only the allocations an op named
  /// after it when this count did not move (mismatch_touched), and every
  /// allocation when it did — a read, synchronize or collective that landed
  /// no verdict changed nothing else (issue 13).
  [[nodiscard]] std::uint64_t verdicts_attributed() const noexcept { return attributed_; }

  /// The first observable difference between `device` and the model, or
  /// nothing: every allocation the manager holds (ids, sizes, claims, and
  /// the bytes the model knows when `values`), every live failure (error,
  /// tags, skips recorded, kept records), the graph's size and next id.
  /// Reads only what does not change core's state (no sweep). Pass `values`
  /// false while queued work may still change bytes.
  [[nodiscard]] std::optional<std::string> mismatch(Device& device, bool values = true) const;
  /// The same for one allocation (held by both, size, claims, values):
  /// what to compare after an operation that touched it.
  [[nodiscard]] std::optional<std::string> mismatch(Device& device, AllocationId allocation,
                                                    bool values) const;
  /// What an operation that touched only `touched` may have changed: the
  /// ids of every allocation the manager holds (a launch discovers dropped
  /// handles, P1), the size, claims and values of the touched ones, and the
  /// whole graph as mismatch(device) compares it. Cheaper than the whole
  /// state by every untouched allocation's claims and bytes; fuzzers call
  /// it after every op and the whole-state mismatch every few ops.
  [[nodiscard]] std::optional<std::string>
  mismatch_touched(Device& device, std::span<const AllocationId> touched, bool values = true) const;

 private:
  enum class State : std::uint8_t { live, dropped, gone };
  struct Allocation {
    std::uint64_t size = 0;
    std::uint64_t handles = 1;
    State state = State::live;
    /// Per byte: 0 written-ok, else failure. Written only through
    /// DeviceModel::writers_to_change (it forgets `owners`). Both lists
    /// come from the model's bytes_ (see ByteArena).
    std::pmr::vector<std::uint64_t> writer;
    std::pmr::vector<std::optional<std::uint8_t>> value; ///< Per byte.
    /// The failures `writer` names, each once, ascending — derived from
    /// `writer` by owners_of() when `owners_known` is false, kept until the
    /// next write. Why: the R1 carriers check (mismatch_in, after every
    /// fuzzed op) and bury() (after every launch) asked this of every byte
    /// of every allocation, though an op changes the bytes of a few
    /// (issue 13: 8-10% of device_fuzzer's time). A whole-state mismatch()
    /// derives every list again and throws when a kept one differs, so a
    /// write that bypassed writers_to_change is loud within a few ops.
    mutable std::vector<std::uint64_t> owners;
    mutable bool owners_known = false;
    /// The number of the last mismatch_in that met it in the manager's
    /// list (scratch: how that comparison finds an id listed twice).
    mutable std::uint64_t seen = 0;
  };
  struct Failure {
    Error error;
    std::vector<SkipRecord> records; ///< Every one, oldest first.
  };
  /// A run of log_bindings_: one of a log entry's lists.
  struct LogSlice {
    std::size_t first = 0;
    std::size_t count = 0;
  };
  /// A launch or exchange since the last synchronize. Its lists and kernel
  /// name live in log_bindings_ and log_text_, shared by every entry and
  /// emptied together at synchronize: a list per field had cost three to
  /// five allocations per entry, and a model (built new per fuzzer input)
  /// rarely synchronized often enough to refill retired ones (issue 13).
  struct Logged {
    std::uint64_t launch;
    std::size_t kernel_at;   ///< In log_text_.
    std::size_t kernel_size; ///< In log_text_.
    LaunchStatus status;
    LogSlice reads;
    LogSlice writes;
    /// A failed body's S2 ranges: bytes it reported written, as bindings.
    LogSlice released;
    /// S6: a wrote_only body wrote only `named`; every other byte of its
    /// write set kept its writer, so a replay leaves it as it was.
    bool named_only = false;
    LogSlice named;
  };
  /// One of an entry's lists. Valid until the next log_entry or synchronize.
  [[nodiscard]] std::span<const Binding> list_of(LogSlice slice) const noexcept {
    return {log_bindings_.data() + slice.first, slice.count};
  }
  /// What `entry` produced or claimed: its named list or its write set.
  [[nodiscard]] std::span<const Binding> covered(const Logged& entry) const noexcept {
    return list_of(entry.named_only ? entry.named : entry.writes);
  }
  [[nodiscard]] std::string_view kernel_in(const Logged& entry) const noexcept {
    return std::string_view(log_text_).substr(entry.kernel_at, entry.kernel_size);
  }
  struct Late {
    std::uint64_t launch;
    Error error;
    std::vector<WrittenRange> written;
  };
  /// allocation -> byte -> member: the bytes a replay of the log marks
  /// (awaits_verdict's suspects, a late failure's stale bytes). One is kept
  /// between replays (scratch_bytes_) and cleared, not freed, so a replay
  /// reuses each member list's room: the std::map it was cost a node and a
  /// list per allocation marked, per question and per late failure
  /// (issue 13). Allocations are found by a scan: a replay marks a few.
  struct Bytes {
    struct Member {
      std::uint64_t allocation; ///< Raw id.
      std::vector<bool> bits;   ///< Per byte of it.
    };
    std::vector<Member> members; ///< The first `used` are in use.
    std::size_t used = 0;
    [[nodiscard]] const std::vector<bool>* find(std::uint64_t allocation) const noexcept;
    [[nodiscard]] std::vector<bool>* find(std::uint64_t allocation) noexcept;
    void clear() noexcept { used = 0; }
  };

  /// `allocation`'s writers, to change: forgets its owners list first.
  static std::pmr::vector<std::uint64_t>& writers_to_change(Allocation& allocation) noexcept {
    allocation.owners_known = false;
    return allocation.writer;
  }
  /// `allocation`'s owners list (see Allocation::owners), derived again
  /// when a write forgot it. Costs a pass over its bytes then, else nothing.
  static const std::vector<std::uint64_t>& owners_of(const Allocation& allocation);
  /// Derives `allocation`'s owners list into `out` from its bytes.
  static void derive_owners(const Allocation& allocation, std::vector<std::uint64_t>& out);
  [[nodiscard]] const Allocation* find(AllocationId allocation) const;
  [[nodiscard]] Allocation* find(AllocationId allocation);
  [[nodiscard]] std::optional<ErrorKind> check(const Binding& binding) const;
  void discover();
  /// Liveness from the bytes: a failure no byte names is gone. An
  /// operation calls it once its bytes are final (a failure it minted lives
  /// until then, whatever bytes it claims meanwhile).
  void bury();
  /// Inserts `value` into the sorted, distinct `list` unless it is there.
  static void insert_sorted(std::vector<std::uint64_t>& list, std::uint64_t value);
  std::uint64_t mint(Error error);
  void set_writer(const Binding& binding, std::uint64_t writer);
  /// The values of `binding`'s allocation, from its first byte, once its
  /// range is checked to lie inside them (std::out_of_range if not).
  std::optional<std::uint8_t>* values_in(const Binding& binding);
  void run_kernel(std::span<const Binding> reads, std::span<const Binding> writes,
                  std::uint8_t seed);
  ModelLaunch launch_impl(std::string_view kernel, std::span<const Binding> reads,
                          std::span<const Binding> writes, const BodyPlan& plan,
                          const LaunchContext& context,
                          std::optional<std::span<const std::byte>> host_bytes);
  /// The failure minted, if the late failure was not dropped.
  std::optional<std::uint64_t> attribute(const Late& late);
  void write_named(std::span<const Binding> reads, std::span<const Binding> writes,
                   const BodyPlan& plan);
  void race_readers(std::uint64_t launch, std::string_view kernel, const LaunchContext& context,
                    ModelLaunch& out);
  /// `named`: a wrote_only body's named ranges (S6), the only bytes it
  /// produced; nullptr for any other body.
  void race_outputs(std::uint64_t launch, std::string_view kernel, std::span<const Binding> writes,
                    const std::vector<Binding>* named, std::vector<Binding>& released,
                    const LaunchContext& context, LaunchStatus& status, ModelLaunch& out);
  [[nodiscard]] std::string kernel_of(std::uint64_t launch) const;
  /// mismatch() and mismatch_touched(): every allocation's claims and
  /// bytes, or only those of `*touched`.
  [[nodiscard]] std::optional<std::string>
  mismatch_in(Device& device, const std::span<const AllocationId>* touched, bool values) const;
  [[nodiscard]] std::optional<std::string>
  compare_allocation(AllocationId id, std::uint64_t size,
                     const std::vector<std::pair<FailureId, ByteRange>>& held,
                     const std::byte* data, bool values) const;
  /// Whether `taint`'s claims are the model's claims(id), exactly: the
  /// passing path of compare_allocation, which copies nothing.
  [[nodiscard]] bool same_claims(AllocationId id, const Taint& taint) const;
  /// Whether `data` holds every byte value the model knows of `model` (in
  /// detect mode, of its unclaimed bytes: O4): compare_allocation's value
  /// check, allocating nothing.
  [[nodiscard]] bool same_values(const Allocation& model, const std::byte* data) const;
  [[nodiscard]] bool touches(const Bytes& set, const Binding& binding) const;
  void add(Bytes& set, const Binding& binding) const;
  void remove(Bytes& set, const Binding& binding) const;
  ModelRead reports_for(const Binding& from, bool copy, std::uint64_t into_size);
  [[nodiscard]] static std::vector<AllocationId> distinct_writes(std::span<const Binding> writes);

  /// Where every allocation's per-byte lists (Allocation::writer and
  /// value) are carved from: blocks of a few kilobytes, each taken once
  /// and given back when the model goes (or, at take_room(), kept for the
  /// model made with its Room). Why: the two lists were two heap
  /// allocations per create — device_fuzzer's largest site (issue 13, 15 of
  /// some 150 mallocs per input, each paying ASan's stack trace), for
  /// lists that never grow after create and live as long as the model.
  /// What it costs: a list's memory is not given back before the model
  /// goes (an allocation ended keeps its few bytes). Under ASan each list
  /// is followed by a poisoned redzone (ByteBlocks, device_model.cpp), so a
  /// read past one list into the next is still reported. Held through a
  /// pointer, so a model moved (RanksModel's vector) keeps its lists'
  /// resource; a copy gets a resource of its own (its lists, copied, use
  /// the default one).
  class ByteArena {
   public:
    ByteArena() = default;
    /// A copy starts with no resource (the copied lists use the default one).
    ByteArena(const ByteArena&) noexcept {}
    /// The moved-to takes the resource; the moved-from starts again with none.
    ByteArena(ByteArena&& other) noexcept
        : resource_(std::move(other.resource_)) {}
    /// Keeps its own resource: the lists it gave out stay valid.
    ByteArena& operator=(const ByteArena&) noexcept { return *this; }
    /// Swaps: the lists this one gave out are the other's to outlive.
    ByteArena& operator=(ByteArena&& other) noexcept {
      std::swap(resource_, other.resource_);
      return *this;
    }
    ~ByteArena() = default;
    /// The resource, made at the first call.
    [[nodiscard]] std::pmr::memory_resource* get();
    /// Takes back every list at once — none may still be in use — keeping
    /// the blocks for the lists carved next (take_room()).
    void release() noexcept;

   private:
    std::unique_ptr<std::pmr::memory_resource> resource_;
  };
  /// Declared before allocations_: destroyed after the lists it holds.
  ByteArena bytes_;
  std::vector<Allocation> allocations_; ///< Index = id - 1.
  /// The indices of the allocations the manager holds (live or dropped, not
  /// gone), ascending: what every walk over held allocations (bury, the
  /// comparisons, discover) goes through, so that the allocations an input
  /// has ended cost those walks nothing (issue 13).
  std::vector<std::size_t> held_;
  /// mismatch_in calls so far (see Allocation::seen). Scratch only.
  mutable std::uint64_t comparisons_ = 0;
  IdTable<Failure> failures_; ///< Live failures by raw id, ascending (a map was a node each).
  std::uint64_t next_failure_ = 1;
  std::uint64_t next_launch_ = 1;
  std::uint64_t attributed_ = 0; ///< verdicts_attributed().
  std::vector<Logged> log_;      ///< Every launch since the last synchronize.
  /// Every log_ entry's lists, entry by entry (see Logged).
  std::vector<Binding> log_bindings_;
  /// Every log_ entry's kernel name, one after another (see Logged).
  std::string log_text_;
  std::vector<Late> late_; ///< Reported by bodies, attributed at synchronize.
  bool detect_ = false;
  std::uint32_t space_ = 0;                               ///< set_id_space.
  FreshBytes fresh_ = FreshBytes::Trusted;                ///< set_fresh_bytes.
  UnwrittenReads unwritten_reads_ = UnwrittenReads::Skip; ///< set_fresh_bytes.
  std::uint64_t never_written_ = 0; ///< The NeverWritten failure last minted (N1).
  /// Allocations dropped and not yet discovered: discover() walks the
  /// allocations only when some are (it runs at every launch and create).
  std::size_t dropped_count_ = 0;
  /// An id's place in allocations_ (its number, less one), and back.
  [[nodiscard]] static std::size_t index_of(AllocationId allocation) noexcept {
    return static_cast<std::size_t>(allocation_number(allocation) - 1);
  }
  [[nodiscard]] AllocationId id_at(std::size_t index) const noexcept {
    return allocation_id(space_, index + 1);
  }
  /// Launches whose body called check() or fail_later() since the last
  /// synchronize (DeferredHostBackend's unconfirmed ones).
  std::vector<std::uint64_t> checked_;
  struct PendingExchange {
    std::uint64_t launch;
    bool stale; ///< Its verdict feeds this rank stale bytes.
  };
  /// Deferred exchanges not yet confirmed, oldest first.
  std::vector<PendingExchange> pending_exchanges_;
  /// mismatch_in's buffers, kept between calls so that a comparison after
  /// every fuzzed op allocates nothing (issue 13). Scratch only: no state,
  /// and a copy of the model may share nothing through them.
  struct Carriers {
    std::uint64_t owner; ///< A failure.
    std::uint64_t count; ///< Allocations holding a byte of it (R1's tags).
  };
  mutable std::vector<std::uint64_t> scratch_ids_;
  mutable std::vector<Carriers> scratch_carriers_;
  /// An owners list derived again, to check a kept one (mismatch_in).
  mutable std::vector<std::uint64_t> scratch_owners_;
  /// awaits_verdict's and attribute()'s byte set (see Bytes). Scratch
  /// only, as above: each clears it first, and neither calls the other.
  mutable Bytes scratch_bytes_;
  /// bury()'s list of the failures some byte names, kept between calls for
  /// the same reason: bury runs after every launch, and a std::set there
  /// allocated a node per failure each time. Scratch only, as above.
  std::vector<std::uint64_t> scratch_named_;
  /// The failures one read binding's runs name (launch_impl, reports_for).
  /// Scratch only.
  std::vector<std::uint64_t> scratch_read_owners_;
  /// launch_impl's released ranges (a failed body's S2 ranges). Scratch only.
  std::vector<Binding> scratch_released_;
  /// report()'s steps (report_path's pointers), before they are copied into
  /// the caller's Report. Scratch only.
  mutable std::vector<const SkipRecord*> scratch_steps_;
  /// Appends a log entry for `launch` with every field set; `named` is a
  /// wrote_only body's named ranges (S6), nullptr for any other. Returns it.
  Logged& log_entry(std::uint64_t launch, std::string_view kernel, LaunchStatus status,
                    std::span<const Binding> reads, std::span<const Binding> writes,
                    std::span<const Binding> released = {},
                    const std::vector<Binding>* named = nullptr);
  /// Appends `bindings` to log_bindings_; returns where they lie.
  LogSlice log_list(std::span<const Binding> bindings);
  /// awaits_verdict reads log_, checked_ and pending_exchanges_ as sorted
  /// by launch (its first unconfirmed entry, a binary search): each append
  /// checks that `launch` comes after `last`, the list's newest, and throws
  /// std::logic_error naming `list` if not — a model that broke the order
  /// would answer wrongly, not loudly, without it.
  static void require_rising(std::optional<std::uint64_t> last, std::uint64_t launch,
                             const char* list);
  /// Swaps every list (and the byte blocks) with `room`'s; the spare owners
  /// lists aside. Both directions: a model made with a room, one giving it up.
  void trade_lists(Room& room) noexcept;
  /// Empties every list trade_lists() trades (their capacity stays).
  void empty_lists() noexcept;
  /// A verdict with every field as a default one has, its lists from
  /// spare_launch_ (recycle()) when there are any.
  [[nodiscard]] ModelLaunch fresh_launch() noexcept;
  /// The same for a read's verdict.
  [[nodiscard]] ModelRead fresh_read() noexcept;
  /// Verdicts handed back (recycle()), kept for their lists' capacity only.
  ModelLaunch spare_launch_;
  ModelRead spare_read_;
  /// Owners lists of ended models' allocations (a Room's), emptied: a new
  /// allocation takes one rather than growing its own from empty.
  std::vector<std::vector<std::uint64_t>> spare_owners_;
  /// How many owners lists a Room keeps as spares.
  static constexpr std::size_t kSpareOwners = 32;
  /// The room an owners list (or bury's union) takes at its first entry.
  static constexpr std::size_t kFirstOwners = 8;

 public:
  /// What a model leaves for the next one: its lists, empty, and its
  /// allocations' owners lists as spares, emptied. Capacity only: a model
  /// taking a Room empties every list it reuses; the per-byte lists'
  /// blocks (ByteArena) come with every list given back. Movable, opaque.
  class Room {
   public:
    Room() = default;

   private:
    friend class DeviceModel;
    std::vector<Allocation> allocations;
    std::vector<std::vector<std::uint64_t>> owners; ///< Spares, emptied.
    std::vector<std::size_t> held;
    std::vector<IdTable<Failure>::value_type> failures;
    std::vector<Logged> log;
    std::vector<Binding> log_bindings;
    std::string log_text;
    std::vector<Late> late;
    std::vector<std::uint64_t> checked;
    std::vector<PendingExchange> pending_exchanges;
    std::vector<std::uint64_t> scratch_ids;
    std::vector<Carriers> scratch_carriers;
    std::vector<std::uint64_t> scratch_owners;
    Bytes scratch_bytes;
    std::vector<std::uint64_t> scratch_named;
    std::vector<std::uint64_t> scratch_read_owners;
    std::vector<Binding> scratch_released;
    std::vector<const SkipRecord*> scratch_steps;
    ModelLaunch launch;
    ModelRead read;
    ByteArena bytes; ///< Its blocks, every list given back.
  };
};

/// "kernel: message" (or the kind's name when the message is empty), and a
/// note counting reported ranges that were ignored, then `suffix` (a late
/// failure's " (reported when the device synchronised)"): the error a
/// failed launch stores, as DESIGN.md's reports print it.
[[nodiscard]] Error named_error(std::string_view kernel, const Error& error,
                                std::size_t ignored_ranges, std::string_view suffix = {});

} // namespace taintpool::model
