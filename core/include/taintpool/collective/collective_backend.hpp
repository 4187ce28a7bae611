// CollectiveBackend: a Backend adaptor through which collectives' verdicts
// reach the Device late, as the late failures of their launches (C5).
//
// An asynchronous communicator (NCCL; the loopback) delivers the other
// ranks' taint summaries after the collective was queued — when its stream
// gets there. Rather than a host sync per collective, the verdict waits:
// the collective's launch stays *unconfirmed*, the Device logs what runs
// after it, and at the next synchronize (every read makes one) the verdict
// arrives as a LateFailure of that launch: its fed bytes, or the
// communicator's error, attributed to them and to whatever ran on them
// since. That is the Device's existing machinery for checked kernels, so
// this adaptor only has to put the verdicts next to the inner backend's own:
//
//   * every call is forwarded to the inner backend (storage, bodies, copies,
//     streams, events), so a Device on a CollectiveBackend behaves as on the
//     inner one;
//   * synchronize() returns the inner backend's late failures plus every
//     pending collective's verdict, after waiting for the collectives in
//     flight (bounded by each communicator's timeout);
//   * a pending collective whose summaries have landed clean is confirmed
//     as soon as a later launch polls it, so the Device stops logging;
//   * unconfirmed(launch) is exact for collectives, so a later collective
//     waits only for the verdicts its inputs depend on (Device::awaits_verdict);
//   * every call that blocks the host (finish, copies, destroying a stream,
//     synchronize) first waits for the collectives in flight, with the
//     communicator's timeout: a stream that waits on a collective whose peer
//     died cannot hang the host (C6).
//
// Cost: with nothing pending, one empty-vector check per call. Not
// thread-safe beyond the Device's own lock (the Device calls it one call at
// a time; Collectives calls expect/poll from its bodies and before them).
#pragma once

#include <taintpool/device/backend.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace taintpool {

/// Where a pending collective's verdict comes from (a Collectives).
class VerdictSource {
 public:
  /// Never blocks: `launch`'s summaries have landed and feed this rank
  /// nothing stale — it is forgotten, and confirmed.
  [[nodiscard]] virtual bool landed_clean(std::uint64_t launch) = 0;
  /// Blocks, within the communicator's timeout, until each of its
  /// collectives has landed or failed.
  virtual void wait_all() = 0;
  /// After wait_all(): `launch`'s verdict — its fed bytes, or its
  /// communicator error — or none; then forgets it.
  [[nodiscard]] virtual std::optional<LateFailure> verdict(std::uint64_t launch) = 0;

 protected:
  VerdictSource() = default;
  VerdictSource(const VerdictSource&) = default;
  VerdictSource& operator=(const VerdictSource&) = default;
  VerdictSource(VerdictSource&&) = default;
  VerdictSource& operator=(VerdictSource&&) = default;
  ~VerdictSource() = default;
};

/// The adaptor (see above). Borrows the inner backend, which must outlive it.
class CollectiveBackend final : public Backend {
 public:
  explicit CollectiveBackend(Backend& inner) noexcept
      : inner_(inner) {}

  /// The backend every call is forwarded to.
  [[nodiscard]] Backend& inner() noexcept { return inner_; }

  /// From a collective's body: `launch`'s verdict will come from `source`;
  /// until then the launch is unconfirmed.
  void expect(std::uint64_t launch, VerdictSource& source);
  /// Confirms every pending collective whose summaries landed clean.
  /// Never blocks.
  void poll();
  /// Pending collectives (not yet confirmed or reported).
  [[nodiscard]] std::size_t pending() const noexcept { return pending_.size() + held_.size(); }
  /// Forgets every pending verdict of `source`, which is going away: they
  /// are never reported.
  void forget(const VerdictSource& source) noexcept;

  // ---------------------------------------------------------------- Backend
  [[nodiscard]] Storage& storage() override { return inner_.storage(); }
  [[nodiscard]] MemoryConfig memory_config() const override { return inner_.memory_config(); }
  [[nodiscard]] std::string name() const override { return inner_.name(); }
  /// Polls pending collectives (when there are any), then the inner run().
  LaunchOutcome run(KernelBody body, const KernelContext& context) override;
  [[nodiscard]] std::optional<Error> copy_in(StreamHandle stream, std::byte* to,
                                             const std::byte* from, std::size_t bytes) override;
  [[nodiscard]] std::optional<Error> copy_out(StreamHandle stream, std::byte* to,
                                              const std::byte* from, std::size_t bytes) override;
  [[nodiscard]] void* backend_data() noexcept override { return inner_.backend_data(); }
  /// Yes: collectives report late.
  [[nodiscard]] bool reports_late_failures() const noexcept override { return true; }
  /// The inner backend's late failures and every pending collective's
  /// verdict. Out of memory while combining them never loses one: a verdict
  /// that does not fit is returned by the next call (and stays unconfirmed).
  [[nodiscard]] std::vector<LateFailure> synchronize() override;
  [[nodiscard]] std::optional<std::uint64_t> oldest_unconfirmed_launch() const noexcept override;
  [[nodiscard]] bool unconfirmed(std::uint64_t launch) const noexcept override;

  // ---------------------------------------------------------------- QueueBackend
  [[nodiscard]] StreamHandle default_stream() noexcept override { return inner_.default_stream(); }
  [[nodiscard]] StreamHandle create_stream() override { return inner_.create_stream(); }
  void destroy_stream(StreamHandle stream) noexcept override;
  [[nodiscard]] EventHandle record(StreamHandle stream) override { return inner_.record(stream); }
  void wait(StreamHandle waiter, EventHandle event) override { inner_.wait(waiter, event); }
  [[nodiscard]] bool done(EventHandle event) noexcept override { return inner_.done(event); }
  void release(EventHandle event) noexcept override { inner_.release(event); }
  void finish(StreamHandle stream) override;
  [[nodiscard]] bool synchronous() const noexcept override { return inner_.synchronous(); }

 private:
  struct Pending {
    std::uint64_t launch;
    VerdictSource* source;
  };
  /// Every source with a pending collective waits for its collectives.
  void wait_for_collectives();

  Backend& inner_;
  std::vector<Pending> pending_;
  /// Verdicts taken from their sources and not yet returned (see synchronize).
  std::vector<LateFailure> held_;
};

} // namespace taintpool
