// Device: the only way to touch buffers — launches, host writes, reads —
// with failures contained to the bytes they touched (§3.5, S1–S6, D1–D2),
// on any number of streams (O1–O4) from any number of threads (O5).
//
// A Device owns an ErrorGraph and a MemoryManager over a Backend's storage.
// Every operation that writes buffers runs as a *write scope*:
//
//   launch(stream, kernel, reads, writes, body)
//     1. check the stream and every binding (NotFound / InvalidBinding
//        throw; nothing claimed yet);
//     2. decide before claiming (S1): if any byte of any read binding has a
//        failure, SKIP — the body does not run, every write binding is
//        tainted with that root failure, a SkipRecord goes on the root, and
//        no failure is minted (S4); nothing is queued, so nothing is ordered;
//     3. else ORDER (O1, O2): every earlier access on another stream that
//        conflicts with a byte this launch binds, and is not yet ordered
//        before it, gets one event wait per source stream — or, in detect
//        mode, is reported as a race (O4) and no wait is queued;
//     4. ENTER: with an empty write set nothing is claimed; otherwise a
//        provisional TornDown failure claims every write binding, then the
//        body runs through the backend on the launch's stream:
//          success  → the write set is released (T2), or only the ranges a
//                     wrote_only outcome names, the rest keeping the state
//                     it had before (S6);
//          failure  → the real error replaces the provisional one (G4), the
//                     ranges the body reports written are released (S2);
//          throw    → the write set stays claimed by TornDown and the
//                     exception propagates (S3);
//        and the provisional node is pruned (G5) — it survives only where it
//        still claims bytes. Allocations made on another stream that the
//        launch bound are held until its stream's work completed (O3).
//   Only reads are checked (S5): a pure output is never checked, so
//   relaunching into a stale buffer, or writing it from the host, repairs
//   it. A binding that is both read and written is checked and claimed.
//
//   write(stream, binding, bytes)  a host write: a write scope whose body
//                                  copies in on the stream.
//   read(stream, binding, out)     D1: synchronizes, then copies out iff no
//                                  byte of the binding has a failure; else
//                                  returns one Report per distinct failure
//                                  (G9), each naming the root error, the
//                                  stale bytes and the path of skipped
//                                  launches (G8).
//   Every call without a stream runs on the default stream.
//
// Isolation (D2) follows: a launch is affected only through the bytes it
// reads, so work that shares no allocation with a failure never sees it —
// whatever stream it runs on.
//
// Streams (O1–O3). create_stream() makes a stream through the backend. An
// allocation belongs to the stream it was created on (its *home*); its
// memory, once it ends, is reused at once by that stream's next allocation
// and by no other until it goes back to storage (the pool's lanes). The
// Device derives the ordering between streams from the bindings, at byte
// grain (HappensBefore): a launch on B waits for A only if a byte it binds
// was written on A (or, if the launch writes it, read on A) by work not yet
// ordered before B — two launches on disjoint bytes never wait for each
// other. Nothing for the caller to forget: no record_stream, no manual
// event. With one stream, or a synchronous backend, none of this costs
// anything.
//
// Detect mode (O4, DeviceOptions::ordering). No wait is queued. Each
// unordered conflicting access is reported instead — the two launches,
// their streams and the bytes — as a Race failure on the reader's outputs
// (a launch that read bytes an unordered launch wrote; or, for a launch
// that wrote bytes an unordered launch read, that earlier reader's outputs
// and everything computed from them since), or on the bytes two unordered
// launches both wrote. A read of them then fails with that report.
//
// Threading (O5). Any number of threads may call a Device at once; one
// mutex serialises the calls, so each is atomic and they happen in one
// order, which is the order every rule above speaks of ("host order"). The
// body runs under the lock: a launch is one step. Why one lock and not finer
// ones: every launch touches the graph, and almost every one the allocation
// table and, with streams, the happens-before records — state shared by all
// streams — so finer locks would be taken by every launch anyway, and the
// cheapest correct design is one short critical section. The lock is a
// detail::BiasedMutex: the one thread that uses a Device takes it with plain
// stores and loads (no locked instruction; the bias), and once a second
// thread calls, the bias is revoked for good (one membarrier) and the lock
// is a detail::FastMutex (one compare-and-swap to take, one exchange to give
// back, inline; a waiter spins briefly, then sleeps on a futex): uncontended
// it costs the two atomic operations and nothing more. Contended, calls run one
// at a time: N threads launching on one Device share one launch rate (the
// host-side bookkeeping's, or, on the CUDA backend, the driver's launch
// call, which the body makes under the lock); bench/thread_bench.cpp and
// bench/gpu/stream_bench.cpp show the table for 1, 2, 4 and 8 threads. A body must not call its
// own Device (any call from inside a body throws std::logic_error: the lock
// is not reentrant and the scope is half done); a body should not call
// another Device either (two threads doing so in opposite directions
// deadlock). Allocation handles may be copied and dropped on any thread
// without the lock.
//
// Cost: a successful launch with a few bindings is a lock, one table lookup
// per binding, the read check, and the body's call — and allocates nothing
// once warmed up (G10). The common case takes a fast path at each step:
//   * resolving fills reused scratch by index, noting on the way whether a
//     read is stale, an output holds a claim, or a binding is homed on
//     another stream;
//   * with every output clean, the provisional failure is minted (G1) but
//     claims the write set only if the body fails or throws: a success
//     touches no taint (see enter()), and on the plain path below its node
//     is made only then (ErrorGraph::reserve_provisional);
//   * with no binding crossing streams and no cross-stream record, the work
//     only takes its place in its stream's queue: no plan, wait or pin;
//   * the launch log is not touched unless a late failure or a race may
//     need it (one virtual call to ask an asynchronous backend).
// The plain launch — every read and output clean, a body that succeeds,
// in detect mode also nothing to order across streams — runs flat, in one
// frame from the lock to the answer (launch_plain in device.cpp), and
// submit() answers it with a null LaunchVerdict instead of a LaunchResult:
// on HostBackend, 2 reads and 1 write, callgrind counts 446 instructions
// per launch() and 427 per submit() (the lock by its owner included), from
// 679 before the flat path (issue 11, item 7). Everything else leaves that
// path where it is first known, for the general scope, through a cold
// trampoline (device.cpp, cold_call), so its code is not among the plain
// path's lines.
// A launch through a LaunchPlan (plan(), device/launch_plan.hpp) takes the
// same path with its bindings resolved once, when the plan was made: per
// launch only the taints are read (one pass, planned_side in device.cpp),
// so the look-up, range check and pointer of every binding are gone from
// it, the body's context is the plan's (its number and name set in place),
// and the views the general scope reads are pointed at the plan's only off
// the clean plain path (adopt_views): 239 instructions per launch() and
// 220 per submit() in the shape above (issue 11, item 7; 281 and 262 with
// three streams, from 506 and 487 plainly).
// bench/launch_profile.cpp counts the instructions (bench/RESULTS.md). With
// a binding that crosses streams: a probe per binding, plus one event and
// one wait per stream it must wait for. The skip and failure paths allocate
// their records and messages.
#pragma once

#include <taintpool/detail/biased_mutex.hpp>
#include <taintpool/detail/fifo.hpp>
#include <taintpool/detail/scratch.hpp>
#include <taintpool/device/backend.hpp>
#include <taintpool/device/exchange.hpp>
#include <taintpool/device/launch.hpp>
#include <taintpool/device/launch_plan.hpp>
#include <taintpool/device/unwritten_reads.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/exception.hpp>
#include <taintpool/pool/allocation.hpp>
#include <taintpool/pool/memory_manager.hpp>
#include <taintpool/report.hpp>
#include <taintpool/stream/stream_table.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taintpool {

/// The answer to a read: empty reports mean the bytes were copied out.
struct ReadOutcome {
  std::vector<Report> reports; ///< One per distinct failure (G9).

  /// No reports: the bytes were copied out.
  [[nodiscard]] bool ok() const noexcept { return reports.empty(); }
  /// ok().
  [[nodiscard]] explicit operator bool() const noexcept { return ok(); }
};

/// Every report of a failed read, one after another.
[[nodiscard]] std::string to_string(const ReadOutcome& outcome);

/// Thrown by Device::read_bytes when the bytes cannot be trusted (D1). Its
/// Error has kind Unwritten and the full reports as its message.
class StaleRead : public Exception {
 public:
  /// Renders every report into the message (allocates: the failure path).
  explicit StaleRead(std::vector<Report> reports);
  /// One per distinct failure (G9), as Device::read would have returned.
  [[nodiscard]] const std::vector<Report>& reports() const noexcept { return reports_; }

 private:
  std::vector<Report> reports_;
};

/// How a Device orders work across its streams.
enum class StreamOrdering : std::uint8_t {
  Wait,   ///< O1: queue an event wait for every unordered conflicting access.
  Detect, ///< O4: queue none; report every unordered conflicting access as a Race.
};

/// How a Device is built (all optional).
struct DeviceOptions {
  /// The pools; default: the backend's memory_config().
  std::optional<MemoryConfig> memory;
  /// Wait (the default) or Detect.
  StreamOrdering ordering = StreamOrdering::Wait;
  /// N2, under FreshBytes::NeverWritten (memory's fresh_bytes): a launch
  /// that reads never-written bytes is skipped (the default) or runs and
  /// reports them in LaunchResult::unwritten.
  UnwrittenReads unwritten_reads = UnwrittenReads::Skip;
};

/// The only way to touch buffers (see above). Owns its graph and memory;
/// borrows the backend, which must outlive it. Not copyable or movable.
/// Every public member but graph(), memory() and backend() is thread-safe.
///
/// Aligned to a cache line, with what every launch reads first among its
/// members (below): beside real launches the driver's work evicts the
/// Device between two scopes, and the fields a clean launch reads were
/// spread over nine lines (issue 11, item 7; bench/RESULTS.md, launch12).
class alignas(64) Device {
 public:
  /// Uses the backend's storage and its default memory configuration.
  explicit Device(Backend& backend);
  /// Uses the backend's storage with `config`; std::invalid_argument if the
  /// config does not fit the storage.
  Device(Backend& backend, MemoryConfig config);
  /// As configured by `options`.
  Device(Backend& backend, DeviceOptions options);
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  /// Finishes every stream's work and destroys the streams it created.
  ~Device();

  /// Makes this Device what `Device(backend(), options)` would be if it were
  /// destroyed and built again in its place, with the options it was built
  /// with, while keeping the capacity of what it allocated for itself.
  /// Why: a caller that runs many independent jobs on one backend — a fuzz
  /// input, a test case, a request — and wants each to start from nothing
  /// paid a Device built per job: its pools' lanes, the graph's table, the
  /// scratch and the launch log, allocated again each time (83 heap
  /// allocations per device_fuzzer input, issue 13).
  ///
  /// Guarantees, observably as a fresh Device: every stream's work is
  /// finished and the streams it created are destroyed; the Device takes a
  /// new serial, so its default stream is a new StreamId, and a StreamId or
  /// LaunchPlan from before names another Device (NotFound;
  /// std::invalid_argument); every live allocation ends as
  /// MemoryManager::restart() ends it — its handles, which may live on, see
  /// NotFound — and every page goes back to the storage (P1); allocation
  /// ids start again at the first of the id space the memory takes, failure
  /// ids at 1 (the graph is emptied, R4), launch numbers at 1; memory and
  /// stream statistics are 0; nothing is logged, named or held. Late
  /// failures the backend still reports for launches made before are taken
  /// and dropped: the bytes they concerned are gone, and a later
  /// synchronize() must not pin them on the launch that now has their
  /// number. The backend itself is not reset (a DeferredHostBackend's
  /// scheduling seed, for one, goes on as it was).
  ///
  /// Cost: a synchronize's wait and a backend synchronize, the graph's
  /// table and the pools walked once (MemoryManager::restart,
  /// ErrorGraph::clear), and the stream table restarted in place
  /// (StreamTable::restart: the streams it made destroyed, its lists
  /// emptied); everything keeps its capacity, so a reset Device's next job
  /// allocates only what it keeps as state.
  ///
  /// Throws std::logic_error when called from a body (as every call does)
  /// and what finishing the streams or the backend's synchronize throws,
  /// std::bad_alloc included: then nothing has changed. Past those nothing
  /// needs memory (the log's spares are topped up only where memory allows),
  /// so running out of it cannot stop a reset half-way.
  /// Also std::logic_error if a failure is still tagged once every
  /// allocation ended — tagged through graph() by the caller, bypassing
  /// the scopes (R1): the memory and streams are fresh then, the graph is
  /// left as it was.
  void reset();

  // ---------------------------------------------------------------- streams

  /// The stream every call without one runs on.
  [[nodiscard]] StreamId default_stream() const noexcept { return streams_.default_stream(); }
  /// A new stream, made by the backend (O1). Throws Exception when the
  /// backend cannot make one, when StreamTable::max_streams are live, or
  /// once 2^32 - 1 streams were made (numbers are never reused).
  /// The first waits for the default stream's queued work: a Device with
  /// one stream orders nothing and so records nothing to order by.
  [[nodiscard]] StreamId create_stream();
  /// Waits for the stream's work, then frees it; its allocations live on
  /// (their memory is reused by the next stream made). NotFound for a
  /// stream not live on this Device; std::invalid_argument for the default.
  void destroy_stream(StreamId stream);
  /// Counters: streams made, waits and events queued, races found, pins.
  [[nodiscard]] StreamStats stream_stats();

  // ---------------------------------------------------------------- buffers

  /// A new buffer of `size` bytes on the default stream. Fresh memory
  /// counts as written (D1): it carries no failure, whatever bytes it holds.
  /// Throws as MemoryManager::allocate does (BufferTooBig, OutOfMemory).
  [[nodiscard]] Allocation create_buffer(std::uint64_t size) {
    return create_buffer(size, default_stream());
  }
  /// A new buffer whose home is `stream` (O3): its memory comes from, and
  /// goes back to, that stream's lane. Never blocks the host, except as the
  /// last step before OutOfMemory: then every stream is finished, held
  /// allocations released, and the allocation tried once more.
  [[nodiscard]] Allocation create_buffer(std::uint64_t size, StreamId stream);
  /// As above, naming the creating site (a label, or file:line): under
  /// FreshBytes::NeverWritten a report of the buffer's never-written bytes
  /// says where it was created (N3). Stored only in that mode (cold: one
  /// map entry); otherwise ignored.
  [[nodiscard]] Allocation create_buffer(std::uint64_t size, std::string_view site) {
    return create_buffer(size, default_stream(), site);
  }
  /// As above, on `stream`.
  [[nodiscard]] Allocation create_buffer(std::uint64_t size, StreamId stream,
                                         std::string_view site);

  /// A new buffer holding `bytes` (a create and a host write). A failed copy
  /// is not thrown: the buffer comes back carrying the copy's error, and a
  /// read of it reports that (D1).
  [[nodiscard]] Allocation create_buffer(std::span<const std::byte> bytes) {
    return create_buffer(bytes, default_stream());
  }
  /// As above, on `stream`.
  [[nodiscard]] Allocation create_buffer(std::span<const std::byte> bytes, StreamId stream);

  /// A host write into `into` on the default stream (S5: repairs stale
  /// bytes). `bytes` must be exactly the binding's size (InvalidBinding
  /// otherwise). A failed copy leaves the binding carrying the copy's error,
  /// as a failed launch would.
  LaunchResult write(const Binding& into, std::span<const std::byte> bytes) {
    return write(default_stream(), into, bytes);
  }
  /// As above, on `stream`, ordered after conflicting work on others (O1).
  LaunchResult write(StreamId stream, const Binding& into, std::span<const std::byte> bytes);

  // ---------------------------------------------------------------- launches

  /// S1–S6, O1–O4 on the default stream. Throws Exception(NotFound /
  /// InvalidBinding) for a bad binding or stream before anything is
  /// claimed; rethrows a body's exception after S3. Throws std::logic_error
  /// if called from a body on the same device. Allocation-free once warm on
  /// the success path (G10), unless an asynchronous backend has unconfirmed
  /// launches to log or the Device is in detect mode.
  LaunchResult launch(std::string_view kernel, std::span<const Binding> reads,
                      std::span<const Binding> writes, KernelBody body) {
    return launch(default_stream(), kernel, reads, writes, body);
  }
  /// As above, on `stream`.
  LaunchResult launch(StreamId stream, std::string_view kernel, std::span<const Binding> reads,
                      std::span<const Binding> writes, KernelBody body);
  /// As above, with the bindings listed inline.
  LaunchResult launch(std::string_view kernel, std::initializer_list<Binding> reads,
                      std::initializer_list<Binding> writes, KernelBody body) {
    return launch(default_stream(), kernel, reads, writes, body);
  }
  /// As above, on `stream`, with the bindings listed inline.
  LaunchResult launch(StreamId stream, std::string_view kernel,
                      std::initializer_list<Binding> reads, std::initializer_list<Binding> writes,
                      KernelBody body) {
    return launch(stream, kernel, std::span<const Binding>(reads.begin(), reads.size()),
                  std::span<const Binding>(writes.begin(), writes.size()), body);
  }

  /// launch(), answering with a LaunchVerdict: a null pointer when the
  /// launch ran with nothing to report, the whole LaunchResult otherwise.
  /// The same rules, the same errors and exceptions, the same state after;
  /// only the answer's shape differs (see LaunchVerdict: on the success
  /// path it saves building and destroying a LaunchResult). Allocation-free
  /// when it ran with nothing to report, as launch() is (G10).
  LaunchVerdict submit(StreamId stream, std::string_view kernel, std::span<const Binding> reads,
                       std::span<const Binding> writes, KernelBody body);
  /// As above, on the default stream.
  LaunchVerdict submit(std::string_view kernel, std::span<const Binding> reads,
                       std::span<const Binding> writes, KernelBody body) {
    return submit(default_stream(), kernel, reads, writes, body);
  }
  /// As above, with the bindings listed inline.
  LaunchVerdict submit(std::string_view kernel, std::initializer_list<Binding> reads,
                       std::initializer_list<Binding> writes, KernelBody body) {
    return submit(default_stream(), kernel, reads, writes, body);
  }
  /// As above, on `stream`, with the bindings listed inline.
  LaunchVerdict submit(StreamId stream, std::string_view kernel,
                       std::initializer_list<Binding> reads, std::initializer_list<Binding> writes,
                       KernelBody body) {
    return submit(stream, kernel, std::span<const Binding>(reads.begin(), reads.size()),
                  std::span<const Binding>(writes.begin(), writes.size()), body);
  }

  // ---------------------------------------------------------------- plans

  /// A launch plan (device/launch_plan.hpp): the bindings checked and
  /// resolved once, for launches on `stream` through launch(plan, ...) and
  /// submit(plan, ...). Throws as launch() does for a bad stream or binding
  /// (NotFound, InvalidBinding; nothing held). The plan holds a handle per
  /// binding, so its buffers live as long as it does.
  [[nodiscard]] LaunchPlan plan(StreamId stream, std::span<const Binding> reads,
                                std::span<const Binding> writes);
  /// As above, on the default stream.
  [[nodiscard]] LaunchPlan plan(std::span<const Binding> reads, std::span<const Binding> writes) {
    return plan(default_stream(), reads, writes);
  }
  /// As above, with the bindings listed inline.
  [[nodiscard]] LaunchPlan plan(StreamId stream, std::initializer_list<Binding> reads,
                                std::initializer_list<Binding> writes) {
    return plan(stream, std::span<const Binding>(reads.begin(), reads.size()),
                std::span<const Binding>(writes.begin(), writes.size()));
  }
  /// launch(plan.stream(), kernel, plan.reads(), plan.writes(), body), with
  /// the bindings' look-ups, range checks and pointers taken from the plan:
  /// the same rules, answers, errors and state after (S1-S6, O1-O5,
  /// N1-N2), only cheaper. std::invalid_argument for a plan this Device did
  /// not make (or a moved-from one); NotFound once its stream is destroyed.
  LaunchResult launch(const LaunchPlan& plan, std::string_view kernel, KernelBody body);
  /// submit() through a plan: as launch(plan, ...), answered as a
  /// LaunchVerdict.
  LaunchVerdict submit(const LaunchPlan& plan, std::string_view kernel, KernelBody body);

  // ---------------------------------------------------------------- exchanges

  /// C1-C5: an exchange on `stream` (device/exchange.hpp) — the Device's
  /// half of a collective. As launch(), except that the reads are ordered
  /// and held but never checked: the body always runs, and is told which
  /// input bytes are stale and why; what it says back decides which output
  /// bytes carry which failure. Returns Ran when the body returned (whatever
  /// its outputs now carry), Failed when the backend turned the run into a
  /// failure. Throws as launch() does (bad binding or stream, before anything
  /// is claimed; a body's exception after S3); std::logic_error when the
  /// body's outcome names bytes outside its outputs or a failure it was not
  /// given (the write set then stays claimed by TornDown).
  LaunchResult exchange(StreamId stream, std::string_view kernel, std::span<const Binding> reads,
                        std::span<const Binding> writes, ExchangeBody body);

  /// Whether some byte of `reads` may still be found stale by a late
  /// failure: written by a launch the backend has not confirmed
  /// (Backend::unconfirmed), or computed since from such bytes by launches
  /// that ran. A collective asks this before it summarizes its inputs (C2),
  /// and synchronizes first when the answer is yes. Walks the launches
  /// logged since the oldest unconfirmed one; false at once when none is.
  /// Throws as a launch does for a bad binding.
  [[nodiscard]] bool awaits_verdict(std::span<const Binding> reads);

  // ---------------------------------------------------------------- reads

  /// D1: copies the binding's bytes into `into` (exactly its size) iff none
  /// has a failure; otherwise copies nothing and returns the reports. A
  /// device error while copying throws Exception, as do a bad binding
  /// (NotFound, InvalidBinding) and an `into` of another size. Synchronizes
  /// first (every stream), so a late failure is attributed before the check
  /// and every write to the bytes has completed.
  [[nodiscard]] ReadOutcome read(const Binding& from, std::span<std::byte> into) {
    return read(default_stream(), from, into);
  }
  /// As above, copying on `stream`.
  [[nodiscard]] ReadOutcome read(StreamId stream, const Binding& from, std::span<std::byte> into);

  /// D1, as a value: the bytes, or StaleRead with the reports. Checks the
  /// binding before it allocates the result: a bad one throws NotFound or
  /// InvalidBinding (P3) whatever range it names, never std::bad_alloc.
  [[nodiscard]] std::vector<std::byte> read_bytes(const Binding& from) {
    return read_bytes(default_stream(), from);
  }
  /// As above, copying on `stream`.
  [[nodiscard]] std::vector<std::byte> read_bytes(StreamId stream, const Binding& from);

  /// The reports a read of `from` would return, without copying (D1, G8, G9).
  /// Synchronizes first; empty when the bytes are good.
  [[nodiscard]] std::vector<Report> stale_reports(const Binding& from);

  /// Waits for queued work and attributes every failure a checked kernel
  /// reported late (an asynchronous backend): the failed launch's unfinished
  /// outputs, and the outputs of every launch that has since run on those
  /// bytes, take a new failure whose report names the path (records with
  /// `ran` set). Reads call this first. A no-op on the host backend.
  /// Out of memory here throws std::bad_alloc with R1–R4 intact; the late
  /// failures not yet attributed stay queued, and the next call (every read
  /// makes one) attributes them, so none is lost.
  /// Every stream's work is waited for first, so allocations held for a
  /// stream are released (O3).
  void synchronize();

  /// Discover dropped buffers now (their error state goes with them, P1).
  void sweep();
  /// sweep(), and give free pages back to the storage.
  void cleanup();

  /// The device's own parts, for tests and diagnostics; not locked.
  /// Tagging, tainting or resetting through them bypasses the scopes: R1 and
  /// D1 are then the caller's to keep.
  [[nodiscard]] ErrorGraph& graph() noexcept { return graph_; }
  [[nodiscard]] MemoryManager& memory() noexcept { return memory_; }
  /// N2: what a launch does with never-written input (DeviceOptions);
  /// collectives follow it for their exchanges.
  [[nodiscard]] UnwrittenReads unwritten_reads() const noexcept { return unwritten_reads_; }
  [[nodiscard]] Backend& backend() noexcept { return backend_; }

  /// The graph's and the memory's own invariants, R1–R3 across every slice
  /// (no scope is open between calls, so every node must be tagged), and the
  /// stream bookkeeping's shape.
  void check_invariants();

 private:
  class Lock;
  struct HeldClaims;

  /// reset(): every list a scope or the log fills emptied (capacity kept),
  /// every counter and flag as the constructor sets it.
  void clear_scope_lists() noexcept;
  /// reset(): the stream table restarted in place for a new serial
  /// (StreamTable::restart). Allocates nothing, so it cannot fail.
  void restart_streams() noexcept;

  /// A launch whose outcome an asynchronous backend has not yet confirmed,
  /// or, in detect mode, whose work is not yet known complete — and any
  /// launch after one: what a late failure's or a race's replay needs.
  struct LoggedLaunch {
    std::uint64_t launch;
    std::string kernel;
    LaunchStatus status; ///< Ran: its outputs were released (until proven garbage).
    std::vector<Binding> reads;
    std::vector<Binding> writes;
    /// Failed with S2 ranges: the bytes it reported written. If it read
    /// bytes a late failure makes stale, they were written from garbage.
    std::vector<Binding> released;
    StreamPoint work; ///< Its place on its stream (seq 0: it queued nothing).
    /// S6: its body named the only bytes it wrote (`named`, a wrote_only
    /// outcome); every other byte of its write set kept the writer it had
    /// before, so a replay passes over those bytes and they keep whatever
    /// staleness they had. False: it covered its whole write set (wrote it,
    /// or claimed it with its own failure or a skip's root).
    bool named_only;
    std::vector<Binding> named;

    /// The bytes it produced or claimed: what a replay adds to the stale
    /// set when it ran on garbage, and takes out of it otherwise.
    [[nodiscard]] const std::vector<Binding>& covered() const noexcept {
      return named_only ? named : writes;
    }
  };

  /// What resolving one side of a launch found, for the fast paths: a read
  /// with a failure or an output with a claim (`dirty`: the general path
  /// decides), a binding homed on another stream (`crosses`: ordering must
  /// plan).
  struct Resolved {
    bool dirty = false;
    bool crosses = false;
    /// Outputs only: every dirty output's claims are all the never-written
    /// node's, inside its binding (a fresh buffer's first write, N1) — what
    /// outputs_fresh() says, noted while each taint is read anyway.
    bool fresh = true;
  };
  /// How launch_plain() ended: the plain success; not plain, found before
  /// anything was done (the caller runs launch_resolved from the resolved
  /// bindings); or the body ran and did not simply succeed, the whole
  /// answer then in finished_.
  enum class PlainEnd : std::uint8_t { Ran, General, Finished };
  /// The common launch, flat (device.cpp, "the plain launch"): resolves, and
  /// if every read is clean, every output clean or only never-written
  /// (a fresh buffer's first write, N1) and nothing crosses streams, runs
  /// the body with no frame of its own and builds no LaunchResult; hands
  /// anything else to the general path at the point it is known.
  /// With `plan` (not null), the bindings come resolved from it
  /// (planned_side) instead of the id table (resolve_side).
  PlainEnd launch_plain(std::uint32_t slot, std::string_view kernel, std::span<const Binding> reads,
                        std::span<const Binding> writes, KernelBody body, Resolved& in,
                        Resolved& out, const LaunchPlan* plan);
  /// The flat path from the launch's id on: plain (queued only) or, out
  /// of line through launch_not_plain(), ordered (planned, waited, pinned and
  /// committed, O1-O3) in ordering mode. `ordering`: ordering_active(),
  /// as the caller found it; `fresh`: plain only (N1); `plan`: the plan the
  /// launch goes through, whose context it copies and whose views it adopts
  /// at its cold ends (adopt_views), or null.
  template <bool Plain>
  PlainEnd run_flat(std::uint32_t slot, std::string_view kernel, std::span<const Binding> reads,
                    std::span<const Binding> writes, KernelBody body, bool ordering, bool fresh,
                    const LaunchPlan* plan);
  /// Where launch_plain() found the launch not plain: run_flat<false> for
  /// clean bindings in ordering mode (they cross streams, or meet
  /// cross-stream records), else launch_resolved(). Out of line, so the
  /// plain path's frame does not carry it.
  template <class Answer>
  Answer launch_not_plain(std::uint32_t slot, std::string_view kernel,
                          std::span<const Binding> reads, std::span<const Binding> writes,
                          KernelBody body, Resolved in, Resolved out);
  /// The plain path's body threw (S3): tears down, queues, logs, rethrows.
  [[noreturn]] void abandon_plain(std::uint32_t slot, std::uint64_t launch, std::string_view kernel,
                                  std::span<const Binding> reads, std::span<const Binding> writes,
                                  std::optional<FailureId> provisional);
  /// The plain path's body failed or named what it wrote (S1, S2, S6);
  /// `fresh`: the outputs held only never-written claims (N1).
  LaunchResult finish_plain(std::uint32_t slot, std::uint64_t launch, std::string_view kernel,
                            std::span<const Binding> reads, std::span<const Binding> writes,
                            std::optional<FailureId> provisional, const LaunchOutcome& outcome,
                            bool fresh);
  /// Queues the plain path's work and logs the launch as `status` (its
  /// cold ends share it).
  void queue_and_log(std::uint32_t slot, std::uint64_t launch, std::string_view kernel,
                     std::span<const Binding> reads, std::span<const Binding> writes,
                     LaunchStatus status);
  /// A wrote_only success on never-written outputs: releases the ranges the
  /// body named (N1, S6); on running out of memory, prunes, queues, logs and
  /// rethrows.
  void release_plain_fresh(std::uint32_t slot, std::uint64_t launch, std::string_view kernel,
                           std::span<const Binding> reads, std::span<const Binding> writes,
                           FailureId provisional, const LaunchOutcome& outcome);
  /// launch() and submit(): the lock, the plain path, and its three ends
  /// answered as `Answer` (LaunchResult or LaunchVerdict).
  template <class Answer>
  Answer launch_as(const char* call, StreamId stream, std::string_view kernel,
                   std::span<const Binding> reads, std::span<const Binding> writes, KernelBody body,
                   const LaunchPlan* plan);
  /// The general scope from resolved bindings on (every case).
  LaunchResult launch_resolved(std::uint32_t slot, std::string_view kernel,
                               std::span<const Binding> reads, std::span<const Binding> writes,
                               KernelBody body, Resolved in, Resolved out);
  /// The whole scope, under the lock, with the stream's slot resolved.
  LaunchResult launch_locked(std::uint32_t slot, std::string_view kernel,
                             std::span<const Binding> reads, std::span<const Binding> writes,
                             KernelBody body);
  /// O1-O4 before entering: waits queued (or races noted), pins taken.
  void order(std::uint32_t slot, std::uint64_t launch);
  /// O1-O3 after entering: the work's accesses recorded, pins handed over.
  void commit(std::uint32_t slot, std::uint64_t launch);
  /// O4: the Race failure of the current launch's RAW/WAW hazards.
  void taint_races(std::string_view kernel, std::uint32_t slot, std::uint64_t launch,
                   LaunchResult& result);
  /// Appends the earlier work a race names ("launch 3 (\"fill\") on
  /// stream 1") to `text`: the race messages are built in one string.
  void append_work(std::string& text, const StreamPoint& point) const;
  [[nodiscard]] bool ordering_active() const noexcept {
    return streams_.several() && !streams_.synchronous();
  }
  void log_if_unconfirmed(std::uint64_t launch, std::string_view kernel,
                          std::span<const Binding> reads, std::span<const Binding> writes,
                          LaunchStatus status, StreamPoint work);
  [[nodiscard]] std::optional<std::uint64_t> oldest_needed_launch() const;
  void trim_log();
  void attribute(const LateFailure& late);
  /// Attributes unattributed_ from the back (the oldest launch) until empty.
  void attribute_queued();
  void synchronize_locked();
  [[nodiscard]] ReadOutcome read_locked(std::uint32_t slot, const Binding& from,
                                        std::span<std::byte> into);
  [[nodiscard]] std::vector<Report> stale_reports_locked(const Binding& from);
  /// N1: every output is clean, or holds only never-written bytes that lie
  /// within that output's binding, inline — so the fast path can release
  /// them on success and claim over them on failure without allocating.
  [[nodiscard]] bool outputs_fresh() const noexcept;
  /// N2 under UnwrittenReads::Report: the root a read binding skips on —
  /// its lowest-offset claim of a failure other than NeverWritten — noting
  /// its never-written bytes in `unwritten` on the way.
  [[nodiscard]] std::optional<FailureId> stale_read_root(std::size_t index, FailureId never_written,
                                                         std::vector<UnwrittenRead>& unwritten);
  /// N3: a NeverWritten report's root message becomes the origin's creating
  /// site, when its creator gave one.
  void name_creation_site(Report& report) const;
  /// Both sides' bindings into the scratch, as a launch does, out of line.
  void resolve_bindings(std::span<const Binding> reads, std::span<const Binding> writes,
                        std::uint32_t slot);
  /// Checks and resolves every binding, reads then writes, into one run of
  /// each scratch (bound_store_, taint_store_, and access_store_ when
  /// `ordering`), noting what each side found in `in` and `out`; throws
  /// NotFound / InvalidBinding for a bad one, nothing claimed. With `Views`
  /// it points the views at them too (point_views); the plain launch does
  /// not, since its clean path reads none of them (issue 11, item 7).
  template <bool Views>
  void resolve_all(std::span<const Binding> reads, std::span<const Binding> writes,
                   std::uint32_t slot, bool ordering, Resolved& in, Resolved& out);
  /// One side of resolve_all(), into `bound`, `taints` and `accesses`
  /// (null unless ordering).
  template <bool Reading>
  Resolved resolve_side(std::span<const Binding> bindings, std::uint32_t slot, bool ordering,
                        BoundBuffer* bound, Taint** taints, StreamAccess* accesses);
  /// Points the views at what resolve_all() filled for a launch of `reads`
  /// read and `writes` write bindings.
  void point_views(std::size_t reads, std::size_t writes, bool ordering) noexcept;
  /// resolve_side() from a plan: checks only the taints (the look-ups and range checks were the
  /// plan's); `clean`: every taint of the plan is, so there is nothing to note.
  template <bool Reading>
  Resolved planned_side(const LaunchPlan& plan, bool ordering, bool clean);
  /// Points the views (reads_, writes_, their taints and accesses) at
  /// `plan`'s, as resolve_all() would fill them; for null, at what
  /// resolve_all() filled for `reads` and `writes` bindings (point_views). A
  /// plain launch, planned or not, does so only where it leaves the clean
  /// plain path.
  void adopt_views(const LaunchPlan* plan, bool ordering, std::size_t reads,
                   std::size_t writes) noexcept;
  /// One binding's taint that is not clean, as resolve_side() and
  /// planned_side() note it: a read is dirty when a claim lies in its range
  /// (S1); an output when it holds any claim (S6), fresh while every such
  /// claim is N1's.
  template <bool Reading>
  void note_taint(Resolved& found, const Taint& taint, ByteRange range) const;
  LaunchResult skip(std::string_view kernel, FailureId root, AllocationId needed);
  /// The scope from the claim on (S1-S3, S6); `outputs_clean`: no output
  /// holds a claim (the fast path may defer the provisional one).
  LaunchResult enter(std::uint32_t slot, std::uint64_t launch, std::string_view kernel,
                     KernelBody body, bool outputs_clean, bool outputs_fresh);
  /// The deferred claim of the fast path (every output clean): cannot
  /// allocate or throw.
  void claim_write_set(FailureId provisional);
  /// N1, S6: a successful fresh-path launch releases what it wrote: the
  /// write set, or a wrote_only outcome's valid named ranges. T2 on a
  /// split claim may spill (std::bad_alloc; the rest stays never-written).
  void release_fresh_outputs(const LaunchOutcome& outcome);
  /// N1: a whole write of outputs whose every claim is the never-written
  /// node's and inside its binding (outputs_fresh) releases exactly what
  /// clear() releases (T2 = T4); clear() cannot fail (it frees a spilled
  /// array, never allocates), so there is nothing to undo.
  static void clear_fresh_outputs(std::span<Taint* const> outputs, ErrorGraph& graph) noexcept;
  /// A wrote_only outcome's valid, non-empty named ranges into named_ (S6).
  void note_named_ranges(const LaunchOutcome& outcome);
  /// S1, S2: the failure a body returned replaces `provisional`.
  LaunchResult failed(FailureId provisional, std::string_view kernel, const LaunchOutcome& outcome);
  /// S3, inside the handler of a body's exception: `provisional` becomes a
  /// TornDown naming the kernel and the exception, and is pruned.
  void tear_down(FailureId provisional, std::string_view kernel) noexcept;
  /// O1-O3: the work's place on its stream (recorded; or, plain, only counted).
  StreamPoint queue_work(std::uint32_t slot, std::uint64_t launch, bool plain);
  /// Logs the launch if a late failure or a race may still need it; the
  /// common case decides without touching the log. `Clean`: the scope
  /// released and named nothing and did not clear released_ and named_
  /// (the plain path's success), so they are emptied first when it logs.
  /// `plan`: the launch went through it and was given no bindings (they
  /// are the plan's, looked up only if it logs).
  template <bool Clean = false>
  void log_launch(std::uint64_t launch, std::string_view kernel, std::span<const Binding> reads,
                  std::span<const Binding> writes, LaunchStatus status, StreamPoint work,
                  const LaunchPlan* plan = nullptr);
  /// Runs the body, marking this thread as inside one of this Device's bodies.
  LaunchOutcome run_body(KernelBody body, const KernelContext& context);
  /// C1-C5 (device_exchange.cpp): the exchange's scope under the lock.
  LaunchResult exchange_locked(std::uint32_t slot, std::string_view kernel,
                               std::span<const Binding> reads, std::span<const Binding> writes,
                               ExchangeBody body);
  LaunchResult enter_exchange(std::uint32_t slot, std::uint64_t launch, std::string_view kernel,
                              ExchangeBody body);
  /// C2: stale_inputs_ and input_reports_ from the resolved reads; every
  /// failure among them held (one tag) in input_held_ until the outcome is
  /// applied, since an in-place exchange's provisional claim could end it.
  void collect_stale_inputs();
  void drop_input_holds() noexcept;
  /// C4: checks the body's outcome against the scope; throws logic_error.
  void check_exchange_outcome(const ExchangeOutcome& outcome) const;
  [[nodiscard]] bool awaits_verdict_locked(std::span<const Binding> reads);
  /// S6: the write set's claims before the scope, held alive (see enter()).
  void hold_prior_claims();
  void restore_prior_claims(const LaunchOutcome& outcome);
  void drop_prior_claims() noexcept;

  Backend& backend_;
  void* backend_data_; ///< backend_.backend_data(), asked once (it is fixed: backend.hpp).
  bool reports_late_;  ///< backend_.reports_late_failures(), asked once.
  StreamOrdering ordering_;
  UnwrittenReads unwritten_reads_; ///< N2.
  std::uint32_t serial_;           ///< Process-wide, so StreamIds name their Device.
  detail::BiasedMutex mutex_;      ///< O5: the one lock (see Threading above).
  // Read by every launch, so beside the lock and the graph's inline slots
  // (the Device's first two lines), not among the cold members below.
  std::uint64_t next_launch_ = 1;
  detail::Fifo<LoggedLaunch> log_; // Nothing allocated until a launch is logged.
  ErrorGraph graph_; // Declared before memory_: the memory clears taints into it on destruction.
  MemoryManager memory_;
  // After memory_: its pins are handles into it, dropped first. reset()
  // restarts it in place (StreamTable::restart).
  StreamTable streams_;
  // The current launch's bindings, resolved (views of the scratch below,
  // which is reused across launches: no allocation once warm, G10). Set by
  // resolve_all<true>, or by adopt_views() where a plain launch leaves the
  // clean path; a clean plain launch leaves them as they were — possibly
  // pointing at scratch since grown and freed — since nothing on its path
  // reads them, and every scope that does sets them first (twelve stores a
  // launch, issue 11, item 7).
  std::span<const BoundBuffer> reads_;
  std::span<const BoundBuffer> writes_;
  std::span<Taint* const> read_taints_;
  std::span<Taint* const> write_taints_;
  std::span<const StreamAccess> read_accesses_;  ///< Filled only while ordering_active().
  std::span<const StreamAccess> write_accesses_; ///< Likewise.
  // Reads first, then writes, in one run of each: one capacity check per
  // array a launch, not one per side.
  detail::Scratch<BoundBuffer> bound_store_;
  detail::Scratch<Taint*> taint_store_;
  detail::Scratch<StreamAccess> access_store_;
  std::vector<Hazard> hazards_;
  /// O3: a binding's pin, taken in order() and handed to streams_ in
  /// commit(): a new handle, or none when the stream's newest pin at that
  /// point of the sequence already holds the allocation (pin_again).
  struct PinTaken {
    AllocationId id;
    Allocation held; ///< Empty: move the newest pin on.
  };
  std::vector<PinTaken> pins_;
  /// S6: (write binding, allocation-relative bytes, failure) of each claim
  /// the write set held before the scope; each failure holds one tag.
  struct PriorClaim {
    std::uint32_t output;
    ByteRange bytes;
    FailureId failure;
  };
  std::vector<PriorClaim> prior_;
  std::vector<FailureId> prior_held_;
  // The current launch's S2 ranges, for the log. Like named_only_ and
  // named_, not cleared by a clean plain launch (see run_flat).
  std::vector<Binding> released_;
  // S6: the current launch's body named the only bytes it wrote, named_.
  bool named_only_ = false;
  std::vector<Binding> named_;
  /// Entries trim_log() retired, refilled by log_if_unconfirmed (their
  /// capacity only; every field is set again). At most kSpareLog, reserved
  /// once, so retiring an entry never allocates and cannot throw.
  std::vector<LoggedLaunch> spare_log_;
  static constexpr std::size_t kSpareLog = 16;
  /// Room an entry's list (and kernel name) gets when it must allocate, so
  /// a spare refilled by a launch of up to kLogListRoom bindings a side
  /// never grows again: spares come back in another order than they went,
  /// and each growth of one was an allocation a later job paid — a job run
  /// on a Device kept across jobs by reset() then ends with its heap grown
  /// (see clear_scope_lists; a leak monitor, libFuzzer's leak check among
  /// them, flags such a job). No more blocks than an exact fit: only their
  /// size differs.
  static constexpr std::size_t kLogListRoom = 4;
  static constexpr std::size_t kLogKernelRoom = 48;
  // C2: the current exchange's stale inputs, their reports, the failures held.
  std::vector<StaleInput> stale_inputs_;
  std::vector<Report> input_reports_;
  /// The first input_reports_used_ are this exchange's; the rest are kept
  /// for their capacity and refilled by later exchanges.
  std::size_t input_reports_used_ = 0;
  // enter_exchange's lists (the carried (failure, input) pairs recorded, an
  // output's stale and clean ranges), emptied per use and kept for capacity.
  std::vector<std::pair<FailureId, std::uint32_t>> exchange_recorded_;
  std::vector<ByteRange> exchange_stale_;
  std::vector<ByteRange> exchange_clean_;
  std::vector<FailureId> input_held_;
  /// awaits_verdict's replay of the log: the bytes that may still turn out
  /// stale. Cleared per call and kept for its capacity (issue 13: a list
  /// per call, and one more per logged write it cut, was a collective's
  /// allocation whenever its input had been written by a logged launch).
  std::vector<Binding> suspect_;
  /// Late failures taken from the backend and not yet attributed, newest
  /// first: empty except after synchronize() threw (out of memory); the
  /// next call attributes them before it asks the backend for more.
  std::vector<LateFailure> unattributed_;
  /// The answer of a launch that left the plain path (moved out at once).
  LaunchResult finished_;
  /// Whether the flat path's launch under way is plain (queued only) or
  /// ordered (planned, and committed when queued): its cold ends ask.
  /// launch_not_plain() clears it while it runs.
  bool plain_work_ = true;
  CreationSites sites_; ///< N3: named creating sites (FreshBytes::NeverWritten only).
};

} // namespace taintpool
