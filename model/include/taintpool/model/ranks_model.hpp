// RanksModel: N ranks' DeviceModels and what a collective must do to each
// of them (C1-C6), stated per byte — the model the collective fuzzer
// compares every rank's Device with (DESIGN.md §4: slow, obviously right).
//
// Why it is shaped so. The rules speak of bytes and pieces, so the model
// keeps bytes: for each output byte of each receiving rank it lists the
// contribution bytes it was computed from (all-reduce: byte i of every
// rank's input; all-gather: byte i % n of rank i / n's; reduce-scatter: byte
// r*n + i of every rank's; broadcast and recv: byte i of the root's or the
// sender's), cuts every contribution into pieces (P = min(64, m) pieces of
// whole elements, piece p = elements [p*m/P, (p+1)*m/P)), and marks the byte
// stale iff one of those contribution bytes lies in a stale piece (C3). A
// piece is stale when a byte of it has a failure on its rank at the call;
// its root is the failure of its lowest stale byte (C2). Attribution (C4):
// the byte is the rank's own when the rank contributed to it and its own
// piece is stale — the byte takes that piece's root, and the root gets a
// `took_part` record; otherwise it is fed, and all fed bytes of one call
// take one Remote failure whose message cites every (rank, root) that fed
// one, with the texts the ranks' summaries carry (at most four roots per
// contribution, the rest counted). Values: the reduction in rank order,
// element by element (u8 and i32; sums and products wrap), or the copy;
// unknown wherever an input byte is.
//
// Timing (C5), as the loopback delivers: the rank whose call completes the
// collective gets the verdict at once, every other rank at its next
// synchronize, as a late failure of its exchange (DeviceModel::exchange,
// `deferred`). Before each contributing call the rank polls its pending
// exchanges and, when its input awaits a verdict (DeviceModel::
// awaits_verdict), synchronizes first (C2) — each rank's steps touch only
// its own DeviceModel, so the model takes every rank's first steps, then
// every summary, then every exchange.
//
// It shares no algorithm with core's collective layer: no piece images, no
// wire summaries — only public value types, DeviceModel and core's names
// for kinds (to_string of ids and errors, name() of enums).
#pragma once

#include <taintpool/collective/communicator.hpp>
#include <taintpool/collective/data_type.hpp>
#include <taintpool/model/device_model.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taintpool::model {

class RanksModel {
 public:
  /// `ranks` fresh DeviceModels.
  explicit RanksModel(int ranks);

  class Room;
  /// The same, starting with the lists an earlier model gave up (`room`,
  /// from take_room()): rank r's DeviceModel is made with that model's rank
  /// r's room (DeviceModel(false, room): capacity, never contents, so it
  /// answers as a fresh one), and collective()'s scratch lists, which every
  /// call refills before it reads them, keep their capacity. Why: a fuzzer
  /// that builds a RanksModel per input grew every rank's lists and every
  /// scratch list again each time (issue 13, fifty-first round).
  RanksModel(int ranks, Room room);
  /// Gives up every rank's DeviceModel lists (DeviceModel::take_room) and
  /// the scratch lists, for the next RanksModel; this one is left with
  /// empty lists and must only be destroyed.
  [[nodiscard]] Room take_room() noexcept;

  [[nodiscard]] int size() const noexcept { return static_cast<int>(ranks_.size()); }
  [[nodiscard]] DeviceModel& rank(int rank) { return ranks_.at(static_cast<std::size_t>(rank)); }
  [[nodiscard]] const DeviceModel& rank(int rank) const {
    return ranks_.at(static_cast<std::size_t>(rank));
  }

  /// One rank's call of a collective.
  struct Call {
    int rank = 0;
    /// The collective's kind; a pair's halves are send and recv.
    CollectiveKind kind = CollectiveKind::all_reduce;
    /// What it contributes (the root's send for a broadcast; none for recv
    /// and other ranks of a broadcast).
    std::optional<Binding> send;
    /// Where its result lands (none for send).
    std::optional<Binding> recv;
  };
  /// One collective: every rank's call, in the order they are made (the
  /// last completes it); a pair is its two halves, in either order.
  struct Collective {
    std::string name;
    DataType type = DataType::u8;
    ReduceOp op = ReduceOp::sum;
    int root = 0;            ///< Broadcast.
    std::uint64_t count = 0; ///< As CollectiveCall::count.
    std::vector<Call> calls;
  };
  /// What one call must do, in the order of Collective::calls.
  struct Expected {
    int rank = 0;
    bool synchronized_first = false; ///< C2: it synchronized its Device first.
    ModelLaunch launch;              ///< The exchange's result.
    std::uint64_t stale_bytes = 0;   ///< CollectiveResult::stale_bytes.
    bool verdict_pending = false;    ///< CollectiveResult::verdict_pending.
  };
  /// Runs the collective on the models (see above). Bindings must be valid
  /// and sized as the collective needs (the harness makes them so).
  std::vector<Expected> collective(const Collective& collective);
  /// As above, into `expected` (cleared first, then one element per call):
  /// a harness that keeps the vector pays for its buffer once, not once per
  /// collective (issue 13).
  void collective(const Collective& collective, std::vector<Expected>& expected);

  /// The summary's root line for a report, as the model words it (C2).
  [[nodiscard]] static std::string root_line(const Report& report);
  /// The same line into `text` (replacing what it held; its capacity kept).
  static void root_line(const Report& report, std::string& text);

 private:
  /// What one rank's contribution looked like when it called
  /// (ranks_model.cpp fills it).
  struct Contribution {
    std::vector<std::uint64_t> writer;              ///< Per byte: 0, or its failure.
    std::vector<std::optional<std::uint8_t>> value; ///< Per byte.
    std::uint64_t pieces = 0;
    std::uint64_t element = 1;
    std::vector<std::uint64_t> piece_root; ///< Per piece: 0 (clean) or its root.
    std::vector<std::size_t> slot;         ///< Per stale piece: its root entry.
    std::vector<std::uint64_t> distinct;   ///< The distinct roots, in piece order.
    std::vector<std::string> texts; ///< Root entries' texts (the first min(distinct, 4); kept).
    std::uint64_t more = 0;         ///< Distinct roots past four.
    /// Scratch: each root's report path (DeviceModel::report_path, the
    /// model's records in place), refilled for its text.
    std::vector<const SkipRecord*> path;
    std::vector<std::uint64_t> piece_at; ///< Per byte: the piece holding it.
    /// N2 under Report: the never-written runs read (allocation-relative),
    /// which count as clean here (writer 0).
    std::vector<UnwrittenRead> unwritten;
  };
  /// Output bytes [first, end) of a receiving call are contribution bytes
  /// [shift, shift + end - first) of `rank`'s (`from`): ranks_model.cpp
  /// states each kind's sources as one feed per source rank.
  struct Feed {
    int rank = 0;
    const Contribution* from = nullptr;
    std::uint64_t first = 0;
    std::uint64_t end = 0;
    std::uint64_t shift = 0;
  };
  /// Refills `out` with rank `rank`'s contribution `send`.
  void contribution_of(int rank, const Binding& send, DataType type, Contribution& out) const;
  /// The rank's contribution to the collective being worked out; throws
  /// std::out_of_range for a rank that sent none. Inline: it runs per
  /// source of every output byte.
  [[nodiscard]] const Contribution& contribution(int rank) const {
    const auto index = static_cast<std::size_t>(rank);
    if (index >= contributed_.size() || contributed_[index] == 0) {
      no_contribution(rank);
    }
    return contributions_[index];
  }
  [[noreturn]] static void no_contribution(int rank);

  std::vector<DeviceModel> ranks_;

  // Scratch for collective(), kept from one call to the next (issue 13:
  // rebuilt per call, these were a fifth of collective_fuzzer's
  // allocations). Every call refills every element it reads, so only
  // capacity survives a call; what collective() returns never points here.
  std::vector<Contribution> contributions_; ///< Per rank.
  std::vector<std::uint8_t> contributed_;   ///< Per rank: whether it sent this time.
  DeviceModel::ExchangePlan plan_;
  std::vector<std::uint8_t> fed_;        ///< Per output byte: 0 clean, 1 fed, 2 own stale.
  std::vector<std::uint64_t> own_piece_; ///< Per output byte.
  std::vector<Feed> feeds_;              ///< The call's sources (Feed).
  std::vector<std::pair<std::uint64_t, ByteRange>> own_runs_; ///< (own piece, its run).
  std::vector<std::pair<int, std::size_t>> cited_;            ///< (source, root entry).
  std::string kernel_;
  std::string message_; ///< A fed call's message, before its Error copies it.
  /// Rooms of ranks past size() when this model was made with a room: kept
  /// for take_room(), so an input with fewer ranks costs the next none.
  std::vector<DeviceModel::Room> spare_rooms_;
  /// Swaps the scratch lists with `room`'s (both directions).
  void trade_scratch(Room& room) noexcept;

 public:
  /// What a RanksModel leaves for the next one (see take_room()): every
  /// rank's DeviceModel::Room, in rank order, and the scratch lists.
  /// Capacity only. Movable, opaque.
  class Room {
   public:
    Room() = default;

   private:
    friend class RanksModel;
    std::vector<DeviceModel::Room> ranks;
    std::vector<Contribution> contributions;
    std::vector<std::uint8_t> contributed;
    DeviceModel::ExchangePlan plan;
    std::vector<std::uint8_t> fed;
    std::vector<std::uint64_t> own_piece;
    std::vector<Feed> feeds;
    std::vector<std::pair<std::uint64_t, ByteRange>> own_runs;
    std::vector<std::pair<int, std::size_t>> cited;
    std::string kernel;
    std::string message;
  };
};

} // namespace taintpool::model
