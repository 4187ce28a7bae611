// StreamTable: a Device's streams as the hardware sees them — their queues,
// the events that order them (O1, O2), the events that tell the host what
// completed, and the allocations held for a stream until its use of them is
// over (O3).
//
// Why pins. Memory is reused stream-ordered: an allocation's memory goes
// back to the lane of the stream it was allocated on (its home) and is
// reused at once by that stream's next allocation, which is safe because
// that stream runs its work in order. An allocation another stream used is
// different: that stream may still be reading it when the user drops the
// last handle. So when work on stream B binds an allocation homed elsewhere,
// B *pins* it — keeps a handle — until the host learns B's work up to that
// point completed. The user never calls anything (there is no
// record_stream): the Device knows every binding. In detect mode (O4) the
// home stream pins too: there no wait orders another stream's write of the
// memory's next allocation after a pending read of the old one, so the
// memory must not be reused until every use of it completed.
//
// How the host learns completion, without blocking: every event recorded to
// make a stream wait is kept and asked (done()) later; a stream holding pins
// that no kept event covers gets one more event at the next poll(). A host
// copy on a stream (Device::read, write) finishes it, and synchronize
// finishes all. allocate blocks for this only as the last step before
// OutOfMemory (the Device's retry).
//
// Cost: nothing for a Device with one stream. With several, a launch whose
// bindings do not cross streams touches only HappensBefore; a crossing one
// records one event on each source stream and queues one wait (O2), plus a
// pin (a handle copy) per crossing binding.
#pragma once

#include <taintpool/detail/fifo.hpp>
#include <taintpool/pool/allocation.hpp>
#include <taintpool/stream/happens_before.hpp>
#include <taintpool/stream/queue_backend.hpp>
#include <taintpool/stream/stream_id.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace taintpool {

/// What a Device's streams did, counted since it was built.
struct StreamStats {
  std::uint64_t streams_created = 0; ///< Device::create_stream calls.
  std::uint64_t waits_inserted = 0;  ///< Event waits queued to order work (O1, O2).
  std::uint64_t events_recorded = 0; ///< Events recorded, for waits and for completion.
  std::uint64_t races_detected = 0;  ///< Unordered conflicting accesses found in detect mode (O4).
  std::uint64_t pins_taken = 0;      ///< Allocations held for a stream still using them (O3).
  std::uint64_t pins_held = 0;       ///< Of those, still held now.
  std::uint64_t records_held = 0;    ///< Allocations with a cross-stream record now.
};

/// A Device's streams (see above). Not thread-safe: the Device calls it
/// under its lock.
class StreamTable {
 public:
  /// The default stream only (the backend's default_stream()). `device` is
  /// the Device's serial, which every StreamId it makes carries;
  /// `first_number` the number of the first stream create() makes (tests of
  /// the last numbers start near them; a Device starts at 1).
  StreamTable(QueueBackend& backend, std::uint32_t device, std::uint32_t first_number = 1);
  /// Finishes and destroys every stream it created, gives back every event.
  ~StreamTable();
  /// Makes this table what `StreamTable(backend, device, first_number)`
  /// would be, with the backend and first number it was built with, while
  /// keeping the capacity of its lists: what the destructor does to the
  /// streams (finished, pins dropped, kept events given back, every stream
  /// it created destroyed), then one default stream, numbers from the first
  /// again, statistics 0, the number table and HappensBefore emptied (its
  /// tracking mode kept). Every StreamId it made carries the old serial, so
  /// under a new `device` none resolves (slot() throws NotFound).
  /// Why in place: building a table again allocates its four lists, and a
  /// caller that must not fail half-way (Device::reset) could not recover
  /// from std::bad_alloc there. Allocates nothing and cannot fail: call
  /// finish_all() first to learn of a device error — here, as in the
  /// destructor, one finishing a stream is dropped (the stream is destroyed
  /// all the same). Frees the per-stream lists of the streams destroyed.
  void restart(std::uint32_t device) noexcept;
  StreamTable(const StreamTable&) = delete;
  StreamTable& operator=(const StreamTable&) = delete;

  /// The default stream's id.
  [[nodiscard]] StreamId default_stream() const noexcept { return StreamId::of(device_, 0); }
  /// A new stream (QueueBackend::create_stream); at most max_streams live.
  /// The first one blocks until the default stream's queued work completed
  /// (once per table): nothing before it was counted, so it must be done.
  /// Numbers are never reused, so once number 2^32 - 1 is made every later
  /// create throws Exception and changes nothing: the Device is spent for
  /// new streams (its live ones keep working), where wrapping would let an
  /// old StreamId name a new stream.
  [[nodiscard]] StreamId create();
  /// Finishes the stream's work, drops its pins and frees it. The default
  /// stream cannot be destroyed (std::invalid_argument).
  void destroy(StreamId stream);

  /// Most streams live at once, the default one included: one memory lane each.
  static constexpr std::uint32_t max_streams = 64;

  /// The slot of a live stream of this Device. Throws Exception(NotFound)
  /// for a stream of another Device, one destroyed, or one never made.
  [[nodiscard]] std::uint32_t slot(StreamId stream) const {
    // One 8-byte load in the common case: the stream's entry of the
    // number table (see by_number_), which names it when it is live and no
    // older live stream took the entry first.
    if (stream.device() == device_) [[likely]] {
      const NumberEntry entry = by_number_[stream.number() % number_table_size];
      if (entry.number == stream.number() && entry.slot_plus_one != 0) [[likely]] {
        return entry.slot_plus_one - 1;
      }
    }
    return find_slot(stream); // The live slots scanned; throws NotFound, naming why.
  }
  /// The id of the stream in `slot`.
  [[nodiscard]] StreamId id(std::uint32_t slot) const {
    return StreamId::of(device_, number_[slot]);
  }
  /// The backend's handle of the stream in `slot`.
  [[nodiscard]] StreamHandle handle(std::uint32_t slot) const noexcept { return handles_[slot]; }
  /// Whether more than the default stream was ever made: until then no
  /// launch can cross streams and the Device skips ordering altogether.
  [[nodiscard]] bool several() const noexcept { return several_; }
  /// Whether the backend completes work as it is queued.
  [[nodiscard]] bool synchronous() const noexcept { return synchronous_; }

  /// The byte-grain bookkeeping.
  [[nodiscard]] HappensBefore& order() noexcept { return order_; }
  [[nodiscard]] const HappensBefore& order() const noexcept { return order_; }

  /// O2: for every stream with a hazard in `hazards`, records one event at
  /// its tail and makes `slot` wait on it. Returns the waits queued. Throws
  /// Exception if the backend cannot (nothing is ordered then beyond the
  /// waits already queued, which are harmless).
  std::uint32_t order_after(std::uint32_t slot, std::span<const Hazard> hazards);

  /// O3: holds `allocation` for `slot` until its work `seq` completed.
  /// Throws std::logic_error when the slot's newest pin already holds it:
  /// that one is moved on with pin_again (last_pinned says which).
  void pin(std::uint32_t slot, std::uint64_t seq, Allocation allocation);
  /// The allocation the slot's newest pin holds, if any: a launch that
  /// binds it again needs no new handle (pin_again), which spares the
  /// crossing launch of a pipeline a table probe and two atomic operations.
  [[nodiscard]] std::optional<AllocationId> last_pinned(std::uint32_t slot) const noexcept {
    const detail::Fifo<Pin>& pins = pins_[slot];
    if (pins.empty()) {
      return std::nullopt;
    }
    return pins.back().id;
  }
  /// O3: moves the slot's newest pin, which must hold `allocation`
  /// (last_pinned), on to work `seq`. Throws std::logic_error otherwise.
  void pin_again(std::uint32_t slot, std::uint64_t seq, AllocationId allocation);

  /// Learns what completed from the kept events, drops the pins of
  /// completed work, and records an event on every stream holding pins no
  /// kept event covers. Prunes the records whose accesses all completed
  /// once they have doubled since the last pass. Never blocks.
  void poll();
  /// The host knows everything queued on `slot` so far completed (a host
  /// copy on it just returned): pins drop.
  void finished(std::uint32_t slot);
  /// Blocks until every stream's work completed (QueueBackend::finish);
  /// every pin drops.
  void finish_all();

  /// Counters, with pins_held as of now.
  [[nodiscard]] StreamStats stats() const noexcept;
  /// Counts one detected race (the Device finds them).
  void count_race() noexcept { ++stats_.races_detected; }

 private:
  struct Pin {
    std::uint64_t seq;
    AllocationId id; ///< allocation.id(), kept beside it: compared on every pin.
    Allocation allocation;
  };
  struct Tracker {
    EventHandle event;
    std::uint64_t seq;
  };
  /// A live stream found by its number: which slot holds it (+ 1; 0 = none).
  struct NumberEntry {
    std::uint32_t number = 0;
    std::uint32_t slot_plus_one = 0;
  };
  /// Entries of by_number_: twice the live streams, so consecutive numbers
  /// (what create() gives) of up to 2 * max_streams streams never share one.
  static constexpr std::uint32_t number_table_size = 2 * max_streams;

  [[nodiscard]] std::uint32_t find_slot(StreamId stream) const;
  /// Points stream `number`'s entry of by_number_ at a live stream of that
  /// entry, if any: the slot that held it was just destroyed.
  void refill_number_entry(std::uint32_t number) noexcept;
  void drop_pins(std::uint32_t slot) noexcept;
  /// The destructor's and restart()'s first half: every stream finished
  /// (a device error dropped), every pin dropped, every kept event given
  /// back, every stream but the default one destroyed.
  void tear_down() noexcept;
  void track(std::uint32_t slot, EventHandle event, std::uint64_t seq);

  QueueBackend& backend_;
  std::uint32_t device_;
  bool synchronous_;
  bool several_ = false;
  std::uint32_t first_number_; ///< The constructor's first_number, for restart().
  std::uint64_t next_number_;  ///< Past 2^32 - 1: no number is left (create throws).
  HappensBefore order_;
  std::vector<StreamHandle> handles_; ///< Per slot; null when free.
  std::vector<std::uint32_t> number_; ///< Per slot: the live stream's number.
  /// Live streams by number modulo its size, the default stream's entry
  /// first. Bounded memory: it was one entry per stream ever made, so a
  /// runtime making a stream per request grew by 4 bytes a create forever.
  /// An entry names the oldest live stream of its residue; a younger one
  /// sharing it (only when a stream 128 or more creates older is still
  /// live) is found by find_slot's scan of at most max_streams slots, and
  /// takes the entry when the older one is destroyed.
  std::array<NumberEntry, number_table_size> by_number_{NumberEntry{0, 1}};
  std::vector<detail::Fifo<Pin>> pins_;         ///< Per slot, oldest first.
  std::vector<detail::Fifo<Tracker>> trackers_; ///< Per slot: kept events, oldest first.
  StreamStats stats_;
  std::size_t prune_at_ = 64; ///< poll() prunes completed records at this many.
};

} // namespace taintpool
