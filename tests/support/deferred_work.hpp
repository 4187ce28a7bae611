// Device work for tests on DeferredHostBackend: bodies that queue their
// writes on the launch's stream instead of doing them at once, so that the
// seeded interleavings decide when they land (O1-O4). Shared by the stream
// tests and the stream regressions.
#pragma once

#include <taintpool/device/launch.hpp>
#include <taintpool/host/deferred_host_backend.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace taintpool::test {

/// `size` bytes of `value`.
inline std::vector<std::byte> bytes_of(std::size_t size, std::uint8_t value) {
  return std::vector<std::byte>(size, static_cast<std::byte>(value));
}

/// Device work: fills every output with `value`, later, on the launch's stream.
inline auto fill_later(DeferredHostBackend& backend, std::uint8_t value) {
  return [&backend, value](const KernelContext& context) {
    for (std::size_t index = 0; index < context.writes(); ++index) {
      const std::span<std::byte> out = context.write(index);
      backend.enqueue(context, [out, value] {
        std::fill(out.begin(), out.end(), static_cast<std::byte>(value));
      });
    }
    return LaunchOutcome::success();
  };
}

/// Device work: output 0 = input 0 + delta, later, on the launch's stream.
/// Reads the whole input before writing, in two queued steps, so another
/// stream's work can land between them.
inline auto add_later(DeferredHostBackend& backend, std::uint8_t delta) {
  return [&backend, delta](const KernelContext& context) {
    const std::span<const std::byte> in = context.read(0);
    const std::span<std::byte> out = context.write(0);
    auto scratch = std::make_shared<std::vector<std::byte>>();
    backend.enqueue(context, [in, scratch] { scratch->assign(in.begin(), in.end()); });
    backend.enqueue(context, [out, scratch, delta] {
      for (std::size_t at = 0; at < out.size(); ++at) {
        out[at] = static_cast<std::byte>(static_cast<std::uint8_t>((*scratch)[at]) + delta);
      }
    });
    return LaunchOutcome::success();
  };
}

} // namespace taintpool::test
