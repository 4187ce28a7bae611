// The never-written mode of an input (issue 15, N1-N2): which FreshBytes and
// UnwrittenReads a device_fuzzer or pool_fuzzer run uses.
//
// Why a trailer and not a header byte: the committed corpora and regression
// files were written before the mode existed, and each must go on decoding
// to the same op sequence (a regression file must still reproduce its bug).
// So an input selects the mode only when it ends in the marker byte 0xD7
// followed by the mode byte, which no committed file did; those two bytes are
// then cut off before decoding. Every other input runs in Trusted mode, as
// before. libFuzzer finds the marker through its comparison tracing, and the
// committed seeds that carry it keep both modes in every campaign.
#pragma once

#include <taintpool/device/unwritten_reads.hpp>
#include <taintpool/pool/fresh_bytes.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace taintpool::fuzz {

struct FreshMode {
  FreshBytes fresh = FreshBytes::Trusted;
  UnwrittenReads reads = UnwrittenReads::Skip;
  std::size_t size = 0; ///< The input's size without the trailer.

  /// "trusted", "never-written (skip)" or "never-written (report)".
  [[nodiscard]] std::string name() const {
    if (fresh == FreshBytes::Trusted) {
      return "trusted";
    }
    return reads == UnwrittenReads::Skip ? "never-written (skip)" : "never-written (report)";
  }
};

/// The marker byte: an input ending in {marker, mode} selects the mode.
constexpr std::uint8_t kFreshModeMarker = 0xD7;

/// Mode byte: bit 0 set selects NeverWritten; bit 1 then selects Report.
/// The modes an input can select, in a fixed order: trusted, never-written
/// (skip), never-written (report). A harness that keeps a Device per mode
/// across inputs (device_fuzzer, collective_fuzzer) builds them all at once
/// in this order, so each one's id space never depends on which inputs ran
/// before (fuzz.*.order).
inline constexpr std::size_t kFreshModes = 3;

/// `mode`'s place in that order.
[[nodiscard]] constexpr std::size_t mode_index(const FreshMode& mode) noexcept {
  if (mode.fresh == FreshBytes::Trusted) {
    return 0;
  }
  return mode.reads == UnwrittenReads::Skip ? 1 : 2;
}

/// The mode at `index` of that order (its size 0: no input of its own).
[[nodiscard]] constexpr FreshMode mode_at(std::size_t index) noexcept {
  if (index == 0) {
    return FreshMode{FreshBytes::Trusted, UnwrittenReads::Skip, 0};
  }
  return FreshMode{FreshBytes::NeverWritten,
                   index == 1 ? UnwrittenReads::Skip : UnwrittenReads::Report, 0};
}

[[nodiscard]] inline FreshMode fresh_mode(const std::uint8_t* data, std::size_t size) noexcept {
  FreshMode mode;
  mode.size = size;
  if (size >= 2 && data[size - 2] == kFreshModeMarker) {
    const std::uint8_t bits = data[size - 1];
    mode.size = size - 2;
    if ((bits & 1u) != 0) {
      mode.fresh = FreshBytes::NeverWritten;
      mode.reads = (bits & 2u) != 0 ? UnwrittenReads::Report : UnwrittenReads::Skip;
    }
  }
  return mode;
}

/// Whether an input runs on Devices of its own, built for it and destroyed
/// at its end, rather than on the kept ones that are reset after each
/// input: one input in eight, chosen by its bytes (FNV-1a), so a run still
/// reproduces from the input alone. Why: device_fuzzer and collective_fuzzer
/// keep their Devices across inputs and reset them (Device::reset, issue
/// 13), so without this a Device's destructor — streams finished, pages
/// given back after the input's handles and plans are gone — would never
/// run on a fuzzed state; this keeps it in every campaign at an eighth of
/// what building a Device per input cost. Own Devices are built after every
/// kept one, so they take the id spaces past theirs whatever ran before.
/// Why not destroy a kept Device and build it again (the forty-eighth to
/// fifty-second rounds): the new one starts with no capacity, so the inputs
/// after it that refill its lists end with more mallocs than frees, and
/// libFuzzer runs each such input a second time (fuzz/ROUNDS.md, round 53).
[[nodiscard]] inline bool runs_on_own_devices(const std::uint8_t* data, std::size_t size) noexcept {
  std::uint64_t hash = 14695981039346656037ull;
  for (std::size_t at = 0; at < size; ++at) {
    hash = (hash ^ data[at]) * 1099511628211ull;
  }
  return (hash >> 32) % 8 == 0;
}

} // namespace taintpool::fuzz
