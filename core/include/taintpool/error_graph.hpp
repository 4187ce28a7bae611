// ErrorGraph: what each failure means, refcounted by the allocations that
// carry it (§3.3, rules G1–G10 and R1–R4).
//
// A failure is inserted when work fails (or provisionally, when a write scope
// opens), tagged once by every allocation whose Taint claims bytes for it,
// and removed the moment its last carrier lets go (G3). So a program that
// frees its stale buffers frees the error state with them, and one that keeps
// a stale buffer keeps exactly the failure that explains it.
//
// # The shape, and why
//
// The graph's hot path is the success path of every launch: mint a TornDown
// failure, tag it once per written buffer, untag it once per buffer, prune
// it. Two facts make that nearly free:
//   * ids are monotonic, so the newest node is the one being worked on; and
//   * provisional failures die young, almost always before the next insert.
// So nodes live in two inline slots, and tag/untag/prune on a node in
// either is a compare or two and an increment. A new node takes a vacant
// slot; a node that is still alive when the next insert finds both slots
// taken — real failures, carried by stale buffers — moves (the first slot's)
// to an open-addressing table (detail/failure_table.hpp) that never
// allocates once it has grown to the number of failures a program keeps
// around. Why two slots and not one: under FreshBytes::NeverWritten the
// device's NeverWritten node (N1) outlives many scopes and is touched by
// each — tagged by every fresh buffer, untagged by its first write, with a
// provisional failure minted in between. With one slot every such cycle
// moved it into the table and probed for it there (issue 15's cost); with
// two it stays put in one slot while provisional failures come and go in
// the other. Nothing here allocates per insert (G10); the TornDown error
// itself has no payload.
//
// The NeverWritten node has a third slot of its own (insert_never_written).
// When each fresh buffer is the node's only carrier — the common shape: a
// buffer is created, then written whole — the node is minted by the
// allocation and ends at the first write, every cycle. In a general slot
// that cost an Error assignment at each end (the slot must go back to
// TornDown for insert_provisional), an out-of-line removal and, to find out
// whether the last node still lived, a probe of the table. In its own slot
// the node's error stays NeverWritten while vacant, so minting it is an id
// and a count and ending it is an inline compare and a store; its id is
// still the next one (G1), it is tagged, untagged and found like any node
// (the slot is one more compare in find, after the two general slots), and
// nothing but its last untag ends it (G3; prune skips a tagged node, G5).
//
// Cost: tag/untag/insert/prune on a node in a slot are a handful of
// instructions, inline. On an older node they are a hash probe. Skip
// records and reports allocate; they are the failure path.
//
// Thread safety: none. The device serialises access; a graph is never shared
// between threads without a lock around it.
#pragma once

#include <taintpool/detail/failure_table.hpp>
#include <taintpool/error.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/report.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace taintpool {

/// The failures of one device, each refcounted by its carriers (§3.3).
/// Move-only; not thread-safe (see above).
class ErrorGraph {
 public:
  /// Skip records kept per root failure (G7); older ones are counted, not kept.
  static constexpr std::size_t kept_skip_records = 16;

  /// Empty; the first insert returns failure 1. Allocates nothing.
  ErrorGraph() noexcept = default;
  /// Takes every node; `other` is left an empty, usable graph that goes on
  /// minting after the ids it already used. (Member-wise moves would leave
  /// its counts behind with no nodes to back them.)
  ErrorGraph(ErrorGraph&& other) noexcept
      : hot_(std::move(other.hot_))
      , resident_(std::move(other.resident_))
      , never_written_(std::move(other.never_written_))
      , cold_(std::exchange(other.cold_, {}))
      , size_(std::exchange(other.size_, 0))
      , next_id_(other.next_id_) {}
  /// As the move constructor. The nodes this graph held are dropped: move
  /// onto a graph only once nothing carries them (R4).
  ErrorGraph& operator=(ErrorGraph&& other) noexcept {
    if (this != &other) {
      hot_ = std::move(other.hot_);
      resident_ = std::move(other.resident_);
      never_written_ = std::move(other.never_written_);
      cold_ = std::exchange(other.cold_, {});
      size_ = std::exchange(other.size_, 0);
      next_id_ = other.next_id_;
    }
    return *this;
  }
  /// Drops every node and starts the ids at 1 again: afterwards the graph
  /// answers every call exactly as a freshly constructed one does (empty,
  /// next_id() 1, no failure found), but its table keeps its slots, so a
  /// graph emptied and refilled many times (a fuzzer's, once per input;
  /// issue 13) stops allocating once it has grown. As with move-assignment,
  /// only once nothing carries a node (R4): a carrier's later untag would
  /// name an id that is gone or, after the ids restart, someone else's. So
  /// a node with tags left is a contract violation: std::logic_error naming
  /// it, thrown before anything changes. O(table capacity); frees the
  /// nodes' messages and skip logs.
  void clear();
  /// Not copyable: carriers hold tags on this graph's nodes by id, and a copy
  /// would hold nodes nobody tags.
  ErrorGraph(const ErrorGraph&) = delete;
  ErrorGraph& operator=(const ErrorGraph&) = delete;
  /// Frees every node. Carriers must be gone first (the Device destroys
  /// its memory before its graph), or their later untags would dangle.
  ~ErrorGraph() = default;

  /// G1: a new node with 0 tags, and its id — the previous id plus one,
  /// starting at 1, never reused. Throws std::overflow_error rather than mint
  /// UINT64_MAX itself, so next_id() stays a valid id (never, in practice).
  /// Allocation-free unless an older node must move to the table (the
  /// resident slot is taken) and the table must grow.
  FailureId insert(Error error) {
    if (next_id_ == UINT64_MAX) [[unlikely]] {
      throw_ids_exhausted();
    }
    detail::FailureNode& slot = vacant_slot();
    slot.id = next_id_++;
    slot.tags = 0;
    slot.error = std::move(error);
    ++size_;
    return FailureId::from_raw(slot.id);
  }

  /// insert(Error::torn_down()), for the provisional failure every write
  /// scope mints (S1): a vacant slot already holds a TornDown error, so the
  /// common case assigns no error at all. Throws as insert() does; part of
  /// the G10 zero-allocation path.
  [[gnu::always_inline]] FailureId insert_provisional() {
    if (next_id_ == UINT64_MAX) [[unlikely]] {
      throw_ids_exhausted();
    }
    detail::FailureNode& slot = vacant_slot();
    slot.id = next_id_++;
    slot.tags = 0;
    ++size_;
    return FailureId::from_raw(slot.id);
  }

  /// G1 for a write scope that will most likely claim nothing (the plain
  /// launch's provisional failure, device.cpp): the id insert_provisional()
  /// would mint, minted now, its node left out until the scope turns out to
  /// need it (materialize_provisional()). A scope that ends claiming
  /// nothing then writes no node and prunes none: two loads, a compare and
  /// an increment, where insert then prune wrote a slot and found it again
  /// (issue 11, item 7). Returns nullopt, changing nothing, when no inline
  /// slot is vacant — the node could then need the table, which may
  /// allocate, so the caller inserts instead. Throws as insert() does when
  /// ids run out, changing nothing.
  [[gnu::always_inline]] std::optional<FailureId> reserve_provisional() {
    const std::uint64_t reserved = reserve_provisional_raw();
    if (reserved == 0) {
      return std::nullopt;
    }
    return FailureId::from_raw(reserved);
  }
  /// reserve_provisional() as the id's raw value, 0 for none (ids start at
  /// 1). For the launch path: there g++ 12 built the optional in the frame
  /// with two stores (value, flag) and read it back with one 16-byte load,
  /// which no store can forward — a stall of a dozen cycles on every
  /// launch that writes (issue 11, item 7).
  [[gnu::always_inline]] std::uint64_t reserve_provisional_raw() {
    if (hot_.id != 0 && resident_.id != 0) [[unlikely]] {
      return 0;
    }
    if (next_id_ == UINT64_MAX) [[unlikely]] {
      throw_ids_exhausted();
    }
    return next_id_++;
  }

  /// The node of an id reserve_provisional() gave — 0 tags, TornDown, as
  /// insert_provisional() makes it — in the inline slot that was vacant
  /// then. Only before anything else is inserted into this graph: the id
  /// stays the newest, so G1's order holds, and the slot is still vacant,
  /// so nothing allocates. Throws std::logic_error, changing nothing, when
  /// that contract is broken (the id is not the newest minted, or already
  /// has a node, or no inline slot is vacant). Out of line: only a scope
  /// that claims (a failed or partly written launch) gets here.
  void materialize_provisional(FailureId reserved);

  /// G1 for the NeverWritten failure (N1): insert(Error::never_written()),
  /// into the slot kept for it, so the node a fresh buffer's first write
  /// ends is ended inline and the next allocation mints the next one without
  /// touching the general slots or the table. If that slot holds a live node
  /// already (a second manager sharing this graph), the new one takes a
  /// general slot, as insert() would. Throws as insert() does; allocation-free
  /// in its own slot.
  [[gnu::always_inline]] FailureId insert_never_written() {
    if (never_written_.id != 0) [[unlikely]] {
      return insert(Error::never_written());
    }
    return mint_never_written(0);
  }

  /// G1 + G2 for a fresh buffer's never-written claim (N1): the node in the
  /// NeverWritten slot, tagged once more — minted into the slot with its
  /// first tag when the slot is vacant. One branch and a store or two, where
  /// insert_never_written() then tag() would find the node again. Only for
  /// the slot's own node: the caller checked that the slot is vacant or
  /// holds the node it claims for. Throws as insert() does when ids run
  /// out, changing nothing.
  [[gnu::always_inline]] FailureId tag_never_written() {
    if (never_written_.id != 0) [[likely]] {
      ++never_written_.tags;
      return FailureId::from_raw(never_written_.id);
    }
    return mint_never_written(1);
  }

  /// The raw id of the node in the NeverWritten slot, 0 while it is vacant.
  /// A node insert_never_written() put there lives exactly while this still
  /// returns its id: nodes never leave the slot but by ending, and ids are
  /// never reused (G1). One load.
  [[nodiscard]] std::uint64_t never_written_slot() const noexcept { return never_written_.id; }

  /// G2: one more carrier. Throws std::logic_error if `failure` has no node
  /// (R2: a claim must point at a live node); nothing changes then.
  void tag(FailureId failure) {
    detail::FailureNode* node = find_never_written_first(failure.raw());
    if (node == nullptr) [[unlikely]] {
      throw_missing("tag", failure);
    }
    ++node->tags;
  }

  /// G3: one carrier fewer; at 0 the node is removed. An empty optional does
  /// nothing. Throws std::logic_error, changing nothing, if the node is
  /// missing or already has 0 tags (an untag with no matching tag).
  /// Inline everywhere: a fresh buffer's first write (N1) is a compare, a
  /// decrement and a store here; only remove() is out of line.
  [[gnu::always_inline]] void untag(std::optional<FailureId> failure) {
    if (!failure) {
      return;
    }
    detail::FailureNode* node = find_never_written_first(failure->raw());
    if (node == nullptr || node->tags == 0) [[unlikely]] {
      throw_bad_untag(*failure, node != nullptr);
    }
    if (--node->tags == 0) {
      if (node == &never_written_ && node->skips == nullptr) [[likely]] {
        // N1: a fresh buffer's first write released the node's last claim.
        // Its error stays NeverWritten for the next mint.
        --size_;
        node->id = 0;
        return;
      }
      remove(node);
    }
  }

  /// G4: swap the failure's error (the provisional TornDown becomes the real
  /// cause). A failure that no longer exists is ignored.
  void replace(FailureId failure, Error error) {
    if (detail::FailureNode* node = find(failure.raw())) {
      node->error = std::move(error);
    }
  }

  /// G5: remove the node if nothing carries it — the end of a write scope,
  /// for a provisional failure that claimed nothing or was fully released.
  /// A missing failure is ignored.
  [[gnu::always_inline]] void prune(FailureId failure) noexcept {
    detail::FailureNode* node = find(failure.raw());
    if (node == nullptr || node->tags != 0) {
      return;
    }
    if (node->skips == nullptr && node->error.kind() == ErrorKind::TornDown &&
        node->error.message().empty() && !in_table(node)) [[likely]] {
      // Every successful scope's provisional failure: inline, no call.
      --size_;
      node->id = 0;
      return;
    }
    remove(node);
  }

  /// G6: the failure's error, or null once it is gone. The pointer is valid
  /// until the next call that inserts or removes a node.
  [[nodiscard]] const Error* error(FailureId failure) const noexcept {
    const detail::FailureNode* node = find(failure.raw());
    return node != nullptr ? &node->error : nullptr;
  }

  /// The failure's tag count (R1), 0 once it is gone.
  [[nodiscard]] std::uint64_t tags(FailureId failure) const noexcept {
    const detail::FailureNode* node = find(failure.raw());
    return node != nullptr ? node->tags : 0;
  }

  /// Whether the failure still has a node (G6; R3 says why it may).
  [[nodiscard]] bool contains(FailureId failure) const noexcept {
    return find(failure.raw()) != nullptr;
  }

  /// Live nodes.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// No live node: what R4 promises once every carrier is gone.
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }

  /// The id the next insert will return.
  [[nodiscard]] FailureId next_id() const noexcept { return FailureId::from_raw(next_id_); }

  /// Slots in the table of older nodes (live or vacant): 0 until a third
  /// node is live at once, then a power of two that only grows — clear()
  /// keeps it. Whether an insert allocates depends on it, so a graph kept
  /// across a fuzzer's inputs must return to its fresh capacity for an
  /// input under an injected allocation fault to run as it would alone.
  [[nodiscard]] std::size_t table_capacity() const noexcept { return cold_.capacity(); }

  /// G7: a launch was skipped because of `root`. The newest kept_skip_records
  /// records are kept and all are counted. Throws std::logic_error if `root`
  /// has no node (a skip is only decided on a live failure, S1). Allocates:
  /// the log on a failure's first skip (its whole ring, once), and the
  /// record itself — the skip path, never the success path.
  void skipped(FailureId root, SkipRecord&& record);
  /// The same, for a record the caller keeps: copied in. Once the failure's
  /// ring is full, the copy goes into the slot of the record it drops,
  /// reusing that record's buffers — no allocation when they are as wide
  /// (a fuzzer records skips in bursts past the cap, and a record built per
  /// skip was most of its allocations; issue 13, thirtieth round). Either
  /// way the room is made before anything changes, so a std::bad_alloc
  /// leaves the graph as it was.
  void skipped(FailureId root, const SkipRecord& record);

  /// Every skip recorded on the failure (kept or dropped); 0 once it is gone.
  /// Inline, as error() and tags() are: a lookup and two loads, which a
  /// checker asks after every operation for every failure it touched (a
  /// call out of line, with its own coverage callbacks, cost a fuzzer about
  /// 2% of its time; issue 13).
  [[nodiscard]] std::uint64_t skips_recorded(FailureId failure) const noexcept {
    const detail::FailureNode* node = find(failure.raw());
    return node != nullptr && node->skips != nullptr ? node->skips->recorded : 0;
  }

  /// The kept skip records, oldest first; empty once the failure is gone.
  /// A copy: allocates.
  [[nodiscard]] std::vector<SkipRecord> skip_records(FailureId failure) const;

  /// Visits the kept skip records of `failure` in place, oldest first (the
  /// order skip_records() returns), as `fn(const SkipRecord&)`; none once
  /// the failure is gone. For readers that only compare or search them — a
  /// report's walk, a fuzzer's check after every op — where skip_records()'s
  /// copy of every record (a string and a vector each) was most of the cost
  /// (issue 13). No allocation; `fn` must not change the graph. One that
  /// removes a node (an untag to zero, a prune, a clear) may have freed the
  /// records being visited: the visit then throws std::logic_error at once
  /// instead of reading them (review1: it read freed memory). Records
  /// visited before the change were valid when `fn` saw them; the one `fn`
  /// holds when it removes the node is not valid after that removal.
  template <class Fn>
  void for_each_skip_record(FailureId failure, Fn&& fn) const {
    const detail::FailureNode* node = find(failure.raw());
    if (node == nullptr || node->skips == nullptr) {
      return;
    }
    const detail::SkipLog& log = *node->skips;
    const std::size_t kept = log.ring.size();
    // Once the ring is full, its next write position holds the oldest record.
    const std::size_t oldest =
        log.recorded > kept_skip_records ? static_cast<std::size_t>(log.recorded % kept) : 0;
    const std::uint64_t removals = removals_;
    for (std::size_t step = 0; step < kept; ++step) {
      fn(log.ring[(oldest + step) % kept]);
      if (removals_ != removals) [[unlikely]] {
        throw_changed_during_visit(failure);
      }
    }
  }

  /// G8: why `read` carries `failure`: the root error and the chain of
  /// skipped launches that led from the origin to `read`, newest first. The
  /// walk starts at the newest kept record that produced `read`, steps to the
  /// allocation that record needed, and continues among strictly older
  /// records; it ends where no kept record produced the current allocation,
  /// which is then the origin. Throws std::logic_error if `failure` is gone.
  /// Allocates the report; the walk is quadratic in the kept records, which
  /// number at most kept_skip_records.
  [[nodiscard]] Report report(FailureId failure, AllocationId read) const;

  /// report(failure, read), written into `out`: every field is set again
  /// (`stale` emptied), the path's records assigned in place and the path
  /// cut to its length, so a kept Report refilled equals a fresh one and
  /// reuses its root message's, records' names' and produced lists'
  /// capacity. For callers that report per operation (an exchange reports
  /// every stale input; issue 13: a fresh Report there was 7% of a
  /// collective's allocations). Throws std::logic_error, leaving `out`
  /// untouched, if `failure` is gone; on std::bad_alloc `out` holds some
  /// valid report, not necessarily this one.
  void report_into(FailureId failure, AllocationId read, Report& out) const;

  /// G9: one report per distinct failure among `claims` (failure, allocation
  /// read), in first-seen order; a repeated failure keeps its first
  /// allocation. Throws as report() does for a failure that is gone.
  [[nodiscard]] std::vector<Report>
  reports(std::span<const std::pair<FailureId, AllocationId>> claims) const;

  /// Visits (FailureId, const Error&, tags) for every live node, in no
  /// particular order. No allocation; `fn` must not insert or remove nodes.
  template <class Fn>
  void for_each(Fn&& fn) const {
    if (hot_.id != 0) {
      fn(FailureId::from_raw(hot_.id), hot_.error, hot_.tags);
    }
    if (resident_.id != 0) {
      fn(FailureId::from_raw(resident_.id), resident_.error, resident_.tags);
    }
    if (never_written_.id != 0) {
      fn(FailureId::from_raw(never_written_.id), never_written_.error, never_written_.tags);
    }
    cold_.for_each([&](const detail::FailureNode& node) {
      fn(FailureId::from_raw(node.id), node.error, node.tags);
    });
  }

  /// The graph's own shape: the count matches the nodes, every id is below
  /// next_id and present once, skip logs hold at most kept_skip_records.
  /// Tag counts against carriers (R1) need the carriers: check_refcounts()
  /// in taint.hpp. Throws std::logic_error naming the first violation.
  void check_invariants() const;

 private:
  /// The first vacant slot; with both taken, the first slot's node moves to
  /// the table (out of line; may throw std::bad_alloc, nothing changed).
  [[gnu::always_inline]] detail::FailureNode& vacant_slot() {
    if (hot_.id == 0) [[likely]] {
      return hot_;
    }
    if (resident_.id == 0) {
      return resident_;
    }
    retire_hot();
    return hot_;
  }

  /// Whether `node` lives in the table rather than in a slot.
  /// G1 into the vacant NeverWritten slot, with `tags` carriers already:
  /// the next id, its error NeverWritten again if a G4 replace or a move
  /// changed it. Throws when ids run out, changing nothing.
  [[gnu::always_inline]] FailureId mint_never_written(std::uint64_t tags) {
    if (next_id_ == UINT64_MAX) [[unlikely]] {
      throw_ids_exhausted();
    }
    if (never_written_.error.kind() != ErrorKind::NeverWritten ||
        !never_written_.error.message().empty()) [[unlikely]] {
      never_written_.error = Error::never_written(); // After a G4 replace or a move: once.
    }
    never_written_.id = next_id_++;
    never_written_.tags = tags;
    ++size_;
    return FailureId::from_raw(never_written_.id);
  }

  /// The live node of `failure` for a report (G8); throws std::logic_error
  /// naming it when it is gone.
  [[nodiscard]] const detail::FailureNode& reported_node(FailureId failure) const;
  /// The G8 walk of report() and report_into(): from out.origin (the read)
  /// back through `node`'s kept skip records, into out.path (records
  /// assigned in place, the path cut to the walk's length), with
  /// skips_recorded, path_may_be_incomplete and the origin set. The other
  /// fields are the caller's.
  void walk_into(FailureId failure, const detail::FailureNode& node, Report& out) const;

  [[nodiscard]] bool in_table(const detail::FailureNode* node) const noexcept {
    return node != &hot_ && node != &resident_ && node != &never_written_;
  }

  /// Three compares inline (every tag, untag and prune starts here); the
  /// table's probe only for an older node.
  [[nodiscard, gnu::always_inline]] detail::FailureNode* find(std::uint64_t id) noexcept {
    if (hot_.id == id) {
      return &hot_;
    }
    if (resident_.id == id) {
      return &resident_;
    }
    if (never_written_.id == id) {
      return &never_written_;
    }
    return cold_.find(id);
  }
  [[nodiscard, gnu::always_inline]] const detail::FailureNode*
  find(std::uint64_t id) const noexcept {
    return const_cast<ErrorGraph*>(this)->find(id);
  }

  /// find(), asking the NeverWritten slot first: for tag and untag, whose
  /// hottest caller under FreshBytes::NeverWritten is a fresh buffer's claim
  /// and its first write (N1). Provisional failures are not tagged on the
  /// success path, so they lose nothing.
  [[nodiscard, gnu::always_inline]] detail::FailureNode*
  find_never_written_first(std::uint64_t id) noexcept {
    return never_written_.id == id ? &never_written_ : find(id);
  }

  void remove(detail::FailureNode* node) noexcept {
    --size_;
    if (node == &hot_ || node == &resident_) {
      if (node->skips == nullptr && node->error.kind() == ErrorKind::TornDown &&
          node->error.message().empty()) [[likely]] {
        // A provisional failure that ended untouched (every successful
        // scope's): the slot already holds what a vacant one does.
        node->id = 0;
        node->tags = 0;
      } else if (node->skips == nullptr && node->error.message().empty()) {
        // Payload-free (a NeverWritten node whose last carrier was
        // written): back to the vacant TornDown without a call.
        node->id = 0;
        node->tags = 0;
        node->error = Error::torn_down();
      } else {
        ++removals_; // May free a skip log (for_each_skip_record).
        node->vacate();
      }
    } else if (node == &never_written_) {
      // Its error stays (insert_never_written restores NeverWritten if a G4
      // replace changed it); a skip log goes with the node.
      ++removals_;
      node->id = 0;
      node->tags = 0;
      delete node->skips;
      node->skips = nullptr;
    } else {
      ++removals_;
      cold_.erase(node);
    }
  }

  /// Moves the first slot's node into the table; out of line (allocates on
  /// the table's growth).
  void retire_hot();

  [[noreturn]] static void throw_missing(const char* operation, FailureId failure);
  [[noreturn]] static void throw_bad_untag(FailureId failure, bool exists);
  [[noreturn]] static void throw_ids_exhausted();
  [[noreturn]] static void throw_carried_clear(FailureId failure, std::uint64_t tags);
  [[noreturn]] static void throw_changed_during_visit(FailureId failure);

  detail::FailureNode hot_;      ///< The first inline slot (id 0 = vacant).
  detail::FailureNode resident_; ///< The second inline slot (id 0 = vacant).
  /// N1's slot (id 0 = vacant). Once it has held a node, its error stays
  /// NeverWritten while vacant (insert_never_written sets it the first time).
  detail::FailureNode never_written_;
  detail::FailureTable cold_; ///< Every other live node.
  std::size_t size_ = 0;
  std::uint64_t next_id_ = 1;
  /// Removals that may have freed a skip log: a visit of one
  /// (for_each_skip_record) stops when it moves. Counted on the cold
  /// removal paths only; the inline vacate of a log-free node frees nothing.
  std::uint64_t removals_ = 0;
};

} // namespace taintpool
