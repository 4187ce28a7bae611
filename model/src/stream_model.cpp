// The stream model's operations: every check is a loop over the bytes a
// launch binds and each byte's touches, asking the node sets. See
// stream_model.hpp for the rules in words.
#include <taintpool/model/stream_model.hpp>

#include <algorithm>
#include <new>
#include <stdexcept>
#include <utility>

namespace taintpool::model {

namespace {

const char* kind_name(RaceKind kind) {
  switch (kind) {
  case RaceKind::read_after_write:
    return "read after write";
  case RaceKind::write_after_write:
    return "write after write";
  case RaceKind::write_after_read:
    return "write after read";
  }
  return "?";
}

std::string describe(const RaceFinding& finding) {
  return std::string(kind_name(finding.kind)) + " on " + to_string(finding.allocation) + " bytes " +
         to_string(finding.bytes) + " (" + (finding.write ? "write" : "read") + " binding " +
         std::to_string(finding.binding) + ") against " +
         (finding.earlier == 0 ? std::string("the memory's earlier use")
                               : "launch " + std::to_string(finding.earlier)) +
         " on stream " + std::to_string(finding.stream);
}

} // namespace

StreamModel::StreamModel(bool detect)
    : StreamModel(detect, Room{}) {
}

StreamModel::StreamModel(bool detect, Room room)
    : detect_(detect)
    , nodes_(emptied(room.nodes))
    , streams_(emptied(room.streams))
    , lanes_(emptied(room.lanes))
    , lane_newest_(emptied(room.lane_newest))
    , spare_open_(std::move(room.open))
    , checked_(emptied(room.checked))
    , new_pins_(emptied(room.new_pins))
    , released_pins_(emptied(room.released_pins))
    , spare_streams_(std::move(room.spare_streams))
    , spare_allocations_(std::move(room.allocations)) {
  // Only capacity comes from the room: every list starts empty (emptied();
  // begin() sets every field of spare_open_, fresh_stream() and created()
  // every field of a spare).
  //
  // A fuzz input's launches (at most 32 ops): grown once, not five times.
  nodes_.reserve(32);
  streams_.push_back(fresh_stream(0)); // The default stream, lane 0.
  lanes_.push_back(0u);
  lane_newest_.push_back(std::nullopt);
}

StreamModel::Room StreamModel::take_room() noexcept {
  Room room;
  room.nodes = emptied(nodes_);
  room.lanes = emptied(lanes_);
  room.lane_newest = emptied(lane_newest_);
  room.open = std::move(open_ ? *open_ : spare_open_);
  room.checked = emptied(checked_);
  room.new_pins = emptied(new_pins_);
  room.released_pins = emptied(released_pins_);
  // The streams' and allocations' own lists, emptied, as spares, while
  // the spare lists have room: made once (the first Room), never grown.
  room.spare_streams = std::move(spare_streams_);
  room.allocations = std::move(spare_allocations_);
  try {
    room.spare_streams.reserve(kSpares);
    room.allocations.reserve(kSpares);
  } catch (const std::bad_alloc&) {
    // No spares then: the next model grows its lists as a fresh one does.
  }
  for (Stream& stream : streams_) {
    stream.nodes.clear();
    stream.pins.clear();
    if (room.spare_streams.size() < room.spare_streams.capacity()) {
      room.spare_streams.push_back(std::move(stream));
    }
  }
  room.streams = emptied(streams_);
  while (!allocations_.empty() && room.allocations.size() < room.allocations.capacity()) {
    AllocationNode node = allocations_.extract(allocations_.begin());
    node.mapped().touches.clear();
    room.allocations.push_back(std::move(node));
  }
  return room;
}

StreamModel::Stream StreamModel::fresh_stream(std::uint32_t lane) {
  Stream stream;
  if (!spare_streams_.empty()) {
    stream.nodes = std::move(spare_streams_.back().nodes);
    stream.pins = std::move(spare_streams_.back().pins);
    spare_streams_.pop_back();
    stream.nodes.clear();
    stream.pins.clear();
  }
  stream.lane = lane;
  return stream;
}

// ------------------------------------------------------------ streams

void StreamModel::create_stream(std::uint32_t number) {
  if (number != streams_.size()) {
    throw std::logic_error("stream model: stream " + std::to_string(number) +
                           " made out of turn (numbers count up from 0)");
  }
  // The lowest lane a destroyed stream left, else a new one.
  std::uint32_t lane = 0;
  while (lane < lanes_.size() && lanes_[lane].has_value()) {
    ++lane;
  }
  if (lane == lanes_.size()) {
    lanes_.push_back(std::nullopt);
    lane_newest_.push_back(std::nullopt);
  }
  lanes_[lane] = number;
  streams_.push_back(fresh_stream(lane));
}

void StreamModel::destroy_stream(std::uint32_t number) {
  Stream& stream = streams_.at(number);
  learn(number, stream.nodes.size()); // Destroying finishes it.
  stream.live = false;
  lanes_.at(stream.lane).reset();
}

// ------------------------------------------------------------ allocations

std::optional<std::size_t> StreamModel::newest_in_lane(std::uint32_t lane) const {
  return lane_newest_.at(lane);
}

void StreamModel::created(AllocationId allocation, std::uint64_t size, std::uint32_t stream) {
  const std::uint32_t lane = streams_.at(stream).lane;
  const std::optional<std::size_t> earlier_use = newest_in_lane(lane);
  auto found = allocations_.find(allocation.raw());
  if (found == allocations_.end()) {
    if (spare_allocations_.empty()) {
      found = allocations_.emplace(allocation.raw(), Allocation{}).first;
    } else {
      // A spare map node (from a Room): no allocation for the node, and
      // its touches list keeps its capacity. Every field is set below.
      AllocationNode node = std::move(spare_allocations_.back());
      spare_allocations_.pop_back();
      node.key() = allocation.raw();
      found = allocations_.insert(std::move(node)).position;
    }
  }
  Allocation& made = found->second;
  made.lane = lane;
  made.size = size;
  made.earlier_use = earlier_use;
  made.touched_elsewhere = false;
  made.touches.clear();
  if (made.earlier_use && size != 0) {
    made.touches.push_back(Touch{*made.earlier_use, true, true, ByteRange::of(0, size)});
  }
}

// ------------------------------------------------------------ queue events

void StreamModel::recorded(const void* event, std::uint32_t stream) {
  const Stream& on = streams_.at(stream);
  Event made{stream, on.nodes.size(), on.waited, on.reach};
  for (const std::size_t node : on.nodes) {
    made.covers.set(node);
    made.reaches.set(node);
  }
  events_[event] = std::move(made);
  ++events_recorded_;
}

std::optional<std::string> StreamModel::waited(std::uint32_t stream, const void* event) {
  ++waits_queued_;
  const auto found = events_.find(event);
  if (found == events_.end()) {
    return "a wait on an event never recorded";
  }
  const Event& source = found->second;
  std::optional<std::string> violation;
  auto needless = [&] {
    conflicts(*open_, source.stream, true, checked_);
    return checked_.empty();
  };
  if (!open_ || open_->stream != stream) {
    violation = "stream " + std::to_string(stream) + " waits for stream " +
                std::to_string(source.stream) + " outside a launch on it";
  } else if (detect_) {
    violation = "O4: detect mode queued a wait (stream " + std::to_string(stream) + " for stream " +
                std::to_string(source.stream) + ")";
  } else if (std::find(open_->waited_on.begin(), open_->waited_on.end(), source.stream) !=
             open_->waited_on.end()) {
    violation = "O2: launch " + std::to_string(open_->launch) + " waits twice for stream " +
                std::to_string(source.stream);
  } else if (source.stream == stream) {
    violation = "O2: launch " + std::to_string(open_->launch) + " waits for its own stream";
  } else if (needless()) {
    violation = "O2: launch " + std::to_string(open_->launch) + " on stream " +
                std::to_string(stream) + " waits for stream " + std::to_string(source.stream) +
                ", but no byte it binds has a conflicting access there not yet ordered before it";
  }
  if (open_) {
    open_->waited_on.push_back(source.stream);
  }
  streams_.at(stream).waited.merge(source.covers);
  streams_.at(stream).reach.merge(source.reaches);
  return violation;
}

void StreamModel::done(const void* event) {
  const auto found = events_.find(event);
  if (found != events_.end()) {
    learn(found->second.stream, found->second.count);
  }
}

void StreamModel::finished(std::uint32_t stream) {
  if (open_ && open_->stream == stream) {
    // A host copy of the launch being made: the Device learns it once the
    // launch is recorded, its pins taken (end()).
    open_->finished = true;
    return;
  }
  learn(stream, streams_.at(stream).nodes.size());
}

void StreamModel::synchronized() {
  for (auto& [raw, allocation] : allocations_) {
    allocation.touched_elsewhere = false;
  }
}

void StreamModel::learn(std::uint32_t stream, std::size_t count) {
  Stream& on = streams_.at(stream);
  while (on.known < count && on.known < on.nodes.size()) {
    const std::size_t node = on.nodes[on.known];
    done_.set(node);
    done_closed_.set(node);
    done_closed_.merge(nodes_[node].before); // What ran before it ran too.
    ++on.known;
  }
  release_pins(stream);
}

void StreamModel::release_pins(std::uint32_t stream) {
  auto& pins = streams_.at(stream).pins;
  std::size_t gone = 0;
  while (gone < pins.size() && done_.test(pins[gone].node)) {
    released_pins_.push_back(pins[gone].allocation);
    ++gone;
  }
  pins.erase(pins.begin(), pins.begin() + static_cast<std::ptrdiff_t>(gone));
}

// ------------------------------------------------------------ launches

bool StreamModel::ordered_for(std::size_t node, std::uint32_t stream, bool as_learned) const {
  if (as_learned) {
    return nodes_[node].stream == stream || streams_[stream].waited.test(node) || done_.test(node);
  }
  return nodes_[node].stream == stream || streams_[stream].reach.test(node) ||
         done_closed_.test(node);
}

bool StreamModel::ordered_before(std::size_t earlier, std::size_t later) const {
  if (earlier >= later) {
    return false;
  }
  return nodes_.at(earlier).stream == nodes_.at(later).stream ||
         nodes_.at(later).before.test(earlier);
}

bool StreamModel::ordered_before_launch(std::size_t earlier, std::uint64_t launch) const {
  if (const auto later = node_of(launch)) {
    return ordered_before(earlier, *later);
  }
  if (open_ && open_->launch == launch) {
    return ordered_for(earlier, open_->stream, false);
  }
  return false;
}

std::optional<std::size_t> StreamModel::node_of(std::uint64_t launch) const {
  const auto found =
      std::lower_bound(nodes_.begin(), nodes_.end(), launch,
                       [](const Node& node, std::uint64_t wanted) { return node.launch < wanted; });
  if (found == nodes_.end() || found->launch != launch) {
    return std::nullopt;
  }
  return static_cast<std::size_t>(found - nodes_.begin());
}

void StreamModel::conflicts(const Open& open, std::optional<std::uint32_t> source, bool as_learned,
                            std::vector<RaceFinding>& found) const {
  found.clear();
  auto scan = [&](const Binding& binding, bool write, std::uint32_t index) {
    const Allocation& allocation = allocations_.at(binding.allocation.raw());
    std::optional<std::size_t> first_touch;
    for (const auto& [id, node] : open.first_touches) {
      if (id == binding.allocation) {
        first_touch = node;
      }
    }
    // Per byte: every earlier touch (and the first-touch write, if any)
    // that conflicts and is not ordered before the launch. Consecutive bytes
    // with the same earlier node and kind extend one finding.
    const std::vector<Touch>& touches = allocation.touches;
    const std::size_t count = touches.size() + (first_touch ? 1 : 0);
    const auto touch_at = [&](std::size_t at) {
      return at < touches.size()
                 ? touches[at]
                 : Touch{*first_touch, true, true, ByteRange::of(0, allocation.size)};
    };
    // Whether a touch can conflict at all does not depend on the byte: two
    // reads never conflict, and neither does a touch ordered before the
    // launch or (with `source`) on another stream.
    const auto conflicting = [&](const Touch& touch) {
      return (touch.write || write) && !ordered_for(touch.node, open.stream, as_learned) &&
             (!source || nodes_[touch.node].stream == *source);
    };
    // So first the bytes some conflicting touch covers, at most the
    // binding's: usually none (every earlier touch is ordered), and then
    // the per-byte walk below is skipped. The walk itself is unchanged —
    // same bytes in the same order, same touches in the same order — so
    // the findings, and how consecutive bytes merge into them, are exactly
    // what walking every byte of the binding gives (issue 13: this walk was
    // the harness's largest cost in stream_fuzzer).
    std::uint64_t from = binding.range.end();
    std::uint64_t to = binding.range.begin();
    for (std::size_t at = 0; at < count; ++at) {
      const Touch touch = touch_at(at);
      if (touch.bytes.end() <= binding.range.begin() ||
          touch.bytes.begin() >= binding.range.end() || !conflicting(touch)) {
        continue;
      }
      from = std::min(from, std::max(touch.bytes.begin(), binding.range.begin()));
      to = std::max(to, std::min(touch.bytes.end(), binding.range.end()));
    }
    for (std::uint64_t byte = from; byte < to; ++byte) {
      for (std::size_t at = 0; at < count; ++at) {
        const Touch touch = touch_at(at);
        if (byte < touch.bytes.begin() || byte >= touch.bytes.end()) {
          continue;
        }
        if (!conflicting(touch)) {
          continue;
        }
        const std::uint32_t stream = nodes_[touch.node].stream;
        const RaceKind kind = !write        ? RaceKind::read_after_write
                              : touch.write ? RaceKind::write_after_write
                                            : RaceKind::write_after_read;
        const std::uint64_t earlier = touch.earlier_use ? 0 : nodes_[touch.node].launch;
        const auto same = std::find_if(found.begin(), found.end(), [&](const RaceFinding& f) {
          return f.kind == kind && f.write == write && f.binding == index && f.earlier == earlier &&
                 f.stream == stream && f.bytes.end() == byte;
        });
        if (same != found.end()) {
          same->bytes = ByteRange::of(same->bytes.begin(), byte + 1);
        } else {
          found.push_back(RaceFinding{kind, write, index, earlier, stream, binding.allocation,
                                      ByteRange::of(byte, byte + 1)});
        }
      }
    }
  };
  for (std::uint32_t index = 0; index < open.reads.size(); ++index) {
    scan(open.reads[index], false, index);
  }
  for (std::uint32_t index = 0; index < open.writes.size(); ++index) {
    scan(open.writes[index], true, index);
  }
}

std::vector<RaceFinding> StreamModel::begin(std::uint32_t stream, std::uint64_t launch,
                                            std::span<const Binding> reads,
                                            std::span<const Binding> writes) {
  std::vector<RaceFinding> races;
  begin(stream, launch, reads, writes, races);
  return races;
}

void StreamModel::begin(std::uint32_t stream, std::uint64_t launch, std::span<const Binding> reads,
                        std::span<const Binding> writes, std::vector<RaceFinding>& races) {
  if (open_) {
    throw std::logic_error("stream model: a launch began inside another");
  }
  // The last launch's lists, refilled: fresh ones cost two to four
  // allocations a launch (issue 13). Every field is set here.
  Open open = std::move(spare_open_);
  open.stream = stream;
  open.launch = launch;
  open.reads.assign(reads.begin(), reads.end());
  open.writes.assign(writes.begin(), writes.end());
  open.first_touches.clear();
  open.waited_on.clear();
  open.finished = false;
  if (!detect_) {
    // Ordering mode's first touch from another lane (see the header).
    const std::uint32_t lane = streams_.at(stream).lane;
    for (const auto* set : {&open.reads, &open.writes}) {
      for (const Binding& binding : *set) {
        const Allocation& allocation = allocations_.at(binding.allocation.raw());
        const bool listed =
            std::any_of(open.first_touches.begin(), open.first_touches.end(),
                        [&](const auto& entry) { return entry.first == binding.allocation; });
        if (binding.range.empty() || allocation.lane == lane || allocation.touched_elsewhere ||
            listed) {
          continue;
        }
        if (const auto newest = newest_in_lane(allocation.lane)) {
          open.first_touches.emplace_back(binding.allocation, *newest);
        }
      }
    }
  }
  open_ = std::move(open);
  conflicts(*open_, std::nullopt, true, races);
}

std::optional<std::string> StreamModel::end(bool queued) {
  if (!open_) {
    throw std::logic_error("stream model: a launch ended that never began");
  }
  Open open = std::move(*open_);
  open_.reset();
  // Its lists go back for the next begin(), whichever way this returns.
  class Recycle {
   public:
    Recycle(Open& open, Open& spare)
        : taken_(open)
        , kept_(spare) {}
    Recycle(const Recycle&) = delete;
    Recycle& operator=(const Recycle&) = delete;
    ~Recycle() { kept_ = std::move(taken_); }

   private:
    Open& taken_;
    Open& kept_;
  } const recycle(open, spare_open_);
  std::optional<std::string> violation;
  if (!detect_ && queued) {
    conflicts(open, std::nullopt, false, checked_);
    if (!checked_.empty()) {
      violation = "O1: launch " + std::to_string(open.launch) + " on stream " +
                  std::to_string(open.stream) +
                  " runs unordered with an earlier access: " + describe(checked_.front());
    }
  }
  if (!queued) {
    return violation;
  }

  // Its node. Nodes are numbered in host order and so are launches: nodes_
  // stays sorted by launch, and node_of() searches it (a map by launch was
  // an allocation per launch; issue 13, twenty-seventh round).
  if (!nodes_.empty() && open.launch <= nodes_.back().launch) {
    throw std::logic_error("stream model: launch " + std::to_string(open.launch) +
                           " queued after launch " + std::to_string(nodes_.back().launch));
  }
  Stream& stream = streams_.at(open.stream);
  const std::size_t node = nodes_.size();
  Node made{open.stream, open.launch, stream.reach};
  made.before.merge(done_closed_);
  stream.reach.merge(made.before);
  stream.reach.set(node);
  nodes_.push_back(std::move(made));
  stream.nodes.push_back(node);
  lane_newest_.at(stream.lane) = node;

  // Its touches: the first-touch writes, then reads, then writes.
  for (const auto& [id, writer] : open.first_touches) {
    Allocation& allocation = allocations_.at(id.raw());
    allocation.touched_elsewhere = true;
    if (allocation.size != 0) {
      allocation.touches.push_back(Touch{writer, true, true, ByteRange::of(0, allocation.size)});
    }
  }
  auto touch = [&](const Binding& binding, bool write) {
    Allocation& allocation = allocations_.at(binding.allocation.raw());
    if (allocation.lane != stream.lane && !binding.range.empty()) {
      allocation.touched_elsewhere = true;
    }
    if (binding.range.empty()) {
      return;
    }
    // Touches the host knows complete can never conflict again.
    std::erase_if(allocation.touches, [&](const Touch& old) { return done_.test(old.node); });
    allocation.touches.push_back(Touch{node, write, false, binding.range});
  };
  for (const Binding& binding : open.reads) {
    touch(binding, false);
  }
  for (const Binding& binding : open.writes) {
    touch(binding, true);
  }

  // Its pins (O3): allocations of another lane — in detect mode, once a
  // second stream exists, every allocation it binds (O4) — reads then
  // writes. (With one stream ever made the Device orders nothing: its
  // queue does.)
  const bool hold_home = detect_ && streams_.size() > 1;
  auto pin = [&](const Binding& binding) {
    const Allocation& allocation = allocations_.at(binding.allocation.raw());
    if ((allocation.lane == stream.lane && !hold_home) || binding.range.empty()) {
      return;
    }
    if (!stream.pins.empty() && stream.pins.back().allocation == binding.allocation) {
      stream.pins.back().node = node;
      return;
    }
    stream.pins.push_back(Stream::Pin{binding.allocation, node});
    new_pins_.push_back(binding.allocation);
    ++pins_taken_;
  };
  for (const Binding& binding : open.reads) {
    pin(binding);
  }
  for (const Binding& binding : open.writes) {
    pin(binding);
  }
  if (open.finished) {
    learn(open.stream, stream.nodes.size()); // A host copy on it returned.
  }
  return violation;
}

// ------------------------------------------------------------ pins

std::uint64_t StreamModel::pins_held() const noexcept {
  std::uint64_t held = 0;
  for (const Stream& stream : streams_) {
    held += stream.pins.size();
  }
  return held;
}

void StreamModel::take_new_pins(std::vector<AllocationId>& into) {
  into.clear();
  into.swap(new_pins_);
}

void StreamModel::take_released_pins(std::vector<AllocationId>& into) {
  into.clear();
  into.swap(released_pins_);
}

} // namespace taintpool::model
