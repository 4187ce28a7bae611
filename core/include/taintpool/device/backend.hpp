// Backend: what a Device needs from the hardware, and nothing else (§3.6).
//
// The scope logic — skip or enter, claim, release, replace, prune — is
// written once, in Device. A backend supplies the four things that differ
// between a CPU and a GPU:
//   * storage for pages, and the pool configuration that suits it;
//   * how a body runs: the host backend calls it; the CUDA backend calls it
//     (it enqueues a kernel on the launch's stream) and then turns
//     launch-time driver errors into a failed outcome;
//   * how bytes cross between the host and the buffers (host writes, reads),
//     each on a stream;
//   * streams and events (QueueBackend, stream/queue_backend.hpp), from
//     which the Device orders work across streams (O1-O3).
// Copies report device errors as an Error, never by throwing, so a failed
// host write becomes taint like any other failed write.
//
// Asynchronous devices add one thing: a launch can look successful when it
// is queued and be found failed later — a checked kernel writes its status
// to device memory, read at the next synchronisation. Such a backend keeps
// its launches *unconfirmed* until then (oldest_unconfirmed_launch) and
// returns what it found from synchronize(); the Device attributes each
// LateFailure to the launch's write set and to everything downstream that
// consumed those bytes since.
#pragma once

#include <taintpool/detail/function_ref.hpp>
#include <taintpool/device/launch.hpp>
#include <taintpool/pool/memory_config.hpp>
#include <taintpool/pool/storage.hpp>
#include <taintpool/stream/queue_backend.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace taintpool {

/// A launch's body, by reference; it must not outlive the launch() call.
using KernelBody = detail::FunctionRef<LaunchOutcome(const KernelContext&)>;

/// A launch found failed after it was queued (a checked kernel's status).
struct LateFailure {
  std::uint64_t launch;              ///< KernelContext::launch() of the failed launch.
  Error error;                       ///< What it reported.
  std::vector<WrittenRange> written; ///< What it finished before failing (S2; untrusted).
};

/// What a Device needs from the hardware (see above). A Device calls its
/// backend under its own lock, one call at a time; the backend must outlive
/// the Devices on it.
class Backend : public QueueBackend {
 public:
  ~Backend() override = default;

  /// The storage a Device on this backend takes its pages from.
  [[nodiscard]] virtual Storage& storage() = 0;
  /// The pool ladder that suits that storage; a Device uses it unless given
  /// another.
  [[nodiscard]] virtual MemoryConfig memory_config() const = 0;
  /// For messages: "host", "cuda device 0 (NVIDIA H200)".
  [[nodiscard]] virtual std::string name() const = 0;

  /// Runs `body`. Whatever it returns is the outcome; an exception it throws
  /// propagates (S3). A backend may turn a success into a failure (a driver
  /// error at launch time).
  virtual LaunchOutcome run(KernelBody body, const KernelContext& context) = 0;

  /// Copies host bytes into a buffer on `stream`, after the work queued on
  /// it before. An error means the bytes did not all arrive. Done when it
  /// returns: the caller's host span may go away.
  [[nodiscard]] virtual std::optional<Error> copy_in(StreamHandle stream, std::byte* to,
                                                     const std::byte* from, std::size_t bytes) = 0;
  /// Copies a buffer's bytes to the host on `stream`, after the work queued
  /// on it before (the Device has made it wait for writers on other
  /// streams). Done when it returns.
  [[nodiscard]] virtual std::optional<Error> copy_out(StreamHandle stream, std::byte* to,
                                                      const std::byte* from, std::size_t bytes) = 0;

  /// What KernelContext::backend_data() returns to bodies. Asked once, when
  /// a Device is built, so it must not change for the backend's life: a
  /// virtual call per launch was one of three on the CUDA backend's plain
  /// launch (issue 11, item 7).
  [[nodiscard]] virtual void* backend_data() noexcept { return nullptr; }

  /// Whether launches may be found failed after run() returned (a checked
  /// kernel on an asynchronous device). Asked once, when a Device is built;
  /// a backend that says no must never report a LateFailure.
  [[nodiscard]] virtual bool reports_late_failures() const noexcept { return false; }

  /// Waits for every queued launch and copy, and returns the launches that
  /// turned out to have failed, oldest first. Confirms everything before.
  [[nodiscard]] virtual std::vector<LateFailure> synchronize() { return {}; }

  /// The oldest launch whose outcome is not yet known, if any. While one
  /// exists the Device logs every launch, to attribute a late failure.
  [[nodiscard]] virtual std::optional<std::uint64_t> oldest_unconfirmed_launch() const noexcept {
    return std::nullopt;
  }

  /// False only while oldest_unconfirmed_launch() is sure to say none: the
  /// Device asks that virtual after a launch only when this (one load, no
  /// call) is true. True by default, which is never wrong; the CUDA backend
  /// keeps it exact, so its plain launch — nothing checked, nothing
  /// unconfirmed — makes no call for it (issue 11, item 7).
  [[nodiscard]] bool may_hold_unconfirmed() const noexcept { return may_hold_unconfirmed_; }

  /// Whether launch `launch` may still be reported as a LateFailure. The
  /// default says yes for every launch from the oldest unconfirmed one on,
  /// which is never wrong; a backend that knows each launch's state (a
  /// CollectiveBackend for its collectives) answers exactly, so a collective
  /// waits only for the verdicts its inputs depend on (Device::awaits_verdict).
  [[nodiscard]] virtual bool unconfirmed(std::uint64_t launch) const noexcept {
    const std::optional<std::uint64_t> oldest = oldest_unconfirmed_launch();
    return oldest && launch >= *oldest;
  }

 protected:
  Backend() = default;
  Backend(const Backend&) = default;
  Backend& operator=(const Backend&) = default;
  Backend(Backend&&) = default;
  Backend& operator=(Backend&&) = default;

  /// For a backend that reports late failures: set false only while it
  /// holds nothing unconfirmed, and true again before anything can become
  /// unconfirmed (before, not after: if that step throws, true is still
  /// right). A backend that never calls this is asked every time.
  void set_may_hold_unconfirmed(bool may) noexcept { may_hold_unconfirmed_ = may; }

 private:
  bool may_hold_unconfirmed_ = true;
};

} // namespace taintpool
