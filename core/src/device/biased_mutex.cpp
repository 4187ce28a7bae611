// BiasedMutex's cold paths: the first claim, the one revocation and the
// process's membarrier registration (see the header for the protocol).
#include <taintpool/detail/biased_mutex.hpp>

#include <cstdio>
#include <cstdlib>
#include <thread>

#if defined(__linux__) && __has_include(<linux/membarrier.h>)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace taintpool::detail {

#if !(defined(__has_builtin) && __has_builtin(__builtin_thread_pointer))
thread_local char BiasedMutex::token_anchor;
#endif

namespace {

// ThreadSanitizer does not see membarrier's fences: no bias under it.
#if defined(__SANITIZE_THREAD__)
[[maybe_unused]] constexpr bool under_tsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
[[maybe_unused]] constexpr bool under_tsan = true;
#else
[[maybe_unused]] constexpr bool under_tsan = false;
#endif
#else
[[maybe_unused]] constexpr bool under_tsan = false;
#endif

#if defined(__linux__) && __has_include(<linux/membarrier.h>)
long membarrier(int command) noexcept {
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-vararg): the system call has no wrapper.
  return ::syscall(__NR_membarrier, command, 0U, 0);
}
#endif

/// Once per process: whether the private expedited command is offered and
/// this process is registered for it (the registration is what lets the
/// command run without a global RCU grace period: microseconds, not
/// milliseconds).
bool register_membarrier() noexcept {
#if defined(__linux__) && __has_include(<linux/membarrier.h>)
  if (under_tsan) {
    return false;
  }
  const long offered = membarrier(MEMBARRIER_CMD_QUERY);
  if (offered < 0 || (offered & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0 ||
      (offered & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0) {
    return false;
  }
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
#else
  return false;
#endif
}

} // namespace

bool BiasedMutex::bias_available() noexcept {
  static const bool available = register_membarrier();
  return available;
}

void BiasedMutex::lock_unbiased() noexcept {
  inner_.lock();
  // Under the FastMutex: no other thread claims or revokes meanwhile.
  const void* const owner = owner_.load(std::memory_order_relaxed);
  if (owner == nullptr) {
    // The first holder claims the bias, unless one was ever revoked. It
    // holds the lock through the FastMutex this time; its next call takes
    // the fast path.
    if (revoked_.load(std::memory_order_relaxed) == 0 && bias_available()) {
      owner_.store(thread_token(), std::memory_order_relaxed);
    }
    return;
  }
  // Here the owner is another thread: the owner's own calls take the bias
  // inline, or, once a revocation began, the FastMutex directly; neither
  // comes here. (A thread that exits while the owner leaves its token
  // behind; a later thread given the same thread pointer is then the owner,
  // which is sound, as the first is gone and held nothing.)
  if (owner == thread_token()) {
    static_cast<void>(
        std::fputs("taintpool: the Device lock's owner reached the unbiased path (O5)\n", stderr));
    std::abort(); // A broken invariant of this type; going on could deadlock in revoke().
  }
  revoke();
}

void BiasedMutex::revoke() noexcept {
  // A full fence here (seq_cst: an exchange on x86), so the mark is visible
  // before membarrier makes every other thread fence.
  revoked_.store(1, std::memory_order_seq_cst);
#if defined(__linux__) && __has_include(<linux/membarrier.h>)
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
    // Registered at the claim, so this cannot fail short of a kernel that
    // withdrew the command; the owner's side has no fence of its own then,
    // and going on could let two threads in.
    static_cast<void>(
        std::fputs("taintpool: membarrier failed while revoking the Device lock's bias\n", stderr));
    std::abort();
  }
#endif
  // The owner is either inside (its announcement is visible now) or will
  // see the mark and back off to the FastMutex, which this thread holds.
  for (int spin = 0; inside_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < 256) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield(); // The owner's call may run a kernel launch.
    }
  }
  owner_.store(nullptr, std::memory_order_relaxed);
}

} // namespace taintpool::detail
