// HostBackend: kernels are C++ callables over host memory (§3.6). The
// embedded default — what CI, every test, fuzzer and example runs on.
//
// A body is called directly: what it returns is the outcome, what it throws
// propagates (S3). Copies are memcpy and cannot fail. The storage is a
// HostStorage it owns, or one the caller passes (a FaultInjectingStorage
// around a HostStorage, to test out-of-memory paths).
#pragma once

#include <taintpool/device/backend.hpp>
#include <taintpool/pool/host_storage.hpp>

#include <memory>

namespace taintpool {

/// Bodies run on the calling thread over host memory (see above).
class HostBackend : public Backend {
 public:
  /// Owns a HostStorage with this alignment; the default memory config,
  /// its alignment lowered to `alignment` when that is smaller.
  explicit HostBackend(std::uint64_t alignment = 256);
  /// Uses `storage`, which must outlive the backend and every device on it.
  HostBackend(Storage& storage, MemoryConfig config);

  /// Backend: the owned or given storage, and the config above.
  [[nodiscard]] Storage& storage() override { return *storage_; }
  [[nodiscard]] MemoryConfig memory_config() const override { return config_; }
  /// "host".
  [[nodiscard]] std::string name() const override { return "host"; }

  /// Calls the body directly: no overhead, exceptions propagate (S3).
  LaunchOutcome run(KernelBody body, const KernelContext& context) override {
    return body(context);
  }
  /// memcpy; never fails. Streams are names only (QueueBackend's
  /// synchronous defaults): work completes as it is queued.
  [[nodiscard]] std::optional<Error> copy_in(StreamHandle stream, std::byte* to,
                                             const std::byte* from, std::size_t bytes) override;
  [[nodiscard]] std::optional<Error> copy_out(StreamHandle stream, std::byte* to,
                                              const std::byte* from, std::size_t bytes) override;

 private:
  std::unique_ptr<HostStorage> owned_;
  Storage* storage_;
  MemoryConfig config_;
};

} // namespace taintpool
