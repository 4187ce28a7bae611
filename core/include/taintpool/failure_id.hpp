// FailureId and AllocationId: the two names that cross every layer.
//
// A FailureId names one failure event in an ErrorGraph (G1). It is 64 bits
// wide because ids are minted once per write scope and never reused: at a
// billion launches a second, 2^64 ids last five centuries, while 2^32 would
// wrap in four seconds. The width is free where it is stored — a Taint keeps
// it next to two 64-bit offsets, with no padding to fill (T6).
//
// An AllocationId names one live buffer for skip records, reports and
// bindings. Each MemoryManager mints them in an id space of its own: the top
// 12 bits name the space (allocation_space: a number no other live manager
// holds, 0 for the first), the low 52 bits count that manager's allocations
// up from 1 and never reuse one (allocation_number). So a binding made on
// one device and used on another is recognised as foreign — one table
// lookup misses, and only then is the space compared — and refused naming
// both, never resolved to the other device's buffer of the same number; and
// a report that names allocation 7 names exactly one buffer of its device.
// Messages print the number alone while the space is 0, so a program with
// one device reads "allocation 7"; another space reads "allocation 7
// (memory 2)". A space is handed on when its manager goes: a binding that
// outlives its device is the one case the space cannot tell apart.
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
[[noreturn]] void throw_bad_allocation_id(std::uint32_t space, std::uint64_t number);

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

/// An AllocationId's layout (see above): its space in the top bits, its
/// number in the rest.
inline constexpr unsigned allocation_number_bits = 52;
inline constexpr std::uint64_t allocation_number_mask =
    (std::uint64_t{1} << allocation_number_bits) - 1;
/// The most id spaces, so the most MemoryManagers alive at once.
inline constexpr std::uint32_t allocation_spaces = std::uint32_t{1}
                                                   << (64 - allocation_number_bits);

/// Which manager's id space the id was minted in (0 for the first manager).
[[nodiscard]] constexpr std::uint32_t allocation_space(AllocationId id) noexcept {
  return static_cast<std::uint32_t>(id.raw() >> allocation_number_bits);
}
/// The id's number within its space: 1, 2, 3 … as the manager minted them.
[[nodiscard]] constexpr std::uint64_t allocation_number(AllocationId id) noexcept {
  return id.raw() & allocation_number_mask;
}
/// The id numbered `number` in `space`: the inverse of the two above, so
/// the layout is spelled here alone (a manager's first id is
/// allocation_id(id_space(), 1)). Throws std::invalid_argument for a
/// number that is 0 or does not fit its bits, or a space past the last,
/// rather than name an id of another space.
[[nodiscard]] constexpr AllocationId allocation_id(std::uint32_t space, std::uint64_t number) {
  if (number == 0 || number > allocation_number_mask || space >= allocation_spaces) {
    detail::throw_bad_allocation_id(space, number);
  }
  return AllocationId::from_raw((std::uint64_t{space} << allocation_number_bits) | number);
}

/// "failure 12" / "allocation 7" / "allocation 7 (memory 2)": the words
/// reports are written in.
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
