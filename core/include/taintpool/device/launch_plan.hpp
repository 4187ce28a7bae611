// LaunchPlan: a kernel's binding shape resolved once, for many launches
// (issue 11, item 7).
//
// A plain launch resolves every binding on every call: it looks the
// allocation up in the id table, checks the range against its size (P3),
// and computes the pointer the body sees — about 49 instructions per read
// binding and 80 per write on HostBackend, more than half of the scope.
// None of that can change while the allocation lives. A plan does it once
// (Device::plan), and every launch through it (Device::launch(plan, ...),
// Device::submit(plan, ...)) re-checks only what can change between two
// launches:
//   * the stream: live, as for any launch (NotFound once destroyed);
//   * every read's taint (S1) and every output's claims (S6, N1): two loads
//     per binding when clean, the plain launch's own checks otherwise;
//   * ordering (O1-O4): whether the Device orders at all, and the
//     cross-stream records, exactly as a plain launch asks — what crosses
//     (a binding homed on another stream) is fixed, so the plan keeps it.
// From there the launch is the plain launch, the same code to the answer:
// the same skips, releases, errors, waits, pins and races.
//
// What is built once besides: the body's KernelContext but for the launch's
// number and name (the bound buffers, the backend's data, the stream and its
// handle), and the views of the arrays the Device's general scope reads. A
// clean plain launch through the plan sets the context's number and name in
// place and hands it to the body, and never points the Device at the views; every way off that path
// (a dirty binding, a crossing, a failed or throwing body) adopts them first (Device::adopt_views),
// so the general scope sees exactly what a plain launch would have resolved.
//
// Liveness: a plan holds one handle per binding (as an Allocation copy
// does), so its allocations cannot end under it and its pointers stay
// valid. Dropping every other handle therefore leaves the buffers live
// (P1 applies when the plan goes); a binding the user wants to let go is
// let go with the plan. That is the one difference from a plain launch of
// the same bindings, and it is the difference between holding a handle and
// not: a plain launch of bindings whose handles are held answers the same.
// Building a plan checks every binding as a launch does (NotFound,
// InvalidBinding, nothing held), so a plan that exists binds only valid
// ranges of live buffers.
//
// Cost: building one allocates its arrays — one heap block for all five
// (Arrays, below) — and takes a handle per binding (one atomic each);
// launching through it allocates nothing (G10) and
// touches no handle: on HostBackend, 2 reads and 1 write, 239 instructions
// per launch() and 47 cache lines after an eviction (bench/RESULTS.md,
// launch12). Copies share the handles and
// make their own views; moved-from and
// default-constructed plans bind nothing and launching through them is
// std::invalid_argument, as is a plan made by another Device.
// Threads (O5): any number of threads may launch through one plan at once.
// A launch through it writes only its context's number and name, under the
// lock of the one Device that may launch it, and reads the rest; a copy of
// the plan reads none of the two (see context_).
// Device::memory().reset() (tests only) ends allocations a plan holds:
// like every use of memory() it bypasses the scopes, and a plan made
// before it must not be launched after it.
#pragma once

#include <taintpool/device/launch.hpp>
#include <taintpool/pool/allocation.hpp>
#include <taintpool/stream/happens_before.hpp>
#include <taintpool/stream/stream_id.hpp>
#include <taintpool/taint.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>

namespace taintpool {

class Device;

/// A launch's bindings resolved once (see above); made by Device::plan.
///
/// Aligned to a cache line, and laid out so that a clean launch through it
/// touches one of its lines (owned_, taints_ and the context's number and
/// name), and its body the next (the context's bound buffers, backend
/// data, stream and handle): beside real launches the driver's work evicts
/// the plan between two scopes, and each line the scope brings back is an
/// L2 round trip (issue 11, item 7; bench/RESULTS.md, launch12: the
/// 240-byte plan spanned five lines, four of them read per launch). The
/// views only the general scope reads follow.
class alignas(64) LaunchPlan {
 public:
  /// Binds nothing; launching through it is std::invalid_argument.
  LaunchPlan() = default;
  /// Shares the handles (one atomic increment per binding) and copies the
  /// arrays into one block of its own; the views below are made again over
  /// it. Everything the plan
  /// owns is one member (Owned), so the compiler copies it whole: a field
  /// added there cannot be left out of a copy or a swap.
  LaunchPlan(const LaunchPlan& other)
      : owned_(other.owned_) {
    derive(other.context_);
  }
  LaunchPlan& operator=(const LaunchPlan& other) {
    LaunchPlan copy(other);
    swap(copy);
    return *this;
  }
  /// Takes the handles; `other` is left binding nothing.
  LaunchPlan(LaunchPlan&& other) noexcept { swap(other); }
  LaunchPlan& operator=(LaunchPlan&& other) noexcept {
    LaunchPlan taken(std::move(other));
    swap(taken);
    return *this;
  }
  ~LaunchPlan() = default;

  /// The stream its launches run on.
  [[nodiscard]] StreamId stream() const noexcept { return owned_.stream; }
  /// The read bindings, as given to Device::plan.
  [[nodiscard]] std::span<const Binding> reads() const noexcept {
    return {owned_.arrays.bindings(), owned_.reads};
  }
  /// The write bindings, as given to Device::plan.
  [[nodiscard]] std::span<const Binding> writes() const noexcept {
    return {owned_.arrays.bindings() + owned_.reads, owned_.arrays.size() - owned_.reads};
  }
  /// Whether a Device made it (and it was not moved from).
  [[nodiscard]] bool valid() const noexcept { return owned_.stream.device() != 0; }

 private:
  friend class Device;

  void swap(LaunchPlan& other) noexcept {
    // The views point into the arrays' heap block, which moving the
    // arrays hands over without moving it: they go along with it.
    std::swap(owned_, other.owned_);
    std::swap(taints_, other.taints_);
    std::swap(read_bindings_, other.read_bindings_);
    std::swap(write_bindings_, other.write_bindings_);
    std::swap(read_taints_, other.read_taints_);
    std::swap(write_taints_, other.write_taints_);
    std::swap(read_accesses_, other.read_accesses_);
    std::swap(write_accesses_, other.write_accesses_);
    std::swap(context_, other.context_);
  }

  /// Makes the views below over this plan's arrays; `made` gives the
  /// context's Device-side parts (backend data, stream and its handle).
  void derive(const KernelContext& made) noexcept {
    const Arrays& arrays = owned_.arrays;
    const std::size_t reads = owned_.reads;
    const std::size_t writes = arrays.size() - reads;
    read_bindings_ = {arrays.bindings(), reads};
    write_bindings_ = {arrays.bindings() + reads, writes};
    read_taints_ = {arrays.taints(), reads};
    write_taints_ = {arrays.taints() + reads, writes};
    taints_ = arrays.taints();
    read_accesses_ = {arrays.accesses(), reads};
    write_accesses_ = {arrays.accesses() + reads, writes};
    context_ = KernelContext(0, {}, {arrays.bound(), reads}, {arrays.bound() + reads, writes},
                             made.backend_data(), made.stream(), made.stream_handle());
  }

  /// The plan's five arrays, one entry per binding (the reads, then the
  /// writes), in one heap block: five vectors cost a plan five allocations,
  /// and under ASan each records a stack (issue 13; issue 11, item 7). The
  /// bindings lead the block (so reads() and writes() are its address, with
  /// no offset to compute), the handles and the other arrays follow, each
  /// on its own type's alignment (all of them at most operator new's).
  /// Counts are 32-bit (a plan of 2^32 bindings could not be allocated
  /// anyway; the constructor refuses one), so owned_ fits half a line.
  /// Copying makes
  /// a block of its own and shares the handles (Allocation's copy is
  /// noexcept: only the block can fail, and then nothing was made); moving
  /// hands the block over, so views into it stay valid (LaunchPlan::swap).
  class Arrays {
   public:
    Arrays() = default;
    /// Room for `count` entries, none made yet: add() makes them.
    /// std::length_error for 2^32 or more.
    explicit Arrays(std::size_t count)
        : block_(checked(count) == 0 ? nullptr : ::operator new(block_size(count)))
        , capacity_(static_cast<std::uint32_t>(count)) {}
    Arrays(const Arrays& other)
        : Arrays(other.size_) {
      for (std::size_t at = 0; at < other.size_; ++at) {
        add(other.bindings()[at], other.bound()[at], other.taints()[at], other.accesses()[at],
            other.held()[at]);
      }
    }
    Arrays(Arrays&& other) noexcept
        : block_(std::exchange(other.block_, nullptr))
        , capacity_(std::exchange(other.capacity_, 0))
        , size_(std::exchange(other.size_, 0)) {}
    /// The copy is made (and may throw) before anything here changes.
    Arrays& operator=(const Arrays& other) {
      Arrays copy(other);
      return *this = std::move(copy);
    }
    Arrays& operator=(Arrays&& other) noexcept {
      Arrays taken(std::move(other));
      std::swap(block_, taken.block_);
      std::swap(capacity_, taken.capacity_);
      std::swap(size_, taken.size_);
      return *this;
    }
    ~Arrays() {
      std::destroy_n(held(), size_);
      ::operator delete(block_);
    }

    /// Makes the next entry; there must be room (the count given above).
    void add(const Binding& binding, const BoundBuffer& bound, Taint* taint,
             const StreamAccess& access, Allocation handle) noexcept {
      std::construct_at(bindings() + size_, binding);
      std::construct_at(this->bound() + size_, bound);
      std::construct_at(taints() + size_, taint);
      std::construct_at(accesses() + size_, access);
      std::construct_at(held() + size_, std::move(handle));
      ++size_;
    }

    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] Binding* bindings() const noexcept { return at<Binding>(0); }
    [[nodiscard]] Allocation* held() const noexcept { return at<Allocation>(held_at(capacity_)); }
    [[nodiscard]] BoundBuffer* bound() const noexcept {
      return at<BoundBuffer>(bound_at(capacity_));
    }
    [[nodiscard]] Taint** taints() const noexcept { return at<Taint*>(taints_at(capacity_)); }
    [[nodiscard]] StreamAccess* accesses() const noexcept {
      return at<StreamAccess>(accesses_at(capacity_));
    }

   private:
    // Where each array starts in a block of `count` entries, and its size.
    static constexpr std::size_t round_up(std::size_t offset, std::size_t align) noexcept {
      return (offset + align - 1) / align * align;
    }
    static std::size_t checked(std::size_t count) {
      if (count > UINT32_MAX) [[unlikely]] {
        throw std::length_error("a launch plan holds fewer than 2^32 bindings");
      }
      return count;
    }
    static constexpr std::size_t held_at(std::size_t count) noexcept {
      return round_up(count * sizeof(Binding), alignof(Allocation));
    }
    static constexpr std::size_t bound_at(std::size_t count) noexcept {
      return round_up(held_at(count) + count * sizeof(Allocation), alignof(BoundBuffer));
    }
    static constexpr std::size_t taints_at(std::size_t count) noexcept {
      return round_up(bound_at(count) + count * sizeof(BoundBuffer), alignof(Taint*));
    }
    static constexpr std::size_t accesses_at(std::size_t count) noexcept {
      // NOLINTNEXTLINE(bugprone-sizeof-expression): the array holds pointers.
      return round_up(taints_at(count) + count * sizeof(Taint*), alignof(StreamAccess));
    }
    static constexpr std::size_t block_size(std::size_t count) noexcept {
      return accesses_at(count) + count * sizeof(StreamAccess);
    }
    static_assert(alignof(Allocation) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__ &&
                  alignof(Binding) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__ &&
                  alignof(BoundBuffer) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__ &&
                  alignof(StreamAccess) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
    // Nothing but the handles needs destroying.
    static_assert(std::is_trivially_destructible_v<Binding> &&
                  std::is_trivially_destructible_v<BoundBuffer> &&
                  std::is_trivially_destructible_v<StreamAccess>);

    template <class T>
    [[nodiscard]] T* at(std::size_t offset) const noexcept {
      return reinterpret_cast<T*>(static_cast<std::byte*>(block_) + offset);
    }

    void* block_ = nullptr;
    std::uint32_t capacity_ = 0;
    std::uint32_t size_ = 0;
  };

  /// What the plan owns; the views below are derived from it.
  struct Owned {
    /// Its stream, which names the Device that made it (a process-wide
    /// serial, never reused: a plan outliving its Device is refused by the
    /// next one, even one built at the same address).
    StreamId stream;
    /// Per binding: the binding, its bound buffer, taint, access, and one
    /// handle (liveness, see above).
    Arrays arrays;
    std::uint32_t reads = 0;   ///< Of the arrays' entries, the first `reads` are reads.
    bool reads_cross = false;  ///< A read is homed on another stream (O2).
    bool writes_cross = false; ///< Likewise, an output.
  };
  // A plan's move and swap are noexcept because moving Owned is.
  static_assert(std::is_nothrow_move_constructible_v<Owned> &&
                std::is_nothrow_move_assignable_v<Owned>);
  // What a clean launch reads, in this order, in the plan's first two lines
  // (see above): owned_ (the stream; the bindings' block and counts, for
  // reads() and writes()), the taints, and the context's last 56 bytes.
  Owned owned_;
  /// Every taint, reads then writes (owned_.arrays.size() of them): what a
  /// launch checks first, in one pass (Device::launch_plain).
  Taint* const* taints_ = nullptr;
  /// The body's context: the bound buffers, the backend's data, the stream
  /// and its handle are fixed while the plan holds its allocations and its
  /// stream lives (a launch finds it live first), so a clean launch sets
  /// its number and name here, in place, and hands the body this one
  /// (run_flat). Mutable for that, and written only so: by a launch of the
  /// Device that made the plan (any other is refused first), under that
  /// Device's lock, which every launch through the plan takes — so two
  /// launches through one plan never write it at once, and the body reads
  /// what its own launch wrote. A copy of the plan reads only the fields
  /// no launch writes (derive).
  mutable KernelContext context_{0, {}, {}, {}, nullptr};

  // Views over the arrays above, made once (derive) for the general scope
  // and the dirty checks, which a clean launch never reaches (adopt_views).
  std::span<const Binding> read_bindings_;
  std::span<const Binding> write_bindings_;
  std::span<Taint* const> read_taints_;
  std::span<Taint* const> write_taints_;
  std::span<const StreamAccess> read_accesses_;
  std::span<const StreamAccess> write_accesses_;

  // The two lines a clean launch reads (members in declaration order, each
  // 8-aligned: no padding between them): owned_, taints_ and the context's
  // launch number and name in the first, the rest of the context in the
  // second.
  static_assert(alignof(Owned) == 8 && sizeof(Owned) == 32 && sizeof(KernelContext) == 80 &&
                sizeof(Owned) + sizeof(Taint* const*) + sizeof(std::uint64_t) +
                        sizeof(std::string_view) ==
                    64);
};

} // namespace taintpool
