// BiasedMutex: the Device's one lock (O5) — a FastMutex that the one thread
// using a Device takes with no locked instruction.
//
// Why. Most Devices are driven by one host thread, yet a CUDA process always
// has several threads (the runtime's own), so FastMutex pays its two atomic
// read-modify-writes on every launch: a full barrier each on x86, 12-19 ns
// of a ~60 ns launch scope measured in place (issue 11, item 7, whose budget
// is 1% of a bare launch). The lock protects the Device against *other*
// callers; while there are none, a thread only has to make sure that one
// which arrives later sees it inside, and that costs no barrier of its own.
//
// How. The first thread to take the lock through the FastMutex claims the
// bias (where the kernel offers membarrier's private expedited command);
// from then on that thread — the owner — takes the lock by announcing itself
// (`inside_ = 1`, a plain store) and then checking that no revocation has
// begun (`revoked_`, a plain load), and gives it back with a plain release
// store. Any other thread takes the FastMutex and, finding a bias, revokes
// it for good: it marks `revoked_`, calls membarrier — every running thread
// of the process executes a full memory barrier before the call returns,
// and a thread that is not running passes one when it is switched out — and
// waits for the owner to leave. The two sides are a Dekker pair whose fences
// are asymmetric: the owner has only a compiler barrier between its store
// and its load, and the revoker's membarrier stands in for the owner's
// hardware fence. If the owner's check ran after the barrier membarrier
// forced on it, the check sees `revoked_` and the owner backs off to the
// FastMutex; otherwise its announcement was visible before membarrier
// returned, and the revoker waits for it. proofs/BiasedMutex.tla checks this
// over store buffers (a load may pass the thread's own earlier store, as on
// x86), and TLC rejects the variant without membarrier.
//
// One-way. A revoked bias is never claimed again: the Device then costs what
// a FastMutex costs plus one load and compare, and a program that drives one
// Device from several threads pays the revocation (one membarrier:
// microseconds, interprocessor interrupts to the CPUs running the process's
// threads, and a wait for the owner's current call) once.
//
// fork. The registration belongs to the process's memory and a child
// inherits it (checked on Linux 6.18: the child's expedited membarrier
// succeeds), so a child whose one thread is not the owner revokes as any
// second thread does. As with any lock, forking while another thread holds
// it leaves the child's copy held.
//
// Where there is no bias. Without membarrier (not Linux, a kernel before
// 4.14, a seccomp filter refusing it) the registration fails once and no
// bias is ever claimed. Under ThreadSanitizer no bias is claimed either:
// TSan does not see membarrier's fences and would report the owner's
// critical sections as racing with the revoker's; the tsan CI job then
// checks the FastMutex underneath, and tests/device/biased_mutex_test.cpp
// checks the biased path for mutual exclusion in the other builds.
//
// Guarantees: mutual exclusion with acquire/release ordering between
// successive holders, as std::mutex; not recursive, not fair. Satisfies
// BasicLockable (no try_lock: the Device never needs one).
#pragma once

#include <atomic>
#include <cstdint>

#include "fast_mutex.hpp"

namespace taintpool::detail {

class BiasedMutex {
 public:
  BiasedMutex() noexcept = default;
  BiasedMutex(const BiasedMutex&) = delete;
  BiasedMutex& operator=(const BiasedMutex&) = delete;
  BiasedMutex(BiasedMutex&&) = delete;
  BiasedMutex& operator=(BiasedMutex&&) = delete;
  ~BiasedMutex() = default;

  /// The owner: a load and compare, two plain stores and a load. Once the
  /// bias is revoked, anyone: a load, then the FastMutex, inline. Before
  /// any bias, or to revoke one: the FastMutex out of line, then the first
  /// claim or the one revocation.
  [[gnu::always_inline]] void lock() noexcept {
    if (owner_.load(std::memory_order_relaxed) == thread_token()) [[likely]] {
      inside_.store(1, std::memory_order_relaxed);
      // Only the compiler is fenced here: the store may sit in this CPU's
      // store buffer while the load below runs. The revoker's membarrier
      // is this side's hardware fence (see above).
      std::atomic_signal_fence(std::memory_order_seq_cst);
      if (revoked_.load(std::memory_order_relaxed) == 0) [[likely]] {
        held_by_owner_ = true;
        return;
      }
      inside_.store(0, std::memory_order_release); // Revoked: back off.
      inner_.lock();
      return;
    }
    // Revoked for good: the FastMutex alone. A revocation still under way
    // holds it, so this waits until the owner is out and stays out (it
    // sees `revoked_` from then on).
    if (revoked_.load(std::memory_order_relaxed) != 0) {
      inner_.lock();
      return;
    }
    lock_unbiased();
  }

  /// The owner: two plain stores. Anyone else: the FastMutex's unlock.
  [[gnu::always_inline]] void unlock() noexcept {
    if (held_by_owner_) [[likely]] {
      held_by_owner_ = false;
      inside_.store(0, std::memory_order_release); // Pairs with the revoker's wait.
      return;
    }
    inner_.unlock();
  }

  /// Whether some thread holds the bias now (tests and benchmarks).
  [[nodiscard]] bool biased() const noexcept {
    return owner_.load(std::memory_order_relaxed) != nullptr;
  }
  /// Whether the bias was revoked (for good).
  [[nodiscard]] bool revoked() const noexcept {
    return revoked_.load(std::memory_order_relaxed) != 0;
  }
  /// Whether this process can bias at all: membarrier's private expedited
  /// command registered (asked once per process), and not ThreadSanitizer.
  [[nodiscard]] static bool bias_available() noexcept;

 private:
  /// A value no two live threads share: the thread pointer (the TCB's
  /// address; one register read on x86-64 and AArch64).
  [[nodiscard, gnu::always_inline]] static const void* thread_token() noexcept {
#if defined(__has_builtin) && __has_builtin(__builtin_thread_pointer)
    return __builtin_thread_pointer();
#else
    return &token_anchor;
#endif
  }

  /// Out of line, cold (no bias revoked yet, the caller not the owner):
  /// the FastMutex, then the first claim or the one revocation.
  void lock_unbiased() noexcept;
  /// Marks the bias revoked, makes every thread fence (membarrier) and
  /// waits for the owner to leave. Under the FastMutex.
  void revoke() noexcept;

#if !(defined(__has_builtin) && __has_builtin(__builtin_thread_pointer))
  static thread_local char token_anchor;
#endif

  // The owner's two words first: its fast path touches this line only.
  std::atomic<const void*> owner_{nullptr}; ///< The biased thread's token; null: none.
  std::atomic<std::uint32_t> inside_{0};    ///< 1 while the owner holds or is taking it.
  std::atomic<std::uint32_t> revoked_{0};   ///< 1 for good once a revocation began.
  /// Whether the holder came in by the bias. Read and written by holders
  /// only, so ordered by the lock itself.
  bool held_by_owner_ = false;
  FastMutex inner_;
};

} // namespace taintpool::detail
