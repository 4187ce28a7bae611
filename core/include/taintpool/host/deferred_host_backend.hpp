// DeferredHostBackend: the host backend behaving like an asynchronous device
// with checked kernels, so the Device's late-failure attribution (what the
// CUDA backend relies on) is tested and fuzzed on any CPU.
//
// A body may mark its launch *checked* — its outcome unknown until the next
// synchronize() — and may decide already that the check will fail, with the
// ranges it will claim to have finished. The body's bytes are written (or
// not) at once, as on a GPU; only the verdict arrives late.
#pragma once

#include <taintpool/host/host_backend.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace taintpool {

/// A HostBackend whose bodies may defer their verdict (see above). For tests
/// and fuzzers: bookkeeping allocates, which the real CUDA path avoids.
class DeferredHostBackend final : public HostBackend {
 public:
  /// HostBackend's constructors.
  using HostBackend::HostBackend;

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

  /// Confirms every launch and returns the deferred failures, in the order
  /// their bodies called fail_later.
  [[nodiscard]] std::vector<LateFailure> synchronize() override {
    unconfirmed_.clear();
    return std::exchange(pending_, {});
  }

  /// The smallest launch number checked since the last synchronize; O(n).
  [[nodiscard]] std::optional<std::uint64_t> oldest_unconfirmed_launch() const noexcept override {
    if (unconfirmed_.empty()) {
      return std::nullopt;
    }
    return *std::min_element(unconfirmed_.begin(), unconfirmed_.end());
  }

 private:
  std::vector<std::uint64_t> unconfirmed_;
  std::vector<LateFailure> pending_;
};

} // namespace taintpool
