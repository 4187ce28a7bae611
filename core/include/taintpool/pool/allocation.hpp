// Allocation and Binding: how a caller holds memory and names bytes of it.
//
// An Allocation is the RAII handle to one live buffer. Copying it shares the
// buffer (one atomic increment); the buffer ends when the last copy is gone.
// Dropping the last copy may happen on any thread: it costs one atomic
// decrement and, for the last one, one lock-free push onto the manager's
// release inbox. The manager discovers the release on its next call and only
// then clears the taint and reuses the memory (P1), so nothing the pool owns
// is touched off its thread.
//
// A Binding is a plain value — (allocation id, byte range within it) — the
// unit launches read and write, and host reads and writes name. It holds no
// reference: the manager checks it on every use, so a binding that outlives
// its allocation, or reaches past its end, is a clear error (NotFound,
// InvalidBinding; P3), never a stray access.
//
// A handle may outlive its manager. The allocation then no longer exists
// (its slice was tombstoned when the manager went, P1); the handle can still
// be copied and dropped safely, and any binding of it is NotFound.
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/failure_id.hpp>

#include <cstdint>
#include <utility>

namespace taintpool {

namespace detail {
struct Slice;
void retain(Slice* slice) noexcept;
void release(Slice* slice) noexcept;
} // namespace detail

/// (allocation, byte range within it): what a launch reads or writes (§3.4).
struct Binding {
  AllocationId allocation; ///< Whose bytes.
  ByteRange range;         ///< Allocation-relative; checked on every use (P3).

  /// Same allocation, same range.
  friend bool operator==(const Binding&, const Binding&) = default;
};

// One by-value operator= serves as both copy and move assignment (copy and
// swap), which the rule-of-five check does not recognise.
/// The RAII, shared handle to one live buffer (see above): three words;
/// copies share the buffer, the last one to go ends it (P1).
class Allocation { // NOLINT(cppcoreguidelines-special-member-functions)
 public:
  /// An empty handle: holds nothing, binds nothing.
  Allocation() noexcept = default;

  /// Shares the buffer: one relaxed atomic increment, no lock, any thread.
  Allocation(const Allocation& other) noexcept
      : slice_(other.slice_)
      , id_(other.id_)
      , size_(other.size_) {
    if (slice_ != nullptr) {
      detail::retain(slice_);
    }
  }
  /// Takes the share; `other` is left empty. No atomic operation.
  Allocation(Allocation&& other) noexcept
      : slice_(std::exchange(other.slice_, nullptr))
      , id_(std::exchange(other.id_, 0))
      , size_(std::exchange(other.size_, 0)) {}
  /// Copy or move assignment (by value, then swap); the old share is dropped
  /// as by reset().
  Allocation& operator=(Allocation other) noexcept {
    swap(other);
    return *this;
  }
  /// reset().
  ~Allocation() { reset(); }

  /// Drops this handle's share now: one atomic decrement and, for the last
  /// share, one lock-free push onto the manager's release inbox. Safe on any
  /// thread; the manager clears the taint (P1) on its next call.
  void reset() noexcept {
    if (slice_ != nullptr) {
      detail::release(std::exchange(slice_, nullptr));
      id_ = 0;
      size_ = 0;
    }
  }

  /// Exchanges two handles; no atomic operation.
  void swap(Allocation& other) noexcept {
    std::swap(slice_, other.slice_);
    std::swap(id_, other.id_);
    std::swap(size_, other.size_);
  }

  /// Holds a share: not default-constructed, moved from or reset. Says
  /// nothing about liveness — a handle that outlived its manager is true.
  [[nodiscard]] explicit operator bool() const noexcept { return slice_ != nullptr; }

  /// The allocation's id. Throws std::logic_error on an empty handle.
  [[nodiscard]] AllocationId id() const;

  /// Bytes the caller asked for (0 is valid and holds no bytes).
  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }

  /// Every byte of the allocation. Throws std::logic_error on an empty handle.
  [[nodiscard]] Binding whole() const { return Binding{id(), ByteRange::sized(0, size_)}; }

  /// `range` of this allocation. Throws Exception(InvalidBinding) when it
  /// reaches past the end (P3), std::logic_error on an empty handle. Checks
  /// the handle's size only: whether the allocation still exists is checked
  /// where the binding is used (NotFound).
  [[nodiscard]] Binding bind(ByteRange range) const;

  /// [offset, offset + size) of this allocation; overflow (std::overflow_error)
  /// and overreach (InvalidBinding) throw.
  [[nodiscard]] Binding bind(std::uint64_t offset, std::uint64_t size) const {
    return bind(ByteRange::sized(offset, size));
  }

 private:
  friend class MemoryManager;
  /// Adopts one reference the manager already counted.
  Allocation(detail::Slice* slice, AllocationId id, std::uint64_t size) noexcept
      : slice_(slice)
      , id_(id.raw())
      , size_(size) {}

  detail::Slice* slice_ = nullptr;
  std::uint64_t id_ = 0;
  std::uint64_t size_ = 0;
};

} // namespace taintpool
