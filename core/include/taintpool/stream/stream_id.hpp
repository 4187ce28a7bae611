// StreamId: which queue of a Device a launch, host write or read goes on.
//
// A GPU runtime runs compute, copies and collectives on several streams. A
// Device names each of its streams by a StreamId: the default stream every
// Device starts with, and one more per Device::create_stream(). The id also
// names the Device that made it, so a stream passed to another Device, or
// used after Device::destroy_stream(), is a clear error (NotFound), never a
// launch on somebody else's queue.
//
// Why two 32-bit halves and not a pointer: an id is a plain value that can
// be copied into records, compared and printed, and stays meaningful (and
// refusable) after its stream is gone. `number` counts up from 0 per Device
// and is never reused, so "stream 3" in a report names one stream over the
// Device's life (a Device therefore makes at most 2^32 - 1 streams, then
// refuses: StreamTable::create); `device` is a process-wide serial of the
// Device.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace taintpool {

/// One stream of one Device (see above). Trivially copyable; 8 bytes.
class StreamId {
 public:
  /// The default stream of no Device: what a default-constructed id holds
  /// before it is assigned. Naming it to a Device is NotFound.
  constexpr StreamId() noexcept = default;

  /// Built by a Device: its serial and the stream's number on it.
  [[nodiscard]] static constexpr StreamId of(std::uint32_t device, std::uint32_t number) noexcept {
    StreamId id;
    id.device_ = device;
    id.number_ = number;
    return id;
  }

  /// The Device that made it (a process-wide serial, 1, 2, ...; 0 = none).
  [[nodiscard]] constexpr std::uint32_t device() const noexcept { return device_; }
  /// Its number on that Device: 0 is the default stream, then 1, 2, ... in
  /// creation order, never reused.
  [[nodiscard]] constexpr std::uint32_t number() const noexcept { return number_; }
  /// Whether it is a Device's default stream.
  [[nodiscard]] constexpr bool is_default() const noexcept { return number_ == 0; }

  /// Same Device, same stream.
  friend constexpr bool operator==(StreamId, StreamId) noexcept = default;

 private:
  std::uint32_t device_ = 0;
  std::uint32_t number_ = 0;
};

/// "stream 3" (the number; reports are about one Device).
[[nodiscard]] std::string to_string(StreamId stream);
/// Writes to_string(stream).
std::ostream& operator<<(std::ostream& out, StreamId stream);

} // namespace taintpool
