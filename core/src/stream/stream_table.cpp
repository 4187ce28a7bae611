#include <taintpool/exception.hpp>
#include <taintpool/stream/stream_table.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace taintpool {

namespace {
/// Kept events per stream: enough to learn completion as it happens; an
/// older one is given back unasked when more arrive.
constexpr std::size_t kept_events = 16;
/// poll() prunes completed records once this many exist, at the least.
constexpr std::size_t kPruneFloor = 64;
} // namespace

StreamTable::StreamTable(QueueBackend& backend, std::uint32_t device, std::uint32_t first_number)
    : backend_(backend)
    , device_(device)
    , synchronous_(backend.synchronous())
    , first_number_(first_number)
    , next_number_(first_number)
    , handles_{backend.default_stream()}
    , number_{0}
    , pins_(1)
    , trackers_(1) {
}

StreamTable::~StreamTable() {
  tear_down();
}

void StreamTable::tear_down() noexcept {
  for (std::uint32_t slot = 0; slot < handles_.size(); ++slot) {
    if (handles_[slot] == nullptr) {
      continue;
    }
    try {
      backend_.finish(handles_[slot]);
      finished(slot);
    } catch (...) {
      // A broken device: nothing more can run on the stream anyway.
    }
  }
  for (std::uint32_t slot = 0; slot < handles_.size(); ++slot) {
    pins_[slot].clear(); // Completed, or never will be: either way held no longer.
    for (const Tracker& tracker : trackers_[slot]) {
      backend_.release(tracker.event);
    }
    trackers_[slot].clear();
    if (slot != 0 && handles_[slot] != nullptr) {
      backend_.destroy_stream(handles_[slot]);
      handles_[slot] = nullptr;
    }
  }
}

void StreamTable::restart(std::uint32_t device) noexcept {
  tear_down();
  // As the constructor leaves it. Shrinking keeps each list's block (no
  // allocation) and frees the destroyed streams' pin and event queues;
  // the default stream's, emptied above, keep theirs.
  handles_.resize(1);
  number_.resize(1);
  pins_.resize(1);
  trackers_.resize(1);
  handles_[0] = backend_.default_stream();
  number_[0] = 0;
  by_number_.fill(NumberEntry{});
  by_number_[0] = NumberEntry{0, 1};
  order_.clear();
  device_ = device;
  synchronous_ = backend_.synchronous();
  several_ = false;
  next_number_ = first_number_;
  stats_ = StreamStats{};
  prune_at_ = kPruneFloor;
}

StreamId StreamTable::create() {
  std::uint32_t live = 0;
  for (StreamHandle handle : handles_) {
    live += handle != nullptr ? 1 : 0;
  }
  if (live >= max_streams) {
    throw Exception(Error::generic("cannot create a stream: " + std::to_string(max_streams) +
                                   " are live on this device, the most it keeps (one memory "
                                   "lane each); destroy one first"));
  }
  if (next_number_ > std::numeric_limits<std::uint32_t>::max()) {
    throw Exception(Error::generic(
        "cannot create a stream: this device has made 4294967295 streams, every number a "
        "StreamId holds, and numbers are never reused (an old id would name the new stream); "
        "its live streams keep working, and a new Device numbers afresh"));
  }
  if (!several_) {
    // Until now the Device had one stream, which needs no ordering, so it
    // counted nothing: work still queued on the default stream is unknown
    // to HappensBefore, and the new stream's first launch would not wait
    // for it (O1). Finishing it once, here, makes every earlier access
    // complete, so nothing the bookkeeping never saw can conflict.
    backend_.finish(handles_[0]);
  }
  StreamHandle handle = backend_.create_stream();
  try {
    const std::uint32_t slot = order_.add_stream();
    if (slot >= handles_.size()) {
      handles_.resize(slot + 1, nullptr);
      number_.resize(slot + 1, 0);
      pins_.resize(slot + 1);
      trackers_.resize(slot + 1);
    }
    const auto number = static_cast<std::uint32_t>(next_number_++);
    handles_[slot] = handle;
    number_[slot] = number;
    if (NumberEntry& entry = by_number_[number % number_table_size]; entry.slot_plus_one == 0) {
      entry = NumberEntry{number, slot + 1};
    } // Else an older live stream holds the entry: find_slot finds this one.

    several_ = true;
    ++stats_.streams_created;
    return id(slot);
  } catch (...) {
    backend_.destroy_stream(handle);
    throw;
  }
}

void StreamTable::destroy(StreamId stream) {
  const std::uint32_t at = slot(stream);
  if (at == 0) {
    throw std::invalid_argument("StreamTable: the default stream cannot be destroyed");
  }
  backend_.finish(handles_[at]);
  finished(at);
  for (const Tracker& tracker : trackers_[at]) {
    backend_.release(tracker.event);
  }
  trackers_[at].clear();
  backend_.destroy_stream(handles_[at]);
  handles_[at] = nullptr;
  refill_number_entry(number_[at]);
  order_.remove_stream(at);
}

void StreamTable::refill_number_entry(std::uint32_t number) noexcept {
  NumberEntry& entry = by_number_[number % number_table_size];
  if (entry.number != number) {
    return; // An older live stream holds it, and still lives.
  }
  entry.slot_plus_one = 0;
  // The oldest live stream of the same residue, if any, takes it over: a
  // scan of at most max_streams slots, on a destroy only.
  for (std::uint32_t at = 0; at < handles_.size(); ++at) {
    if (handles_[at] != nullptr && number_[at] % number_table_size == number % number_table_size &&
        (entry.slot_plus_one == 0 || number_[at] < entry.number)) {
      entry = NumberEntry{number_[at], at + 1};
    }
  }
}

std::uint32_t StreamTable::find_slot(StreamId stream) const {
  if (stream.device() != device_) {
    throw Exception(
        Error::not_found(to_string(stream) +
                         (stream.device() == 0 ? " names no device (a default-constructed StreamId)"
                                               : " belongs to another device")));
  }
  for (std::uint32_t at = 0; at < handles_.size(); ++at) {
    if (handles_[at] != nullptr && number_[at] == stream.number()) {
      return at;
    }
  }
  throw Exception(
      Error::not_found(to_string(stream) +
                       (stream.number() < next_number_ ? " was destroyed" : " was never created")));
}

std::uint32_t StreamTable::order_after(std::uint32_t slot, std::span<const Hazard> hazards) {
  // O2: one event per source stream, recorded at its tail, which is after
  // every access of it any hazard names.
  std::uint32_t waits = 0;
  std::uint64_t seen = 0; // Source slots done, as bits (max_streams = 64).
  for (const Hazard& hazard : hazards) {
    const std::uint32_t source = hazard.earlier.stream;
    const std::uint64_t bit = std::uint64_t{1} << source;
    if ((seen & bit) != 0 || order_.ordered_before(hazard.earlier, slot)) {
      continue;
    }
    seen |= bit;
    const std::uint64_t tail = order_.tail(source);
    EventHandle event = backend_.record(handles_[source]);
    ++stats_.events_recorded;
    try {
      backend_.wait(handles_[slot], event);
    } catch (...) {
      backend_.release(event);
      throw;
    }
    ++stats_.waits_inserted;
    ++waits;
    order_.ordered(slot, source, tail);
    track(source, event, tail);
  }
  return waits;
}

void StreamTable::track(std::uint32_t slot, EventHandle event, std::uint64_t seq) {
  try {
    trackers_[slot].push_back(Tracker{event, seq});
  } catch (...) {
    backend_.release(event); // Only knowledge is lost; the wait is queued.
    return;
  }
  if (trackers_[slot].size() > kept_events) {
    backend_.release(trackers_[slot].front().event);
    trackers_[slot].pop_front();
  }
}

void StreamTable::pin(std::uint32_t slot, std::uint64_t seq, Allocation allocation) {
  detail::Fifo<Pin>& pins = pins_[slot];
  const AllocationId id = allocation.id();
  if (!pins.empty() && pins.back().id == id) {
    // The caller decides (Device::order follows the newest pin): a second
    // pin of the same allocation would count as a new one (O3).
    throw std::logic_error("StreamTable::pin: " + to_string(id) +
                           " is already the stream's newest pin; move it on with pin_again");
  }
  pins.push_back(Pin{seq, id, std::move(allocation)});
  ++stats_.pins_taken;
}

void StreamTable::pin_again(std::uint32_t slot, std::uint64_t seq, AllocationId allocation) {
  detail::Fifo<Pin>& pins = pins_[slot];
  if (pins.empty() || pins.back().id != allocation) {
    throw std::logic_error("StreamTable::pin_again: " + to_string(allocation) +
                           " is not the stream's newest pin (O3)");
  }
  pins.back().seq = seq;
}

void StreamTable::drop_pins(std::uint32_t slot) noexcept {
  detail::Fifo<Pin>& pins = pins_[slot];
  const std::uint64_t done = order_.completed(slot);
  while (!pins.empty() && pins.front().seq <= done) {
    pins.pop_front();
  }
}

void StreamTable::poll() {
  for (std::uint32_t slot = 0; slot < handles_.size(); ++slot) {
    if (handles_[slot] == nullptr) {
      continue;
    }
    detail::Fifo<Tracker>& trackers = trackers_[slot];
    while (!trackers.empty() && backend_.done(trackers.front().event)) {
      order_.completed(slot, trackers.front().seq);
      backend_.release(trackers.front().event);
      trackers.pop_front();
    }
    drop_pins(slot);
    const detail::Fifo<Pin>& pins = pins_[slot];
    if (!pins.empty() && (trackers.empty() || trackers.back().seq < pins.back().seq)) {
      // Nothing kept will tell when the newest pinned work completes.
      const std::uint64_t tail = order_.tail(slot);
      EventHandle event = backend_.record(handles_[slot]);
      ++stats_.events_recorded;
      track(slot, event, tail);
    }
  }
  // Records whose every access is known complete say nothing any more (an
  // ended allocation's, typically: a pipeline drops a buffer handed across
  // every step). Dropped when they have doubled since the last pass, so a
  // Device that never synchronises keeps O(live) records at O(1) amortised.
  if (order_.records() >= prune_at_) {
    static_cast<void>(order_.prune_completed());
    prune_at_ = std::max<std::size_t>(kPruneFloor, 2 * order_.records());
  }
}

void StreamTable::finished(std::uint32_t slot) {
  const std::uint64_t tail = order_.tail(slot);
  order_.completed(slot, tail);
  detail::Fifo<Tracker>& trackers = trackers_[slot];
  while (!trackers.empty() && trackers.front().seq <= tail) {
    backend_.release(trackers.front().event);
    trackers.pop_front();
  }
  drop_pins(slot);
}

void StreamTable::finish_all() {
  for (std::uint32_t slot = 0; slot < handles_.size(); ++slot) {
    if (handles_[slot] != nullptr) {
      backend_.finish(handles_[slot]);
      finished(slot);
    }
  }
  static_cast<void>(order_.prune_completed());
}

StreamStats StreamTable::stats() const noexcept {
  StreamStats now = stats_;
  now.records_held = order_.records();
  now.pins_held = 0;
  for (const auto& pins : pins_) {
    now.pins_held += pins.size();
  }
  return now;
}

} // namespace taintpool
