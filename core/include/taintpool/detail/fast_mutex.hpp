// FastMutex: the Device's one lock (O5) — a three-state futex mutex that
// spins briefly before it sleeps.
//
// Why not std::mutex. An uncontended pthread_mutex_lock + unlock is two
// library calls that dispatch on the mutex's type (~50 instructions); this
// lock is one compare-and-swap to take and one exchange to give back, both
// inline (~10 instructions), the same two atomic operations the hardware
// must do anyway. Under contention, the Device's critical sections are short
// (a launch's bookkeeping is tens of nanoseconds), so a waiter first spins a
// little — the holder is usually done before a futex sleep would even start —
// and only then sleeps through std::atomic::wait (a futex on Linux).
//
// States: 0 free; 1 held, nobody sleeping; 2 held, someone may be sleeping
// (the releaser must wake one). A sleeper sets 2 before it sleeps, so no
// wake-up is lost; a woken thread takes the lock in state 2, which at worst
// costs one needless wake later.
//
// A process with one thread. glibc's own mutex skips the atomic operations
// while the process has never had a second thread (__libc_single_threaded),
// and so does this one: a relaxed load and store, no locked instruction —
// nothing else can touch the lock then. The flag turns false before a second
// thread starts (thread creation orders everything before it), so a lock
// held across pthread_create is given back with the atomic exchange and
// waiters are woken as usual. A CUDA program always has several threads
// (the runtime's own): there the lock is the two atomic operations.
// The Device does not take it directly: detail::BiasedMutex wraps it, and
// the one thread that drives a Device takes neither atomic operation.
//
// Guarantees: mutual exclusion with acquire/release ordering, as std::mutex
// (ThreadSanitizer sees the atomics); not recursive, not fair (a spinning
// newcomer may overtake a sleeper). Satisfies Lockable. proofs/FastMutex.tla
// checks the algorithm over the word — mutual exclusion, no stranded
// sleeper, progress — with threads created while it is held; a change to
// the states or the one-thread path goes there first.
#pragma once

#include <atomic>
#include <cstdint>

#if __has_include(<sys/single_threaded.h>) // glibc >= 2.32
#include <sys/single_threaded.h>
#endif

namespace taintpool::detail {

class FastMutex {
 public:
  FastMutex() noexcept = default;
  FastMutex(const FastMutex&) = delete;
  FastMutex& operator=(const FastMutex&) = delete;
  FastMutex(FastMutex&&) = delete;
  FastMutex& operator=(FastMutex&&) = delete;
  ~FastMutex() = default;

  /// One compare-and-swap when free; else spin, then sleep.
  [[gnu::always_inline]] void lock() noexcept {
    if (single_threaded() && state_.load(std::memory_order_relaxed) == 0) {
      state_.store(1, std::memory_order_relaxed); // No other thread exists.
      return;
    }
    std::uint32_t expected = 0;
    if (state_.compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                       std::memory_order_relaxed)) [[likely]] {
      return;
    }
    lock_contended();
  }

  /// Takes it only if free.
  [[nodiscard]] bool try_lock() noexcept {
    std::uint32_t expected = 0;
    return state_.compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }

  /// One exchange; a wake only if someone may sleep.
  [[gnu::always_inline]] void unlock() noexcept {
    if (single_threaded()) {
      state_.store(0, std::memory_order_relaxed); // Nobody can be waiting.
      return;
    }
    if (state_.exchange(0, std::memory_order_release) == 2) [[unlikely]] {
      state_.notify_one();
    }
  }

 private:
  /// Out of line: spinning and sleeping are the cold path.
  [[gnu::noinline]] void lock_contended() noexcept {
    // Spin while a holder works: most critical sections end within this.
    for (int spin = 0; spin < 64; ++spin) {
      if (state_.load(std::memory_order_relaxed) == 0) {
        std::uint32_t expected = 0;
        if (state_.compare_exchange_weak(expected, 1, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
          return;
        }
      }
      pause();
    }
    // Sleep: mark the lock as having a sleeper, and take it when it was free.
    while (state_.exchange(2, std::memory_order_acquire) != 0) {
      state_.wait(2, std::memory_order_relaxed);
    }
  }

  /// Whether the process has never had a second thread (glibc >= 2.32).
  static bool single_threaded() noexcept {
#if __has_include(<sys/single_threaded.h>)
    return __libc_single_threaded != 0;
#else
    return false;
#endif
  }

  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  std::atomic<std::uint32_t> state_{0};
};

} // namespace taintpool::detail
