// ByteReader: turns a fuzzer's input into the small choices an operation
// decoder makes — which op, which allocation, which failure, which range.
//
// Why not clang's FuzzedDataProvider: it ships with libFuzzer only, and every
// fuzz target must also build under g++ as a plain corpus replayer (the
// ctest tests), so the decoders need a reader of their own.
//
// Decoding rules, shared by every target so that inputs stay meaningful as
// targets evolve:
//   * bytes are consumed front to back, little-endian for multi-byte values;
//   * a read past the end yields zero bytes, never a failure: an op whose
//     tail was cut off still decodes (to its zero-filled form), so every
//     input is a valid op sequence and no input is wasted on rejection;
//   * `below(n)` reads as few bytes as `n` needs (1 up to 256, 2 up to
//     65536, else 8), so small choices stay one byte and mutate well.
#pragma once

#include <cstddef>
#include <cstdint>

namespace taintpool::fuzz {

class ByteReader {
 public:
  ByteReader(const std::uint8_t* data, std::size_t size) noexcept
      : data_(data)
      , size_(size) {}

  /// Every byte has been consumed: the decoder should stop starting ops.
  [[nodiscard]] bool empty() const noexcept { return position_ >= size_; }

  /// Bytes consumed so far (an op's first byte is its offset in the input).
  [[nodiscard]] std::size_t position() const noexcept { return position_; }

  /// The next byte, or 0 past the end.
  std::uint8_t byte() noexcept { return position_ < size_ ? data_[position_++] : std::uint8_t{0}; }

  /// `count` bytes (at most 8), little-endian.
  std::uint64_t bytes(unsigned count) noexcept {
    std::uint64_t value = 0;
    for (unsigned at = 0; at < count && at < 8; ++at) {
      value |= std::uint64_t{byte()} << (8 * at);
    }
    return value;
  }

  std::uint64_t u64() noexcept { return bytes(8); }

  /// A value in [0, bound); 0 when bound is 0 or 1 (consuming nothing then,
  /// so a choice among one option costs no input).
  std::uint64_t below(std::uint64_t bound) noexcept {
    if (bound <= 1) {
      return 0;
    }
    const unsigned width = bound <= 0x100 ? 1 : bound <= 0x10000 ? 2 : 8;
    return bytes(width) % bound;
  }

  /// A value in [lo, hi] (inclusive); lo when hi <= lo.
  std::uint64_t in(std::uint64_t lo, std::uint64_t hi) noexcept {
    if (hi <= lo) {
      return lo;
    }
    const std::uint64_t span = hi - lo;
    return span == UINT64_MAX ? u64() : lo + below(span + 1);
  }

  /// One byte's low bit.
  bool flag() noexcept { return (byte() & 1u) != 0; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t position_ = 0;
};

} // namespace taintpool::fuzz
