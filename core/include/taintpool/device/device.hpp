// Device: the only way to touch buffers — launches, host writes, reads —
// with failures contained to the bytes they touched (§3.5, S1–S5, D1–D2).
//
// A Device owns an ErrorGraph and a MemoryManager over a Backend's storage.
// Every operation that writes buffers runs as a *write scope*:
//
//   launch(kernel, reads, writes, body)
//     1. check every binding (NotFound / InvalidBinding throw; nothing
//        claimed yet);
//     2. decide before claiming (S1): if any byte of any read binding has a
//        failure, SKIP — the body does not run, every write binding is
//        tainted with that root failure, a SkipRecord goes on the root, and
//        no failure is minted (S4);
//     3. else ENTER: with an empty write set nothing is claimed; otherwise a
//        provisional TornDown failure claims every write binding, then the
//        body runs through the backend:
//          success  → the write set is released (T2);
//          failure  → the real error replaces the provisional one (G4), the
//                     ranges the body reports written are released (S2);
//          throw    → the write set stays claimed by TornDown and the
//                     exception propagates (S3);
//        and the provisional node is pruned (G5) — it survives only where it
//        still claims bytes.
//   Only reads are checked (S5): a pure output is never checked, so
//   relaunching into a stale buffer, or writing it from the host, repairs
//   it. A binding that is both read and written is checked and claimed.
//
//   write(binding, bytes)  a host write: a write scope whose body copies in.
//   read(binding, out)     D1: copies out iff no byte of the binding has a
//                          failure; else returns one Report per distinct
//                          failure (G9), each naming the root error, the
//                          stale bytes and the path of skipped launches (G8).
//
// Isolation (D2) follows: a launch is affected only through the bytes it
// reads, so work that shares no allocation with a failure never sees it.
//
// Cost: a successful launch with a few bindings is a handful of table
// lookups and inline taint operations, and allocates nothing once warmed up
// (G10); the skip and failure paths allocate their records and messages.
//
// Threading: one thread drives a Device, and a body runs inside its launch:
// it must not launch, write, read, synchronize or create buffers on its own
// device. Each of those calls checks one flag first and throws
// std::logic_error when a launch is in progress, before touching anything —
// a synchronize could otherwise attribute a late failure to the bytes the
// launch in progress holds claimed, and an allocation could end and reuse a
// slice the launch is writing. Allocation handles may be dropped on any
// thread.
#pragma once

#include <taintpool/device/backend.hpp>
#include <taintpool/device/launch.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/exception.hpp>
#include <taintpool/pool/allocation.hpp>
#include <taintpool/pool/memory_manager.hpp>
#include <taintpool/report.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
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

/// The only way to touch buffers (see above). Owns its graph and memory;
/// borrows the backend, which must outlive it. Not copyable or movable.
class Device {
 public:
  /// Uses the backend's storage and its default memory configuration.
  explicit Device(Backend& backend);
  /// Uses the backend's storage with `config`; std::invalid_argument if the
  /// config does not fit the storage.
  Device(Backend& backend, MemoryConfig config);
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device() = default;

  /// A new buffer of `size` bytes. Fresh memory counts as written (D1): it
  /// carries no failure, whatever bytes it holds. Throws as
  /// MemoryManager::allocate does (BufferTooBig, OutOfMemory), and
  /// std::logic_error from inside a body (see above).
  [[nodiscard]] Allocation create_buffer(std::uint64_t size) {
    refuse_inside_launch("create_buffer");
    return memory_.allocate(size);
  }

  /// A new buffer holding `bytes` (a create and a host write). A failed copy
  /// is not thrown: the buffer comes back carrying the copy's error, and a
  /// read of it reports that (D1).
  [[nodiscard]] Allocation create_buffer(std::span<const std::byte> bytes);

  /// A host write into `into` (S5: repairs stale bytes). `bytes` must be
  /// exactly the binding's size (InvalidBinding otherwise). A failed copy
  /// leaves the binding carrying the copy's error, as a failed launch would.
  LaunchResult write(const Binding& into, std::span<const std::byte> bytes);

  /// S1–S5. Throws Exception(NotFound / InvalidBinding) for a bad binding
  /// before anything is claimed; rethrows a body's exception after S3.
  /// Throws std::logic_error if called from a body on the same device (not
  /// reentrant). Allocation-free once warm on the success path (G10), unless
  /// an asynchronous backend has unconfirmed launches to log.
  LaunchResult launch(std::string_view kernel, std::span<const Binding> reads,
                      std::span<const Binding> writes, KernelBody body);
  /// As above, with the bindings listed inline.
  LaunchResult launch(std::string_view kernel, std::initializer_list<Binding> reads,
                      std::initializer_list<Binding> writes, KernelBody body) {
    return launch(kernel, std::span<const Binding>(reads.begin(), reads.size()),
                  std::span<const Binding>(writes.begin(), writes.size()), body);
  }

  /// D1: copies the binding's bytes into `into` (exactly its size) iff none
  /// has a failure; otherwise copies nothing and returns the reports. A
  /// device error while copying throws Exception, as do a bad binding
  /// (NotFound, InvalidBinding) and an `into` of another size. Synchronizes
  /// first, so a late failure is attributed before the check.
  [[nodiscard]] ReadOutcome read(const Binding& from, std::span<std::byte> into);

  /// D1, as a value: the bytes, or StaleRead with the reports. Allocates the
  /// result, after the binding is checked: a bad one throws NotFound or
  /// InvalidBinding (P3) whatever range it names, never std::bad_alloc.
  [[nodiscard]] std::vector<std::byte> read_bytes(const Binding& from);

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
  void synchronize();

  /// Discover dropped buffers now (their error state goes with them, P1).
  void sweep() { memory_.sweep(); }
  /// sweep(), and give free pages back to the storage.
  void cleanup() { memory_.cleanup(); }

  /// The device's own parts, for tests and diagnostics. Tagging, tainting or
  /// resetting through them bypasses the scopes: R1 and D1 are then the
  /// caller's to keep.
  [[nodiscard]] ErrorGraph& graph() noexcept { return graph_; }
  [[nodiscard]] MemoryManager& memory() noexcept { return memory_; }
  [[nodiscard]] Backend& backend() noexcept { return backend_; }

  /// The graph's and the memory's own invariants, and R1–R3 across every
  /// slice (no scope is open between calls, so every node must be tagged).
  void check_invariants() const;

 private:
  struct ScopeGuard;

  /// The check every call a body must not make starts with (see above):
  /// one load and a branch; the throw is out of line.
  void refuse_inside_launch(const char* call) const {
    if (in_launch_) [[unlikely]] {
      throw_inside_launch(call);
    }
  }
  [[noreturn]] static void throw_inside_launch(const char* call);

  /// A launch whose outcome an asynchronous backend has not yet confirmed,
  /// or any launch after one: what a late failure's replay needs.
  struct LoggedLaunch {
    std::uint64_t launch;
    std::string kernel;
    LaunchStatus status; ///< Ran: its outputs were released (until proven garbage).
    std::vector<Binding> reads;
    std::vector<Binding> writes;
    /// Failed with S2 ranges: the bytes it reported written. If it read
    /// bytes a late failure makes stale, they were written from garbage.
    std::vector<Binding> released;
  };

  LaunchResult decide_and_run(std::uint64_t launch, std::string_view kernel, KernelBody body);
  void log_if_unconfirmed(std::uint64_t launch, std::string_view kernel,
                          std::span<const Binding> reads, std::span<const Binding> writes,
                          LaunchStatus status);
  void attribute(const LateFailure& late);
  /// Attributes unattributed_ from the back (the oldest launch) until empty.
  void attribute_queued();
  void resolve_all(std::span<const Binding> bindings, std::vector<BoundBuffer>& into,
                   std::vector<Taint*>& taints);
  LaunchResult skip(std::string_view kernel, FailureId root, AllocationId needed);
  LaunchResult enter(std::uint64_t launch, std::string_view kernel, KernelBody body);
  /// Runs the body with the write set claimed; on a throw, S3.
  LaunchOutcome run_claimed(FailureId provisional, std::string_view kernel, KernelBody body,
                            const KernelContext& context);

  Backend& backend_;
  bool reports_late_; ///< backend_.reports_late_failures(), asked once.
  ErrorGraph graph_;  // Declared before memory_: the memory clears taints into it on destruction.
  MemoryManager memory_;
  std::vector<BoundBuffer> reads_; // Scratch, reused across launches (no allocation once warm).
  std::vector<BoundBuffer> writes_;
  std::vector<Taint*> read_taints_;
  std::vector<Taint*> write_taints_;
  std::vector<Binding> released_; // The current launch's S2 ranges, for the log.
  std::deque<LoggedLaunch> log_;
  /// Late failures taken from the backend and not yet attributed, newest
  /// first: empty except after synchronize() threw (out of memory); the
  /// next call attributes them before it asks the backend for more.
  std::vector<LateFailure> unattributed_;
  std::uint64_t next_launch_ = 1;
  bool in_launch_ = false;
};

} // namespace taintpool
