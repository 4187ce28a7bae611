// Backend: what a Device needs from the hardware, and nothing else (§3.6).
//
// The scope logic — skip or enter, claim, release, replace, prune — is
// written once, in Device. A backend supplies the three things that differ
// between a CPU and a GPU:
//   * storage for pages, and the pool configuration that suits it;
//   * how a body runs: the host backend calls it; the CUDA backend calls it
//     (it enqueues a kernel) and then turns launch-time driver errors into a
//     failed outcome;
//   * how bytes cross between the host and the buffers (host writes, reads).
// Copies report device errors as an Error, never by throwing, so a failed
// host write becomes taint like any other failed write.
#pragma once

#include <taintpool/detail/function_ref.hpp>
#include <taintpool/device/launch.hpp>
#include <taintpool/pool/memory_config.hpp>
#include <taintpool/pool/storage.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace taintpool {

/// A launch's body, by reference; it must not outlive the launch() call.
using KernelBody = detail::FunctionRef<LaunchOutcome(const KernelContext&)>;

class Backend {
 public:
  virtual ~Backend() = default;

  [[nodiscard]] virtual Storage& storage() = 0;
  [[nodiscard]] virtual MemoryConfig memory_config() const = 0;
  [[nodiscard]] virtual std::string name() const = 0;

  /// Runs `body`. Whatever it returns is the outcome; an exception it throws
  /// propagates (S3). A backend may turn a success into a failure (a driver
  /// error at launch time).
  virtual LaunchOutcome run(KernelBody body, const KernelContext& context) = 0;

  /// Copies host bytes into a buffer. An error means the bytes did not all
  /// arrive.
  [[nodiscard]] virtual std::optional<Error> copy_in(std::byte* to, const std::byte* from,
                                                     std::size_t bytes) = 0;
  /// Copies a buffer's bytes to the host, after every write to it finished.
  [[nodiscard]] virtual std::optional<Error> copy_out(std::byte* to, const std::byte* from,
                                                      std::size_t bytes) = 0;

  /// What KernelContext::backend_data() returns to bodies.
  [[nodiscard]] virtual void* backend_data() noexcept { return nullptr; }

 protected:
  Backend() = default;
  Backend(const Backend&) = default;
  Backend& operator=(const Backend&) = default;
};

} // namespace taintpool
