// StreamModel: the ordering oracle for a Device with several streams — which
// earlier accesses to a byte are ordered before a piece of work, derived from
// what actually happened in the queues (O1-O4, proposed rules; see
// DeviceModel for the taint side, S1-S6 and D1).
//
// Why it is shaped so. The point of a model is that it is right by reading.
// It keeps the state the rules talk about and recomputes everything else:
//   * every launch that queued work (and every host write) is a *node* on
//     its stream, numbered in host order;
//   * every allocation keeps the list of its *touches* — each node that read
//     or wrote some of its bytes, with those bytes, in host order; a check
//     asks, byte by byte, which touches cover the byte; nothing is merged
//     into runs or split;
//   * "ordered before" is a set of nodes, not a clock: a node is ordered
//     before the next work on stream B if it is on B, or B waited on an event
//     that covers it, or the host learned it completed. Sets are unions,
//     taken as events happen.
// It shares no algorithm with core (no vector clocks, no run splitting, no
// slots beyond the lane rule below): it is told every observable queue event
// by the harness's backend decorator (fuzz/common/stream_check.hpp) and
// derives the order from those alone.
//
// # The rules, in the model's own words
//
// Queue order. Work on one stream runs in the order it was queued. An event
// recorded on stream A *covers* every node queued on A so far and every node
// A's queue already waited for (the record sits behind those waits). A wait
// on B for an event makes every node it covers ordered before B's later work.
//
// Host knowledge. The host learns a node completed when done() answered true
// for an event recorded after it on its stream, when finish() of its stream
// returned, or when a host copy on its stream returned (Device::write). A
// synchronize finishes every stream.
//
// Two relations. *Happens before* is the truth: the transitive closure of
// queue order, waits, and "the host learned it complete before queuing
// this" — so work a learned-complete node waited for is complete too. *As
// learned* is what O2 lets a Device count: queue order, waits (transitively
// through the streams waited for), and the completion the host learned of
// each stream's own work — not what that work waited for. Every order as
// learned is a happens-before order; a Device that knew more would wait
// less, never wrongly. O1 (safety) is judged by happens before, O2 (no
// needless wait) by as learned, O4's races by as learned (in detect mode
// there are no waits, and the two agree).
//
// Conflicts (O1). Two touches of one byte conflict when they are on
// different streams and at least one writes. A launch on B is *ordered* when
// every earlier conflicting touch of every byte it binds happens before it.
// In ordering mode every launch must be ordered once its waits are queued
// (O1), and every wait must have been needed (O2): when it was queued, some
// byte the launch binds had a conflicting touch on the wait's source stream
// not yet ordered before it as learned; and no launch waits twice for one
// source stream.
//
// The memory's earlier use (O3). An allocation is made on a stream (its
// *home*), in that stream's *lane*; its memory may have been used by earlier
// work of that lane. So its creation counts as a write of every byte by the
// lane's newest node (none if the lane queued nothing). In ordering mode the
// Device records nothing for an allocation only its home stream touched,
// and the first touch from another stream takes the home stream's whole
// queue so far as the writer (core's documented cost trade-off); the model
// follows: that touch adds a write of every byte by the lane's newest node,
// and the rule starts over once every stream is finished (a synchronize).
//
// Lanes. Each stream has a lane: the default stream lane 0, a new stream the
// lowest lane a destroyed stream left, else the next one. An allocation's
// home is its lane — after a stream is destroyed, the next stream in its lane
// is the home of the allocations it left.
//
// Pins (O3). A launch on B that binds (non-empty) an allocation of another
// lane pins it — in detect mode, once a second stream was made, any
// allocation it binds (O4: memory is reused only once every use of it
// completed, so no race crosses allocations) — in binding order (reads,
// then writes); a pin of the same allocation as B's newest pin moves that
// pin on instead. B's pins are let go, oldest first, once the host knows
// their node complete. The harness turns pins into handles of the
// DeviceModel, so an allocation ends (P1) when its last handle or pin goes.
//
// Races (O4). In detect mode no wait may be queued; begin() lists every
// earlier conflicting touch not ordered before the launch, per binding, per
// earlier node, per maximal run of bytes: the races DeviceModel turns into
// Race failures. All earlier touches count, not only the last writer: after
// a race, an earlier writer may still land.
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/pool/allocation.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace taintpool::model {

/// A set of nodes, by number: a plain bitset that grows. Its first 64
/// nodes are a word of its own, so a set of those (every set of a
/// stream_fuzzer input: it makes at most 32 ops, a node each) never
/// allocates; a vector of words had cost every node, stream and event an
/// allocation or two (issue 13). The same bits either way.
class NodeSet {
 public:
  [[nodiscard]] bool test(std::size_t node) const noexcept {
    const std::size_t word = node / 64;
    const std::uint64_t bits = word == 0 ? first_ : word <= rest_.size() ? rest_[word - 1] : 0;
    return ((bits >> (node % 64)) & 1u) != 0;
  }
  void set(std::size_t node) {
    const std::size_t word = node / 64;
    const std::uint64_t bit = std::uint64_t{1} << (node % 64);
    if (word == 0) {
      first_ |= bit;
      return;
    }
    if (word > rest_.size()) {
      rest_.resize(word, 0);
    }
    rest_[word - 1] |= bit;
  }
  void merge(const NodeSet& other) {
    first_ |= other.first_;
    if (other.rest_.size() > rest_.size()) {
      rest_.resize(other.rest_.size(), 0);
    }
    for (std::size_t at = 0; at < other.rest_.size(); ++at) {
      rest_[at] |= other.rest_[at];
    }
  }

 private:
  std::uint64_t first_ = 0;         ///< Nodes 0..63.
  std::vector<std::uint64_t> rest_; ///< Word w holds nodes 64(w+1)..64(w+2)-1.
};

/// How an earlier touch conflicts with a planned binding.
enum class RaceKind : std::uint8_t {
  read_after_write,  ///< The planned read binding; an earlier write.
  write_after_write, ///< The planned write binding; an earlier write.
  write_after_read,  ///< The planned write binding; an earlier read.
};

/// One earlier conflicting touch not ordered before a planned launch: one
/// binding, one earlier node, one maximal run of bytes (allocation-relative).
struct RaceFinding {
  RaceKind kind = RaceKind::read_after_write;
  bool write = false;        ///< The planned binding is a write binding.
  std::uint32_t binding = 0; ///< Its index among the reads or the writes.
  std::uint64_t earlier = 0; ///< The earlier launch; 0 for the memory's earlier use.
  std::uint32_t stream = 0;  ///< The earlier node's stream (StreamId number).
  AllocationId allocation;   ///< Whose bytes.
  ByteRange bytes;           ///< Allocation-relative, inside the binding.
};

/// `list`'s buffer, with nothing in it: what a Room hands on from one
/// object to the next (StreamModel's here, the stream rig's in testing/) —
/// capacity, never contents.
template <class T>
[[nodiscard]] std::vector<T> emptied(std::vector<T>& list) noexcept {
  std::vector<T> taken = std::move(list);
  taken.clear();
  return taken;
}

/// The ordering oracle (see above). Streams are named by StreamId number
/// (0: the default stream), events by the backend's handle, launches by
/// KernelContext::launch().
class StreamModel {
 public:
  class Room;

  /// `detect`: StreamOrdering::Detect (O4) — no wait may be queued.
  explicit StreamModel(bool detect);
  /// The same, starting with the lists an earlier model gave up (`room`,
  /// from take_room()): their capacity, never their contents — every list
  /// is emptied and every field set as a fresh model sets it, so the model
  /// answers exactly as StreamModel(detect) would (pinned by
  /// StreamModelRoom.*). stream_fuzzer makes a model per input, and the
  /// lists grown from empty were a fifth of an input's allocations
  /// (issue 13, forty-fifth round).
  StreamModel(bool detect, Room room);

  /// Gives up the model's lists (see Room) for the next model to start
  /// with. The model is left with none of its state: destroy it next.
  [[nodiscard]] Room take_room() noexcept;

  // ---- streams

  /// Device::create_stream returned stream `number` (takes a lane).
  void create_stream(std::uint32_t number);
  /// Device::destroy_stream(number) returned (its finish was reported).
  void destroy_stream(std::uint32_t number);
  /// The lane of a live stream.
  [[nodiscard]] std::uint32_t lane(std::uint32_t stream) const { return streams_.at(stream).lane; }
  [[nodiscard]] bool live_stream(std::uint32_t stream) const {
    return stream < streams_.size() && streams_[stream].live;
  }

  // ---- allocations

  /// create_buffer made `allocation` of `size` bytes on `stream`.
  void created(AllocationId allocation, std::uint64_t size, std::uint32_t stream);
  /// The lane an allocation was made in.
  [[nodiscard]] std::uint32_t home_lane(AllocationId allocation) const {
    return allocations_.at(allocation.raw()).lane;
  }

  // ---- what the queues did (the harness's backend decorator reports it)

  /// An event was recorded at the end of `stream`.
  void recorded(const void* event, std::uint32_t stream);
  /// `stream` waits for `event`. During a launch: the O2 (ordering mode) or
  /// O4 (detect mode: no wait at all) violation it is, if any. Outside one:
  /// always a violation.
  [[nodiscard]] std::optional<std::string> waited(std::uint32_t stream, const void* event);
  /// done(event) answered true.
  void done(const void* event);
  /// finish(stream) returned, or a host copy on it did: the host knows
  /// every node of it queued so far completed — during a launch on it, the
  /// launch's own node too.
  void finished(std::uint32_t stream);
  /// Every stream was finished in one go (Device::synchronize, a read):
  /// ordering mode's first-touch rule starts over.
  void synchronized();

  // ---- launches

  /// A launch (or host write) `launch` on `stream` with valid bindings is
  /// about to be made. Returns the earlier conflicting touches not ordered
  /// before it now (before any wait it gets).
  std::vector<RaceFinding> begin(std::uint32_t stream, std::uint64_t launch,
                                 std::span<const Binding> reads, std::span<const Binding> writes);
  /// The same, into `races` (cleared first): a caller that keeps one list
  /// across launches keeps its capacity, where a list returned by value
  /// was an allocation for every launch that races (issue 13).
  void begin(std::uint32_t stream, std::uint64_t launch, std::span<const Binding> reads,
             std::span<const Binding> writes, std::vector<RaceFinding>& races);
  /// The launch returned or threw. `queued`: it was not skipped (a body
  /// that threw counts: it may have queued work). In ordering mode, the O1
  /// violation it is, if some conflicting touch is still unordered. Then
  /// its touches and pins are recorded.
  [[nodiscard]] std::optional<std::string> end(bool queued);

  // ---- queries

  /// Nodes so far; a launch's node, if it queued.
  [[nodiscard]] std::size_t nodes() const noexcept { return nodes_.size(); }
  [[nodiscard]] std::optional<std::size_t> node_of(std::uint64_t launch) const;
  [[nodiscard]] std::uint32_t stream_of(std::size_t node) const { return nodes_.at(node).stream; }
  /// Whether `node` is known complete: learned, or before one learned.
  [[nodiscard]] bool known_complete(std::size_t node) const { return done_closed_.test(node); }
  /// Whether `earlier` happens before `later`.
  [[nodiscard]] bool ordered_before(std::size_t earlier, std::size_t later) const;
  /// The same for the node of `launch`, or for the launch being made (its
  /// node does not exist yet: what is ordered before its stream now).
  [[nodiscard]] bool ordered_before_launch(std::size_t earlier, std::uint64_t launch) const;
  /// The newest node of a lane when `allocation` was made (its memory's
  /// earlier use), if any.
  [[nodiscard]] std::optional<std::size_t> earlier_use(AllocationId allocation) const {
    return allocations_.at(allocation.raw()).earlier_use;
  }

  /// Pins taken so far, and held now (StreamStats::pins_taken / pins_held).
  [[nodiscard]] std::uint64_t pins_taken() const noexcept { return pins_taken_; }
  [[nodiscard]] std::uint64_t pins_held() const noexcept;
  /// Allocations pinned by end() since the last call, into `into` (its
  /// contents replaced): one handle each. The two lists trade buffers, so
  /// a caller that keeps `into` makes no allocation per call.
  void take_new_pins(std::vector<AllocationId>& into);
  /// Pins let go since the last call (the host learned their work
  /// complete), into `into` as above: one handle each.
  void take_released_pins(std::vector<AllocationId>& into);

  /// Events recorded and waits queued so far.
  [[nodiscard]] std::uint64_t events_recorded() const noexcept { return events_recorded_; }
  [[nodiscard]] std::uint64_t waits_queued() const noexcept { return waits_queued_; }

 private:
  struct Node {
    std::uint32_t stream;
    std::uint64_t launch;
    NodeSet before; ///< Every node that happens before it.
  };
  struct Stream {
    bool live = true;
    std::uint32_t lane = 0;
    std::vector<std::size_t> nodes; ///< Its nodes, in queue order.
    NodeSet waited;                 ///< Ordered before its next node through waits, as learned.
    NodeSet reach;         ///< Happens before its next node (but for completion learned later).
    std::size_t known = 0; ///< Its first `known` nodes are known complete.
    struct Pin {
      AllocationId allocation;
      std::size_t node;
    };
    std::vector<Pin> pins; ///< Oldest first.
  };
  struct Event {
    std::uint32_t stream;
    std::size_t count; ///< The stream's nodes when it was recorded.
    NodeSet covers;    ///< Those nodes and what the stream waited for, as learned.
    NodeSet reaches;   ///< Everything that happens before it.
  };
  struct Touch {
    std::size_t node;
    bool write;
    bool earlier_use; ///< The memory's earlier use, not a launch of its own.
    ByteRange bytes;  ///< Allocation-relative, non-empty.
  };
  struct Allocation {
    std::uint32_t lane = 0;
    std::uint64_t size = 0;
    std::optional<std::size_t> earlier_use;
    bool touched_elsewhere = false; ///< Ordering mode's first-touch rule.
    std::vector<Touch> touches;     ///< In host order; known-complete ones dropped.
  };
  struct Open {
    std::uint32_t stream = 0;
    std::uint64_t launch = 0;
    std::vector<Binding> reads;
    std::vector<Binding> writes;
    /// Ordering mode: allocations this launch touches first from another
    /// stream, with the lane's newest node their writer would be.
    std::vector<std::pair<AllocationId, std::size_t>> first_touches;
    std::vector<std::uint32_t> waited_on; ///< Source streams waited for.
    bool finished = false;                ///< A host copy on it returned.
  };
  using AllocationNode = std::map<std::uint64_t, Allocation>::node_type;

 public:
  /// What a model's lists leave behind for the next model: the lists
  /// themselves, empty, and the streams' and allocations' own lists as
  /// spares (a stream's nodes and pins, an allocation's map node and
  /// touches). Capacity only: a model taking a Room empties every list it
  /// reuses and sets every field before use. Movable, opaque.
  class Room {
   public:
    Room() = default;

   private:
    friend class StreamModel;
    std::vector<Node> nodes;
    std::vector<Stream> streams;       ///< Empty.
    std::vector<Stream> spare_streams; ///< Their lists emptied.
    std::vector<std::optional<std::uint32_t>> lanes;
    std::vector<std::optional<std::size_t>> lane_newest;
    std::vector<AllocationNode> allocations; ///< Spare map nodes, their touches emptied.
    Open open;
    std::vector<RaceFinding> checked;
    std::vector<AllocationId> new_pins;
    std::vector<AllocationId> released_pins;
  };

 private:
  /// Whether `node` is ordered before `stream`'s next work: as learned
  /// (O2, O4), or happens before (O1).
  [[nodiscard]] bool ordered_for(std::size_t node, std::uint32_t stream, bool as_learned) const;
  /// The launch's unordered conflicts now, into `found` (cleared first);
  /// only those on `source` if given.
  void conflicts(const Open& open, std::optional<std::uint32_t> source, bool as_learned,
                 std::vector<RaceFinding>& found) const;
  [[nodiscard]] std::optional<std::size_t> newest_in_lane(std::uint32_t lane) const;
  void learn(std::uint32_t stream, std::size_t count);
  void release_pins(std::uint32_t stream);
  /// A stream with every field as a fresh one, a spare's lists if any.
  [[nodiscard]] Stream fresh_stream(std::uint32_t lane);

  bool detect_;
  std::vector<Node> nodes_;     ///< In host order, so ascending by launch too (node_of).
  std::vector<Stream> streams_; ///< By StreamId number.
  std::vector<std::optional<std::uint32_t>> lanes_;     ///< Lane -> the live stream in it.
  std::vector<std::optional<std::size_t>> lane_newest_; ///< Lane -> its newest node.
  std::map<const void*, Event> events_;
  std::map<std::uint64_t, Allocation> allocations_; ///< By raw id.
  NodeSet done_;        ///< Nodes the host learned completed (each stream's own).
  NodeSet done_closed_; ///< And every node that happened before one of them.
  std::optional<Open> open_;
  Open spare_open_; ///< The last ended launch's lists, kept for their capacity.
  /// Scratch for the conflicts a wait or an end checks, kept for its
  /// capacity; read only within the call that fills it.
  std::vector<RaceFinding> checked_;
  std::vector<AllocationId> new_pins_;
  std::vector<AllocationId> released_pins_;
  /// Streams and allocation map nodes whose lists a new stream or
  /// allocation takes over (Room); room for this many is kept.
  static constexpr std::size_t kSpares = 16;
  std::vector<Stream> spare_streams_;
  std::vector<AllocationNode> spare_allocations_;
  std::uint64_t pins_taken_ = 0;
  std::uint64_t events_recorded_ = 0;
  std::uint64_t waits_queued_ = 0;
};

} // namespace taintpool::model
