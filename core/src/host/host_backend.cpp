#include <taintpool/host/host_backend.hpp>

#include <cstring>

namespace taintpool {

HostBackend::HostBackend(std::uint64_t alignment)
    : owned_(std::make_unique<HostStorage>(alignment))
    , storage_(owned_.get()) {
  config_.alignment = alignment < config_.alignment ? alignment : config_.alignment;
}

HostBackend::HostBackend(Storage& storage, MemoryConfig config)
    : storage_(&storage)
    , config_(std::move(config)) {
}

namespace {
// Host memory on both sides: a copy cannot fail.
std::optional<Error> copy_bytes(std::byte* to, const std::byte* from, std::size_t bytes) {
  if (bytes != 0) {
    std::memcpy(to, from, bytes);
  }
  return std::nullopt;
}
} // namespace

std::optional<Error> HostBackend::copy_in(StreamHandle /*stream*/, std::byte* to,
                                          const std::byte* from, std::size_t bytes) {
  return copy_bytes(to, from, bytes);
}

std::optional<Error> HostBackend::copy_out(StreamHandle /*stream*/, std::byte* to,
                                           const std::byte* from, std::size_t bytes) {
  return copy_bytes(to, from, bytes);
}

} // namespace taintpool
