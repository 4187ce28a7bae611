// DeferredHostBackend: the host backend behaving like an asynchronous
// device, so what the CUDA backend relies on — late failures of checked
// kernels, and work on several streams that runs in whatever order the
// recorded waits allow — is tested and fuzzed on any CPU.
//
// Late failures. A body may mark its launch *checked* — its outcome unknown
// until the next synchronize() — and may decide already that the check will
// fail, with the ranges it will claim to have finished. Only the verdict
// arrives late.
//
// Streams. Each stream is a queue. A body does its device work by
// enqueue()-ing it on its launch's stream (as a CUDA body launches a kernel
// on stream_of(context)); record() and wait() put event markers and waits in
// the queues. Nothing runs until the host blocks — finish(), a host copy,
// synchronize() — or a test calls step(); then queued items run one at a
// time, each taken from the head of a stream chosen at random among those
// whose head may run (a wait may run once its event completed). So every
// interleaving the waits allow can happen, and the seed picks one: a race
// the Device failed to order shows up as wrong bytes on a CPU. A body may
// still write its outputs directly, at launch time, as on HostBackend.
//
// Pages. A page the pools give back to storage may be handed to anyone
// next, so queued work must not touch it afterwards: storage() puts an
// adaptor in front of the pages that runs every queued item before a page
// goes back — as cudaFree waits for the device.
//
// For tests and fuzzers: bookkeeping allocates (a body's std::function
// when its capture is large, the queues' blocks, one marker per recorded
// event), which the real CUDA path avoids; a host copy's own work fits
// std::function's small buffer.
#pragma once

#include <taintpool/detail/fifo.hpp>
#include <taintpool/host/host_backend.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace taintpool {

/// A HostBackend with asynchronous streams and late verdicts (see above).
class DeferredHostBackend final : public HostBackend {
 public:
  /// HostBackend's constructors; the scheduler's seed is 0 until set_seed.
  explicit DeferredHostBackend(std::uint64_t alignment = 256);
  DeferredHostBackend(Storage& storage, MemoryConfig config);
  ~DeferredHostBackend() override;
  DeferredHostBackend(const DeferredHostBackend&) = delete;
  DeferredHostBackend& operator=(const DeferredHostBackend&) = delete;

  // ------------------------------------------------------------ late verdicts

  /// From inside a body: this launch is unconfirmed until synchronize().
  void check(const KernelContext& context) { unconfirmed_.push_back(context.launch()); }

  /// From inside a body: this launch is checked and will be reported failed
  /// at the next synchronize(), having finished `written`.
  void fail_later(const KernelContext& context, Error error,
                  std::vector<WrittenRange> written = {}) {
    check(context);
    pending_.push_back(LateFailure{context.launch(), std::move(error), std::move(written)});
  }

  /// Yes: the Device logs launches while any is unconfirmed.
  [[nodiscard]] bool reports_late_failures() const noexcept override { return true; }

  /// Runs every queued item, confirms every launch and returns the deferred
  /// failures, in the order their bodies called fail_later.
  [[nodiscard]] std::vector<LateFailure> synchronize() override;

  /// The smallest launch number checked since the last synchronize; O(n).
  [[nodiscard]] std::optional<std::uint64_t> oldest_unconfirmed_launch() const noexcept override;

  // ------------------------------------------------------------ streams

  /// From inside a body: `work` runs later, on the launch's stream, after
  /// everything queued there before (and after what that stream waits on).
  void enqueue(const KernelContext& context, std::function<void()> work) {
    enqueue(context.stream_handle(), std::move(work));
  }
  /// `work` on `stream` (a handle from this backend).
  void enqueue(StreamHandle stream, std::function<void()> work);

  /// Picks the interleaving: the same seed and the same calls run items in
  /// the same order.
  void set_seed(std::uint64_t seed) noexcept { rng_ = seed; }
  /// Runs one item whose turn may come, chosen at random; false when none
  /// is queued. Throws std::logic_error if items are queued but none may run
  /// (a wait on an event that can never complete — a backend bug).
  bool step();
  /// Runs items until every queue is empty; returns how many ran.
  std::size_t run_all();
  /// Items queued and not yet run.
  [[nodiscard]] std::size_t pending() const noexcept;

  [[nodiscard]] StreamHandle default_stream() noexcept override;
  [[nodiscard]] StreamHandle create_stream() override;
  void destroy_stream(StreamHandle stream) noexcept override;
  [[nodiscard]] EventHandle record(StreamHandle stream) override;
  void wait(StreamHandle waiter, EventHandle event) override;
  [[nodiscard]] bool done(EventHandle event) noexcept override;
  void release(EventHandle event) noexcept override;
  void finish(StreamHandle stream) override;
  /// No: work runs when the host blocks or step() is called.
  [[nodiscard]] bool synchronous() const noexcept override { return false; }

  /// Queues the copy on the stream and runs items until it ran.
  [[nodiscard]] std::optional<Error> copy_in(StreamHandle stream, std::byte* to,
                                             const std::byte* from, std::size_t bytes) override;
  [[nodiscard]] std::optional<Error> copy_out(StreamHandle stream, std::byte* to,
                                              const std::byte* from, std::size_t bytes) override;

  /// Events recorded so far, and how many are in the pool unused.
  [[nodiscard]] std::size_t events_made() const noexcept { return events_.size(); }

  /// The pages, behind the adaptor that runs every queued item before one
  /// goes back (see above).
  [[nodiscard]] Storage& storage() override { return pages_; }

 private:
  /// HostBackend's storage, whose deallocate first runs every queue dry.
  class FinishingStorage final : public Storage {
   public:
    FinishingStorage(Storage& pages, DeferredHostBackend& queues) noexcept
        : pages_(pages)
        , queues_(queues) {}
    [[nodiscard]] std::uint64_t alignment() const noexcept override { return pages_.alignment(); }
    [[nodiscard]] StorageHandle allocate(std::uint64_t size) override {
      return pages_.allocate(size);
    }
    void deallocate(StorageHandle handle, std::uint64_t size) noexcept override;
    [[nodiscard]] void* resolve(StorageHandle handle) const noexcept override {
      return pages_.resolve(handle);
    }
    [[nodiscard]] std::string name() const override { return pages_.name(); }

   private:
    Storage& pages_;
    DeferredHostBackend& queues_;
  };

  struct Marker {
    bool done = false;
  };
  struct Item {
    enum class Kind : std::uint8_t { Work, Record, Wait } kind;
    std::function<void()> work;     ///< Work.
    std::shared_ptr<Marker> marker; ///< Record: completes it; Wait: waits for it.
  };
  struct Queue {
    detail::Fifo<Item> items; // Allocates on the stream's first item.
    bool live = true;
  };
  struct Event {
    std::shared_ptr<Marker> current; ///< The newest record's marker.
  };

  /// queues_ as a backend starts: the default stream's alone.
  [[nodiscard]] static std::vector<std::unique_ptr<Queue>> only_the_default_queue();
  [[nodiscard]] Queue& queue(StreamHandle stream);
  [[nodiscard]] static bool runnable(const Queue& queue) noexcept;
  void run_until(const bool& flag);
  /// copy_in and copy_out: queues the copy on `stream` and runs items until
  /// it ran; queueing it allocates nothing (see the .cpp).
  void copy(StreamHandle stream, std::byte* to, const std::byte* from, std::size_t bytes);
  std::uint64_t next_random() noexcept;

  FinishingStorage pages_{HostBackend::storage(), *this};
  /// The live streams' queues, in the order they were made ([0] is the
  /// default stream until it is destroyed). A step walks only these, so its
  /// cost is in the live streams, not in every stream the backend ever made;
  /// the pick among runnable queues is by position, and erasing a dead one
  /// keeps the others' order, so a seed gives the interleaving it gave when
  /// dead queues stayed in the walk.
  std::vector<std::unique_ptr<Queue>> queues_;
  /// Destroyed streams' queues, empty and with no ring: kept (one small
  /// object each) so a dead handle never names a live stream — a later
  /// create cannot get its address — and is told apart as such.
  std::vector<std::unique_ptr<Queue>> retired_;
  Queue* default_queue_ = nullptr; ///< Whether live or not (destroy_stream).
  std::vector<std::unique_ptr<Event>> events_;
  std::vector<Event*> free_events_;
  std::uint64_t rng_ = 0;
  std::vector<std::uint64_t> unconfirmed_;
  std::vector<LateFailure> pending_;
};

} // namespace taintpool
