// Fifo<T>: a first-in first-out queue over one ring buffer. Internal. The
// queues core keeps per Device and per stream (the Device's log of
// unconfirmed launches, a stream's pins and kept events, a host stream's
// items) use it instead of std::deque.
//
// Why not std::deque: libstdc++'s deque allocates its map and a first
// 512-byte node when it is *constructed*, so every Device paid two
// allocations for its log, every stream four for its pins and events and
// two for its host queue, before any work ran — about half of what a new
// Device cost (issue 13: the fuzzers build Devices per input, and users who
// build Devices often pay the same). A deque used as a queue also allocates
// a node and frees one every 512 bytes pushed, forever. Fifo allocates
// nothing until the first push, grows by doubling, never shrinks, and once
// its capacity covers the queue's longest length allocates nothing again.
//
// What it costs against deque: growth moves every element (T's move
// constructor must be noexcept, checked below) and invalidates references
// and iterators, which deque's push_back does not; callers hold neither
// across a push. Elements are destroyed when popped or cleared, as deque
// destroys them (a pinned Allocation's handle drops at pop_front).
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace taintpool::detail {

/// A FIFO queue on a ring buffer (see above). Move-only; single-threaded.
template <class T>
class Fifo {
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "Fifo moves elements when it grows and cannot undo a throwing move");

 public:
  template <bool Const>
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<Const, const T*, T*>;
    using reference = std::conditional_t<Const, const T&, T&>;

    Iterator() noexcept = default;
    Iterator(const Fifo* fifo, std::size_t index) noexcept
        : fifo_(fifo)
        , index_(index) {}

    reference operator*() const noexcept { return *fifo_->at(index_); }
    pointer operator->() const noexcept { return fifo_->at(index_); }
    Iterator& operator++() noexcept {
      ++index_;
      return *this;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) noexcept {
      return a.index_ == b.index_;
    }

   private:
    const Fifo* fifo_ = nullptr;
    std::size_t index_ = 0; ///< Position from the front.
  };
  using iterator = Iterator<false>;
  using const_iterator = Iterator<true>;

  /// Empty; allocates nothing.
  Fifo() noexcept = default;
  Fifo(const Fifo&) = delete;
  Fifo& operator=(const Fifo&) = delete;
  /// The source is left empty, with no buffer.
  Fifo(Fifo&& other) noexcept
      : slots_(std::exchange(other.slots_, nullptr))
      , capacity_(std::exchange(other.capacity_, 0))
      , head_(std::exchange(other.head_, 0))
      , size_(std::exchange(other.size_, 0)) {}
  Fifo& operator=(Fifo&& other) noexcept {
    if (this != &other) {
      release();
      slots_ = std::exchange(other.slots_, nullptr);
      capacity_ = std::exchange(other.capacity_, 0);
      head_ = std::exchange(other.head_, 0);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~Fifo() { release(); }

  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Elements it holds room for before the next push allocates.
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

  [[nodiscard]] T& front() noexcept { return *at(0); }
  [[nodiscard]] const T& front() const noexcept { return *at(0); }
  [[nodiscard]] T& back() noexcept { return *at(size_ - 1); }
  [[nodiscard]] const T& back() const noexcept { return *at(size_ - 1); }

  [[nodiscard]] iterator begin() noexcept { return {this, 0}; }
  [[nodiscard]] iterator end() noexcept { return {this, size_}; }
  [[nodiscard]] const_iterator begin() const noexcept { return {this, 0}; }
  [[nodiscard]] const_iterator end() const noexcept { return {this, size_}; }

  /// Strong guarantee: if growing or constructing throws, nothing changed.
  void push_back(T&& value) { emplace_back(std::move(value)); }
  void push_back(const T& value) { emplace_back(value); }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) {
      return grow_and_emplace(std::forward<Args>(args)...);
    }
    T* slot = slots_ + wrap(head_ + size_);
    ::new (static_cast<void*>(slot)) T(std::forward<Args>(args)...);
    ++size_;
    return *slot;
  }

  /// Destroys the front element now. The queue must not be empty.
  void pop_front() noexcept {
    std::destroy_at(slots_ + head_);
    head_ = wrap(head_ + 1);
    --size_;
  }

  /// Destroys every element, front first; keeps the buffer.
  void clear() noexcept {
    while (size_ != 0) {
      pop_front();
    }
    head_ = 0;
  }

 private:
  static constexpr std::size_t first_capacity = 4;

  [[nodiscard]] std::size_t wrap(std::size_t index) const noexcept {
    return index & (capacity_ - 1); // capacity_ is a power of two.
  }
  [[nodiscard]] T* at(std::size_t index) const noexcept { return slots_ + wrap(head_ + index); }

  template <class... Args>
  T& grow_and_emplace(Args&&... args) {
    const std::size_t capacity = capacity_ == 0 ? first_capacity : 2 * capacity_;
    std::allocator<T> allocator;
    T* slots = allocator.allocate(capacity);
    // The new element first: it may throw (or be made from an element
    // already here), and then only the new buffer is given back.
    T* made = slots + size_;
    try {
      ::new (static_cast<void*>(made)) T(std::forward<Args>(args)...);
    } catch (...) {
      allocator.deallocate(slots, capacity);
      throw;
    }
    for (std::size_t index = 0; index < size_; ++index) {
      T* from = at(index);
      ::new (static_cast<void*>(slots + index)) T(std::move(*from));
      std::destroy_at(from);
    }
    if (slots_ != nullptr) {
      allocator.deallocate(slots_, capacity_);
    }
    slots_ = slots;
    capacity_ = capacity;
    head_ = 0;
    ++size_;
    return *made;
  }

  void release() noexcept {
    clear();
    if (slots_ != nullptr) {
      std::allocator<T>().deallocate(slots_, capacity_);
      slots_ = nullptr;
      capacity_ = 0;
    }
  }

  T* slots_ = nullptr;
  std::size_t capacity_ = 0; ///< 0 or a power of two.
  std::size_t head_ = 0;     ///< The front's slot.
  std::size_t size_ = 0;
};

} // namespace taintpool::detail
