// QueueBackend: what ordering work across streams needs from the hardware,
// and nothing else: queues (streams) and markers in them (events).
//
// It is the CUDA model, stated small enough that a CPU can implement it:
//   * a stream is a queue; work on one stream runs in the order it was
//     queued;
//   * record(s) puts a marker at the current end of s: the event completes
//     once everything queued on s before it has completed;
//   * wait(t, e) makes everything queued on t afterwards start only after e
//     completes — without blocking the host;
//   * done(e) asks, without blocking, whether e has completed;
//   * finish(s) blocks the host until everything queued on s so far has
//     completed.
// Three implementations: HostBackend (synchronous: work completes as it is
// queued, so every event is born complete and waits are free),
// DeferredHostBackend (one queue per stream on the CPU, run in a random
// interleaving that the waits allow, so races show up in tests), and
// CudaBackend (cudaStream_t, pooled cudaEvent_t).
//
// Handles are opaque words chosen by the backend (a cudaStream_t, a pointer
// to a queue); the Device never looks inside. Events come from a pool the
// backend keeps: release() gives one back, so a warm Device creates none.
//
// Errors: a backend that cannot create a stream or record or wait on an
// event throws Exception (nothing was queued then). The Device calls these
// before it claims anything, so a throw leaves every rule intact.
//
// Threading: the Device calls a backend under its own lock, one call at a
// time.
#pragma once

#include <cstdint>

namespace taintpool {

/// A backend's queue: opaque to the Device (a cudaStream_t for CUDA).
using StreamHandle = void*;
/// A backend's marker in a queue: opaque to the Device (a cudaEvent_t).
using EventHandle = void*;

/// Streams and events (see above). Every member has a synchronous default,
/// which is right for a backend whose work completes as it is queued.
class QueueBackend {
 public:
  virtual ~QueueBackend() = default;

  /// The stream a Device's default stream runs on. The synchronous default
  /// is a fixed non-null token.
  [[nodiscard]] virtual StreamHandle default_stream() noexcept;

  /// A new stream. Throws Exception when the backend cannot make one.
  [[nodiscard]] virtual StreamHandle create_stream();

  /// Blocks until everything queued on `stream` completed, then frees it.
  /// Never called on the default stream.
  virtual void destroy_stream(StreamHandle stream) noexcept;

  /// A marker after everything queued on `stream` so far (from a pool).
  /// Throws Exception when it cannot be recorded.
  [[nodiscard]] virtual EventHandle record(StreamHandle stream);

  /// Work queued on `waiter` from now on starts after `event` completes.
  /// Never blocks the host. Throws Exception when it cannot be queued.
  virtual void wait(StreamHandle waiter, EventHandle event);

  /// Whether `event` completed. Never blocks. A backend that cannot tell
  /// (a broken device) says true: nothing will ever run after it anyway.
  [[nodiscard]] virtual bool done(EventHandle event) noexcept;

  /// Gives `event` back to the pool; the Device no longer waits on or asks
  /// about it. Its completion need not have happened.
  virtual void release(EventHandle event) noexcept;

  /// Blocks the host until everything queued on `stream` so far completed.
  virtual void finish(StreamHandle stream);

  /// Whether work completes as it is queued (the defaults above). The Device
  /// then knows every piece of work complete at once and plans no ordering.
  [[nodiscard]] virtual bool synchronous() const noexcept;

 protected:
  QueueBackend() = default;
  QueueBackend(const QueueBackend&) = default;
  QueueBackend& operator=(const QueueBackend&) = default;
  QueueBackend(QueueBackend&&) = default;
  QueueBackend& operator=(QueueBackend&&) = default;

 private:
  std::uintptr_t next_stream_token_ = 1;
};

} // namespace taintpool
