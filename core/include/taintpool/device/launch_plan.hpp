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
// clean plain launch through the plan copies the context and never points
// the Device at the views; every way off that path (a dirty binding, a
// crossing, a failed or throwing body) adopts them first (Device::adopt_views),
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
// Cost: building one allocates its arrays and takes a handle per binding
// (one atomic each); launching through it allocates nothing (G10) and
// touches no handle: on HostBackend, 2 reads and 1 write, 268 instructions
// per launch() (bench/RESULTS.md, launch9). Copies share the handles and
// make their own views; moved-from and
// default-constructed plans bind nothing and launching through them is
// std::invalid_argument, as is a plan made by another Device.
// Threads (O5): a plan is read, never written, by the launches through it,
// so any number of threads may launch through one plan at once.
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
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace taintpool {

class Device;

/// A launch's bindings resolved once (see above); made by Device::plan.
class LaunchPlan {
 public:
  /// Binds nothing; launching through it is std::invalid_argument.
  LaunchPlan() = default;
  /// Shares the handles (one atomic increment per binding); the views
  /// below are made again over the copy's own arrays. Everything the plan
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
  [[nodiscard]] std::span<const Binding> reads() const noexcept { return read_bindings_; }
  /// The write bindings, as given to Device::plan.
  [[nodiscard]] std::span<const Binding> writes() const noexcept { return write_bindings_; }
  /// Whether a Device made it (and it was not moved from).
  [[nodiscard]] bool valid() const noexcept { return owned_.stream.device() != 0; }

 private:
  friend class Device;

  void swap(LaunchPlan& other) noexcept {
    // The views point into the arrays' heap blocks, which moving the
    // vectors hands over without moving them: they go along with them.
    std::swap(owned_, other.owned_);
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
    const std::size_t reads = owned_.reads;
    const std::size_t writes = owned_.bindings.size() - reads;
    read_bindings_ = {owned_.bindings.data(), reads};
    write_bindings_ = {owned_.bindings.data() + reads, writes};
    read_taints_ = {owned_.taints.data(), reads};
    write_taints_ = {owned_.taints.data() + reads, writes};
    read_accesses_ = {owned_.accesses.data(), reads};
    write_accesses_ = {owned_.accesses.data() + reads, writes};
    context_ =
        KernelContext(0, {}, {owned_.bound.data(), reads}, {owned_.bound.data() + reads, writes},
                      made.backend_data(), made.stream(), made.stream_handle());
  }

  /// What the plan owns; the views below are derived from it.
  struct Owned {
    /// Its stream, which names the Device that made it (a process-wide
    /// serial, never reused: a plan outliving its Device is refused by the
    /// next one, even one built at the same address).
    StreamId stream;
    std::size_t reads = 0; ///< Every array below: the reads, then the writes.
    std::vector<Binding> bindings;
    std::vector<BoundBuffer> bound;
    std::vector<Taint*> taints;
    std::vector<StreamAccess> accesses;
    std::vector<Allocation> held; ///< One handle per binding: liveness (see above).
    bool reads_cross = false;     ///< A read is homed on another stream (O2).
    bool writes_cross = false;    ///< Likewise, an output.
  };
  // A plan's move and swap are noexcept because moving Owned is.
  static_assert(std::is_nothrow_move_constructible_v<Owned> &&
                std::is_nothrow_move_assignable_v<Owned>);
  Owned owned_;

  // Views over the arrays above, made once (derive) so that a launch copies
  // them instead of computing them: a launch through a plan reads the views,
  // the context and the taints, nothing else of the plan (issue 11, item 7).
  std::span<const Binding> read_bindings_;
  std::span<const Binding> write_bindings_;
  std::span<Taint* const> read_taints_;
  std::span<Taint* const> write_taints_;
  std::span<const StreamAccess> read_accesses_;
  std::span<const StreamAccess> write_accesses_;
  /// The body's context but for the launch's number and name: the bound
  /// buffers, the backend's data, the stream and its handle are fixed while
  /// the plan holds its allocations and its stream lives (a launch finds it
  /// live first), so a launch copies it and sets the two (run_flat).
  KernelContext context_{0, {}, {}, {}, nullptr};
};

} // namespace taintpool
