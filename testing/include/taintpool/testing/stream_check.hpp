// StreamWatch and ObservedBackend: a Device on a DeferredHostBackend,
// watched — what the stream harnesses (fuzz/stream_fuzzer.cpp and
// tests/device/streams_model_stateful_test.cpp) share.
//
// Why a decorator. The stream model (model::StreamModel) derives the order
// of work from what the queues actually did, not from what core believes.
// ObservedBackend sits between the Device and a DeferredHostBackend and
// forwards every call, telling StreamWatch each event the host can observe:
// an event recorded, a wait queued, done() answering true, finish()
// returning, a host copy returning. The Device cannot tell the difference.
//
// What StreamWatch checks, besides feeding the model (whose O1/O2/O4
// verdicts it collects):
//   * at execution time (O1, O3): when a queued item runs, no item queued
//     before it in host order that touches the same bytes (one of them
//     writing) may still be waiting — on its own stream (queue order) or on
//     another one. In ordering mode that is always a violation; in detect
//     mode only a race the model found is allowed: the two launches
//     unordered, on the same allocation, or the earlier one part of the
//     memory's earlier use on the later allocation's home stream;
//   * when the Device hands out memory (O3): every earlier touch of those
//     bytes by a stream other than the new allocation's home is known
//     complete to the host (pins and lanes), unless its page went back to
//     storage since;
//   * when a page goes back to storage (O3): no queued item still touches
//     it.
// Items register the bytes they touch (ItemTouch) when they are queued;
// that is the only extra a harness body does.
//
// Cost: a scan of the items still queued per item run and of the touches
// not known complete per allocation — tens of entries; violation texts are
// built only when a check fails.
#pragma once

#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/model/stream_model.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace taintpool::testing {

/// Bytes a queued item touches: [begin, end) of one allocation.
struct ItemTouch {
  const std::byte* begin = nullptr;
  const std::byte* end = nullptr;
  bool write = false;
  std::optional<AllocationId> allocation; ///< None for a host read.
};

/// A check that failed: the rule and what happened.
struct StreamViolation {
  std::string rule;
  std::string what;
};

class StreamWatch {
 public:
  class Room;

  /// The two lists get room for a fuzz input's items up front: a watch is
  /// made per input, and growing them from empty cost each input a handful
  /// of allocations (issue 13). With a `room` (an earlier watch's
  /// take_room()), its lists and its model's are reused: capacity only,
  /// every list emptied (model::StreamModel::Room), so the watch starts as
  /// a fresh one.
  explicit StreamWatch(bool detect);
  StreamWatch(bool detect, Room room);
  StreamWatch(const StreamWatch&) = delete;
  StreamWatch& operator=(const StreamWatch&) = delete;

  /// Gives up the watch's lists and its model's for the next watch; the
  /// watch is left with none of its state: destroy it next.
  [[nodiscard]] Room take_room() noexcept;

  /// The queues to watch; its default stream is stream 0.
  void attach(DeferredHostBackend& queues) {
    queues_ = &queues;
    handles_.assign(1, queues.default_stream());
  }

  [[nodiscard]] model::StreamModel& model() noexcept { return model_; }
  [[nodiscard]] const model::StreamModel& model() const noexcept { return model_; }
  [[nodiscard]] bool detect() const noexcept { return detect_; }

  /// The first violation since the last call, if any.
  [[nodiscard]] std::optional<StreamViolation> violation() {
    if (violations_.empty()) {
      return std::nullopt;
    }
    StreamViolation first = std::move(violations_.front());
    violations_.clear();
    return first;
  }

  // ---- what the harness reports

  /// Device::create_stream returned stream `number`; its handle is the one
  /// the backend made last.
  void stream_created(std::uint32_t number) {
    if (handles_.size() <= number) {
      handles_.resize(number + 1, nullptr);
    }
    handles_[number] = last_created_;
    model_.create_stream(number);
  }
  void stream_destroyed(std::uint32_t number) {
    model_.destroy_stream(number);
    handles_.at(number) = nullptr;
  }

  /// create_buffer made `id` at `data` on `stream` (O3: the memory is free
  /// of other streams' work).
  void allocated(AllocationId id, const std::byte* data, std::uint64_t size, std::uint32_t stream) {
    model_.created(id, size, stream);
    const std::byte* end = data + size;
    std::erase_if(touched_, [&](const Touched& old) {
      const auto node = model_.node_of(old.launch);
      return node && model_.known_complete(*node);
    });
    for (const Touched& old : touched_) {
      if (old.stream == stream || old.touch.end <= data || end <= old.touch.begin) {
        continue;
      }
      report("O3", "create_buffer on stream " + std::to_string(stream) + " handed out " +
                       to_string(id) + ", whose memory launch " + std::to_string(old.launch) +
                       " on stream " + std::to_string(old.stream) + " " +
                       (old.touch.write ? "writes" : "reads") +
                       " with the host not knowing it complete");
      return;
    }
  }

  /// A launch (or host write) with valid bindings is about to be made; the
  /// model's races into `races` (StreamModel::begin).
  void begin_launch(std::uint32_t stream, std::uint64_t launch, std::span<const Binding> reads,
                    std::span<const Binding> writes, std::vector<model::RaceFinding>& races) {
    open_launch_ = launch;
    open_write_.reset();
    if (!writes.empty()) {
      open_write_ = writes.front().allocation;
    }
    model_.begin(stream, launch, reads, writes, races);
  }
  /// It returned or threw; `queued` unless it was skipped.
  void end_launch(bool queued) {
    open_launch_ = 0;
    if (auto problem = model_.end(queued)) {
      report("O1", *problem);
    }
  }
  /// Every stream was finished (synchronize, a read).
  void synchronized() { model_.synchronized(); }

  /// From a body: `work` (a callable taking nothing) on the launch's
  /// stream, touching `touches` (copied). The watch keeps `work` with the
  /// item's entry and queues only {watch, item} — small enough for the
  /// queue's std::function to hold without an allocation, as `work` is
  /// when it is no bigger (StreamRig's items: {rig, index}); the touches go
  /// into one list of the watch's. An item was two to three allocations
  /// (issue 13, forty-fifth round).
  template <class Work>
  void enqueue(const KernelContext& context, std::span<const ItemTouch> touches, Work&& work) {
    enqueue(context.stream_handle(), context.launch(), touches, std::forward<Work>(work));
  }

  /// Runs one queued item, as DeferredHostBackend::step does.
  bool step() { return queues_->step(); }

  // ---- what ObservedBackend reports

  void recorded(EventHandle event, StreamHandle stream) { model_.recorded(event, number(stream)); }
  void waited(StreamHandle stream, EventHandle event) {
    if (auto problem = model_.waited(number(stream), event)) {
      report(detect_ ? "O4" : "O2", *problem);
    }
  }
  void done(EventHandle event) { model_.done(event); }
  void finished(StreamHandle stream) {
    ++finishes_;
    model_.finished(number(stream));
  }
  /// finish() calls seen so far.
  [[nodiscard]] std::uint64_t finishes() const noexcept { return finishes_; }
  void created_handle(StreamHandle stream) { last_created_ = stream; }

  /// A host copy on `stream`: queued there, run until it ran (as
  /// DeferredHostBackend does), checked like any item.
  void copy(StreamHandle stream, std::byte* to, const std::byte* from, std::size_t bytes, bool in) {
    struct Copy {
      std::byte* to;
      const std::byte* from;
      std::size_t bytes;
      bool copied;
    } job{to, from, bytes, false};
    ItemTouch touch{in ? to : from, (in ? to : from) + bytes, in, std::nullopt};
    if (in) {
      touch.allocation = open_write_;
    }
    // The item names the job on this frame (small: no allocation), which
    // outlives it: the loop below runs the queue until it ran.
    enqueue(stream, in ? open_launch_ : 0, std::span<const ItemTouch>(&touch, 1), [copy = &job] {
      if (copy->bytes != 0) {
        std::memcpy(copy->to, copy->from, copy->bytes);
      }
      copy->copied = true;
    });
    while (!job.copied) {
      if (!queues_->step()) {
        throw std::logic_error("StreamWatch: a host copy never ran");
      }
    }
    if (in) {
      model_.finished(number(stream)); // The Device learns it (Device::write).
    }
  }

  /// A page went back to storage: nothing queued may touch it (O3), and
  /// what touched it before is done with it.
  void page_returned(const std::byte* base, std::uint64_t size) {
    const std::byte* end = base + size;
    for (const Pending& item : pending_) {
      for (const ItemTouch& touch : touches_of(item)) {
        if (touch.begin < touch.end && touch.begin < end && base < touch.end) {
          report("O3", "a page went back to storage while queued work of launch " +
                           std::to_string(item.launch) + " on stream " +
                           std::to_string(item.stream) + " still touches it");
        }
      }
    }
    std::erase_if(touched_, [&](const Touched& old) {
      return old.touch.begin < end && base < old.touch.end;
    });
  }

 private:
  struct Pending {
    std::uint64_t order;
    std::uint64_t launch; ///< 0: a host read.
    std::uint32_t stream;
    std::size_t first; ///< Its touches: touches_[first, first + count).
    std::size_t count;
    std::function<void()> work; ///< Run when the queue runs the item.
  };
  struct Touched {
    std::uint64_t launch;
    std::uint32_t stream;
    ItemTouch touch;
  };

 public:
  /// What a watch leaves for the next one (see the constructor): opaque.
  class Room {
   public:
    Room() = default;

   private:
    friend class StreamWatch;
    model::StreamModel::Room model;
    std::vector<StreamHandle> handles;
    std::vector<Pending> pending;
    std::vector<ItemTouch> touches;
    std::vector<Touched> touched;
  };

 private:
  std::uint32_t number(StreamHandle stream) const {
    for (std::uint32_t at = 0; at < handles_.size(); ++at) {
      if (handles_[at] == stream) {
        return at;
      }
    }
    throw std::logic_error("StreamWatch: a stream handle no stream was made with");
  }

  void report(const char* rule, std::string what) {
    violations_.push_back(StreamViolation{rule, std::move(what)});
  }

  [[nodiscard]] std::span<const ItemTouch> touches_of(const Pending& item) const {
    return std::span<const ItemTouch>(touches_).subspan(item.first, item.count);
  }

  template <class Work>
  void enqueue(StreamHandle stream, std::uint64_t launch, std::span<const ItemTouch> touches,
               Work&& work) {
    const std::uint64_t order = next_order_++;
    const std::uint32_t on = number(stream);
    if (launch != 0) {
      for (const ItemTouch& touch : touches) {
        if (touch.begin != touch.end) {
          touched_.push_back(Touched{launch, on, touch});
        }
      }
    }
    // Appended, never removed while the watch lives (a fuzz input queues a
    // few dozen): an item's touches stay where its entry says.
    const std::size_t first = touches_.size();
    touches_.insert(touches_.end(), touches.begin(), touches.end());
    pending_.push_back(Pending{order, launch, on, first, touches.size(), std::forward<Work>(work)});
    queues_->enqueue(stream, [this, order] { run(order); });
  }

  /// Whether two touches share a byte (an empty one shares none).
  static bool overlap(const ItemTouch& x, const ItemTouch& y) {
    return x.begin < x.end && y.begin < y.end && x.begin < y.end && y.begin < x.end;
  }

  bool conflict(const Pending& a, const Pending& b) const {
    for (const ItemTouch& x : touches_of(a)) {
      for (const ItemTouch& y : touches_of(b)) {
        if ((x.write || y.write) && overlap(x, y)) {
          return true;
        }
      }
    }
    return false;
  }

  /// Detect mode: whether `later` running before `earlier` is a race the
  /// model found (see the header).
  bool found_race(const Pending& earlier, const Pending& later) const {
    if (earlier.launch == 0 || later.launch == 0) {
      return false; // A host read comes after a synchronize: never a race.
    }
    const auto from = model_.node_of(earlier.launch);
    if (!from || model_.ordered_before_launch(*from, later.launch)) {
      return false;
    }
    for (const ItemTouch& x : touches_of(earlier)) {
      for (const ItemTouch& y : touches_of(later)) {
        if (!(x.write || y.write) || !overlap(x, y)) {
          continue;
        }
        if (x.allocation == y.allocation) {
          continue;
        }
        if (!x.allocation || !y.allocation) {
          return false;
        }
        const auto use = model_.earlier_use(*y.allocation);
        if (use && model_.stream_of(*use) == earlier.stream && *from <= *use) {
          continue; // The memory's earlier use on its home stream.
        }
        return false;
      }
    }
    return true;
  }

  /// The queue runs item `order`: checked, its entry let go, its work run.
  void run(std::uint64_t order) {
    const auto self = std::find_if(pending_.begin(), pending_.end(),
                                   [&](const Pending& item) { return item.order == order; });
    if (self == pending_.end()) {
      report("O1", "an item ran twice"); // Its work went with its first run.
      return;
    }
    check_running(self);
    const std::function<void()> work = std::move(self->work);
    pending_.erase(self);
    work();
  }

  void check_running(std::vector<Pending>::iterator self) {
    for (auto earlier = pending_.begin(); earlier != self; ++earlier) {
      if (earlier->stream == self->stream) {
        report("O1", "stream " + std::to_string(self->stream) + " ran an item of launch " +
                         std::to_string(self->launch) + " before one of launch " +
                         std::to_string(earlier->launch) + " queued before it");
        break;
      }
      if (!conflict(*earlier, *self) || (detect_ && found_race(*earlier, *self))) {
        continue;
      }
      report(detect_ ? "O3/O4" : "O1/O3",
             "launch " + std::to_string(self->launch) + " on stream " +
                 std::to_string(self->stream) + " touched bytes before launch " +
                 std::to_string(earlier->launch) + " on stream " + std::to_string(earlier->stream) +
                 ", queued earlier, did (one of them writing them)" +
                 (detect_ ? ", and the model found no race between the two" : ""));
      break;
    }
  }

  bool detect_;
  model::StreamModel model_;
  DeferredHostBackend* queues_ = nullptr;
  std::vector<StreamHandle> handles_; ///< By stream number; null once destroyed.
  StreamHandle last_created_ = nullptr;
  static constexpr std::size_t kFirstRoom = 16;
  std::vector<Pending> pending_;   ///< Queued, not yet run, in host order.
  std::vector<ItemTouch> touches_; ///< Every item's touches, in the order queued.
  std::vector<Touched> touched_;   ///< Touches not known complete.
  std::vector<StreamViolation> violations_;
  std::uint64_t next_order_ = 0;
  std::uint64_t finishes_ = 0;
  std::uint64_t open_launch_ = 0;
  std::optional<AllocationId> open_write_;
};

inline StreamWatch::StreamWatch(bool detect)
    : StreamWatch(detect, Room{}) {
}

inline StreamWatch::StreamWatch(bool detect, Room room)
    : detect_(detect)
    , model_(detect, std::move(room.model))
    , handles_(model::emptied(room.handles))
    , pending_(model::emptied(room.pending))
    , touches_(model::emptied(room.touches))
    , touched_(model::emptied(room.touched)) {
  pending_.reserve(kFirstRoom);
  touched_.reserve(kFirstRoom);
  touches_.reserve(2 * kFirstRoom);
}

inline StreamWatch::Room StreamWatch::take_room() noexcept {
  Room room;
  room.model = model_.take_room();
  room.handles = model::emptied(handles_);
  room.pending = model::emptied(pending_);
  room.touches = model::emptied(touches_);
  room.touched = model::emptied(touched_);
  return room;
}

/// A Backend that forwards to a DeferredHostBackend and tells a StreamWatch
/// what the host can observe of its queues (see above).
class ObservedBackend final : public Backend {
 public:
  ObservedBackend(DeferredHostBackend& queues, StreamWatch& watch)
      : queues_(queues)
      , watch_(watch) {
    watch.attach(queues);
  }

  [[nodiscard]] Storage& storage() override { return queues_.storage(); }
  [[nodiscard]] MemoryConfig memory_config() const override { return queues_.memory_config(); }
  [[nodiscard]] std::string name() const override { return queues_.name(); }
  LaunchOutcome run(KernelBody body, const KernelContext& context) override {
    return queues_.run(body, context);
  }
  [[nodiscard]] std::optional<Error> copy_in(StreamHandle stream, std::byte* to,
                                             const std::byte* from, std::size_t bytes) override {
    watch_.copy(stream, to, from, bytes, true);
    return std::nullopt;
  }
  [[nodiscard]] std::optional<Error> copy_out(StreamHandle stream, std::byte* to,
                                              const std::byte* from, std::size_t bytes) override {
    watch_.copy(stream, to, from, bytes, false);
    return std::nullopt;
  }
  [[nodiscard]] void* backend_data() noexcept override { return queues_.backend_data(); }
  [[nodiscard]] bool reports_late_failures() const noexcept override {
    return queues_.reports_late_failures();
  }
  [[nodiscard]] std::vector<LateFailure> synchronize() override { return queues_.synchronize(); }
  [[nodiscard]] std::optional<std::uint64_t> oldest_unconfirmed_launch() const noexcept override {
    return queues_.oldest_unconfirmed_launch();
  }

  [[nodiscard]] StreamHandle default_stream() noexcept override { return queues_.default_stream(); }
  [[nodiscard]] StreamHandle create_stream() override {
    const StreamHandle made = queues_.create_stream();
    watch_.created_handle(made);
    return made;
  }
  void destroy_stream(StreamHandle stream) noexcept override { queues_.destroy_stream(stream); }
  [[nodiscard]] EventHandle record(StreamHandle stream) override {
    const EventHandle event = queues_.record(stream);
    watch_.recorded(event, stream);
    return event;
  }
  void wait(StreamHandle waiter, EventHandle event) override {
    queues_.wait(waiter, event);
    watch_.waited(waiter, event);
  }
  [[nodiscard]] bool done(EventHandle event) noexcept override {
    const bool complete = queues_.done(event);
    if (complete) {
      watch_.done(event);
    }
    return complete;
  }
  void release(EventHandle event) noexcept override { queues_.release(event); }
  void finish(StreamHandle stream) override {
    queues_.finish(stream);
    watch_.finished(stream);
  }
  [[nodiscard]] bool synchronous() const noexcept override { return queues_.synchronous(); }

 private:
  DeferredHostBackend& queues_;
  StreamWatch& watch_;
};

} // namespace taintpool::testing
