// Scratch<T>: a grow-only array of trivially copyable T that a hot loop
// fills by index. Internal.
//
// Why not std::vector: the Device resolves every binding of every launch
// into arrays it reuses, and push_back pays a capacity check and a size
// store per element; resize() would need T to be default-constructible,
// which the id types deliberately are not. This holds raw capacity and
// hands out a pointer: the caller asks once per launch for room for n
// elements (one compare when warm), then constructs them in place. No
// element is ever destroyed (T is trivially destructible), so there is
// nothing to clear.
//
// Cost: reserve() is a compare when the capacity suffices; growth (rare,
// the first launches with more bindings than before) allocates and copies
// nothing — the old elements are scratch. Allocation-free once warm (G10).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <type_traits>

namespace taintpool::detail {

/// Grow-only raw capacity for trivially copyable T (see above). Neither
/// copyable nor movable.
template <class T>
class Scratch {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "Scratch holds plain records only");

 public:
  Scratch() noexcept = default;
  ~Scratch() { release(); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  Scratch(Scratch&&) = delete; ///< Its owner (a Device) never moves either.
  Scratch& operator=(Scratch&&) = delete;

  /// Room for `count` elements, their previous contents unspecified.
  /// Throws std::bad_alloc (nothing changes) if it must grow and cannot.
  [[nodiscard]] T* reserve(std::size_t count) {
    if (count > capacity_) [[unlikely]] {
      grow(count);
    }
    return data_;
  }

  /// What the last reserve() returned (null before the first): a caller
  /// that filled it earlier reads its elements back without asking again.
  [[nodiscard]] T* data() const noexcept { return data_; }

  /// Elements there is room for.
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

 private:
  void grow(std::size_t count) {
    const std::size_t capacity = std::max({count, capacity_ * 2, std::size_t{8}});
    T* data = std::allocator<T>().allocate(capacity); // Throws, leaving this as it was.
    release();
    data_ = data;
    capacity_ = capacity;
  }

  void release() noexcept {
    if (data_ != nullptr) {
      std::allocator<T>().deallocate(data_, capacity_);
      data_ = nullptr;
      capacity_ = 0;
    }
  }

  T* data_ = nullptr;
  std::size_t capacity_ = 0;
};

} // namespace taintpool::detail
