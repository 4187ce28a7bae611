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
// touches no handle. Copies share the handles; moved-from and
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
#include <utility>
#include <vector>

namespace taintpool {

class Device;

/// A launch's bindings resolved once (see above); made by Device::plan.
class LaunchPlan {
 public:
  /// Binds nothing; launching through it is std::invalid_argument.
  LaunchPlan() = default;
  /// Shares the handles (one atomic increment per binding).
  LaunchPlan(const LaunchPlan&) = default;
  LaunchPlan& operator=(const LaunchPlan&) = default;
  /// Takes the handles; `other` is left binding nothing.
  LaunchPlan(LaunchPlan&& other) noexcept { swap(other); }
  LaunchPlan& operator=(LaunchPlan&& other) noexcept {
    LaunchPlan taken(std::move(other));
    swap(taken);
    return *this;
  }
  ~LaunchPlan() = default;

  /// The stream its launches run on.
  [[nodiscard]] StreamId stream() const noexcept { return stream_; }
  /// The read bindings, as given to Device::plan.
  [[nodiscard]] std::span<const Binding> reads() const noexcept {
    return {bindings_.data(), reads_};
  }
  /// The write bindings, as given to Device::plan.
  [[nodiscard]] std::span<const Binding> writes() const noexcept {
    return std::span<const Binding>(bindings_).subspan(reads_);
  }
  /// Whether a Device made it (and it was not moved from).
  [[nodiscard]] bool valid() const noexcept { return stream_.device() != 0; }

 private:
  friend class Device;

  void swap(LaunchPlan& other) noexcept {
    std::swap(stream_, other.stream_);
    std::swap(reads_, other.reads_);
    bindings_.swap(other.bindings_);
    bound_.swap(other.bound_);
    taints_.swap(other.taints_);
    accesses_.swap(other.accesses_);
    held_.swap(other.held_);
    std::swap(reads_cross_, other.reads_cross_);
    std::swap(writes_cross_, other.writes_cross_);
  }

  /// Its stream, which names the Device that made it (a process-wide serial,
  /// never reused: a plan outliving its Device is refused by the next one,
  /// even one built at the same address).
  StreamId stream_;
  std::size_t reads_ = 0; ///< Every array below: the reads, then the writes.
  std::vector<Binding> bindings_;
  std::vector<BoundBuffer> bound_;
  std::vector<Taint*> taints_;
  std::vector<StreamAccess> accesses_;
  std::vector<Allocation> held_; ///< One handle per binding: liveness (see above).
  bool reads_cross_ = false;     ///< A read is homed on another stream (O2).
  bool writes_cross_ = false;    ///< Likewise, an output.
};

} // namespace taintpool
