// FailureId and AllocationId: the two names that cross every layer.
//
// A FailureId names one failure event in an ErrorGraph (G1). It is 64 bits
// wide because ids are minted once per write scope and never reused: at a
// billion launches a second, 2^64 ids last five centuries, while 2^32 would
// wrap in four seconds. The width is free where it is stored — a Taint keeps
// it next to two 64-bit offsets, with no padding to fill (T6).
//
// An AllocationId names one live buffer for skip records and reports. The
// pool mints them, also counting up from 1 and never reusing one, so a report
// that names allocation 7 names exactly one buffer over the program's life.
//
// Both are nonzero by construction, which leaves 0 free as the "no id" state
// inside packed storage (Taint's inline claim, the graph's slot tables) with
// no extra flag. Both are trivially copyable, totally ordered, hashable and
// printable.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

namespace taintpool {

namespace detail {

[[noreturn]] void throw_zero_id(const char* what);

/// The shared shape of both ids. A distinct Tag keeps a FailureId from being
/// passed where an AllocationId is wanted.
template <class Tag>
class NonzeroId {
 public:
  /// Wraps a raw value. Throws std::invalid_argument on 0, which no id ever is.
  [[nodiscard]] static constexpr NonzeroId from_raw(std::uint64_t raw) {
    if (raw == 0) {
      throw_zero_id(Tag::name);
    }
    return NonzeroId(raw);
  }

  /// The raw value, never 0: for packed storage, hashing and messages.
  [[nodiscard]] constexpr std::uint64_t raw() const noexcept { return raw_; }

  /// By value. Since ids count up and are never reused (G1), the order is
  /// minting order: a smaller id was minted earlier.
  friend constexpr bool operator==(NonzeroId, NonzeroId) noexcept = default;
  // clang-tidy 14 sees the literal 0 a defaulted <=> compares with.
  // NOLINTNEXTLINE(modernize-use-nullptr)
  friend constexpr std::strong_ordering operator<=>(NonzeroId, NonzeroId) noexcept = default;

 private:
  constexpr explicit NonzeroId(std::uint64_t raw) noexcept
      : raw_(raw) {}
  std::uint64_t raw_;
};

/// The tags that make the two ids distinct types; `name` is what from_raw's
/// error message calls the id.
struct FailureTag {
  static constexpr const char* name = "failure";
};
struct AllocationTag {
  static constexpr const char* name = "allocation";
};

} // namespace detail

/// One failure event; the key of an ErrorGraph node (G1).
using FailureId = detail::NonzeroId<detail::FailureTag>;

/// One allocation, for skip records and reports (G7, G8).
using AllocationId = detail::NonzeroId<detail::AllocationTag>;

/// "failure 12" / "allocation 7": the words reports are written in.
[[nodiscard]] std::string to_string(FailureId id);
[[nodiscard]] std::string to_string(AllocationId id);
/// Write to_string(id).
std::ostream& operator<<(std::ostream& out, FailureId id);
std::ostream& operator<<(std::ostream& out, AllocationId id);

} // namespace taintpool

/// Lets both ids key unordered containers: one multiply, noexcept.
template <class Tag>
struct std::hash<taintpool::detail::NonzeroId<Tag>> {
  std::size_t operator()(taintpool::detail::NonzeroId<Tag> id) const noexcept {
    // Fibonacci mixing: sequential ids spread over every bucket.
    return static_cast<std::size_t>(id.raw() * 0x9E3779B97F4A7C15ull);
  }
};
