// ByteRange: a half-open span of bytes inside one allocation.
//
// Every claim, write, read and binding in taintpool is expressed as a
// ByteRange, so the type is built to make the bad cases unrepresentable
// rather than checked at every use site:
//   * begin > end cannot be constructed — ByteRange::of rejects it;
//   * offset + size cannot wrap — ByteRange::sized rejects it;
//   * the empty range is a real value ([x, x)), and it overlaps nothing, so a
//     zero-sized binding neither trips a claim nor releases one (T1, T2, T3).
//
// Cost: two uint64_t, trivially copyable; every query is inline and
// branch-light. The throwing paths are out of line (byte_range.cpp) so the
// checked constructors stay small enough to inline on hot paths.
#pragma once

#include <compare>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace taintpool {

/// A half-open [begin, end) of allocation-relative offsets (§3.1). Two words,
/// trivially copyable; every query is constexpr, noexcept and O(1).
class ByteRange {
 public:
  /// The empty range [0, 0).
  constexpr ByteRange() noexcept = default;

  /// [begin, end). Throws std::invalid_argument when begin > end (§3.1).
  [[nodiscard]] static constexpr ByteRange of(std::uint64_t begin, std::uint64_t end) {
    if (begin > end) {
      throw_inverted(begin, end);
    }
    return ByteRange(begin, end);
  }

  /// [offset, offset + size). Throws std::overflow_error when the end would
  /// pass UINT64_MAX (§3.1: arithmetic that could overflow is checked).
  [[nodiscard]] static constexpr ByteRange sized(std::uint64_t offset, std::uint64_t size) {
    if (size > UINT64_MAX - offset) {
      throw_overflow(offset, size);
    }
    return ByteRange(offset, offset + size);
  }

  /// The first byte (or the position of an empty range).
  [[nodiscard]] constexpr std::uint64_t begin() const noexcept { return begin_; }
  /// One past the last byte.
  [[nodiscard]] constexpr std::uint64_t end() const noexcept { return end_; }
  /// end − begin; cannot wrap, since begin <= end by construction.
  [[nodiscard]] constexpr std::uint64_t size() const noexcept { return end_ - begin_; }
  /// Holds no bytes: [x, x) for any x.
  [[nodiscard]] constexpr bool empty() const noexcept { return begin_ == end_; }

  /// The intersection is non-empty. An empty range overlaps nothing, not even
  /// a range that contains its position (T3: failure() of an empty range is
  /// always none).
  [[nodiscard]] constexpr bool overlaps(ByteRange other) const noexcept {
    return max(begin_, other.begin_) < min(end_, other.end_);
  }

  /// Overlapping or sharing an endpoint: [0,10) and [10,20) touch. Two claims
  /// of one failure that touch are fused into one (T5).
  [[nodiscard]] constexpr bool touches(ByteRange other) const noexcept {
    return begin_ <= other.end_ && other.begin_ <= end_;
  }

  /// Every byte of `other` is in this range. The empty range is contained in
  /// every range.
  [[nodiscard]] constexpr bool contains(ByteRange other) const noexcept {
    return other.empty() || (begin_ <= other.begin_ && other.end_ <= end_);
  }

  /// The common bytes, or an empty range when there are none.
  [[nodiscard]] constexpr ByteRange intersect(ByteRange other) const noexcept {
    const std::uint64_t lo = max(begin_, other.begin_);
    const std::uint64_t hi = min(end_, other.end_);
    return lo < hi ? ByteRange(lo, hi) : ByteRange();
  }

  /// Equality is by bounds: [3,3) != [5,5). Two empty ranges at different
  /// positions are different values even though they hold the same bytes.
  friend constexpr bool operator==(ByteRange, ByteRange) noexcept = default;

  /// Orders by begin, then end: the order claims are kept and visited in.
  friend constexpr std::strong_ordering operator<=>(ByteRange, ByteRange) noexcept = default;

 private:
  constexpr ByteRange(std::uint64_t begin, std::uint64_t end) noexcept
      : begin_(begin)
      , end_(end) {}

  static constexpr std::uint64_t max(std::uint64_t a, std::uint64_t b) noexcept {
    return a < b ? b : a;
  }
  static constexpr std::uint64_t min(std::uint64_t a, std::uint64_t b) noexcept {
    return a < b ? a : b;
  }

  [[noreturn]] static void throw_inverted(std::uint64_t begin, std::uint64_t end);
  [[noreturn]] static void throw_overflow(std::uint64_t offset, std::uint64_t size);

  std::uint64_t begin_ = 0;
  std::uint64_t end_ = 0;
};

/// "[begin, end)", the form every error message uses.
[[nodiscard]] std::string to_string(ByteRange range);
/// Writes to_string(range).
std::ostream& operator<<(std::ostream& out, ByteRange range);

} // namespace taintpool
