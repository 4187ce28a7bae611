// LoopbackWorld: N ranks of a communicator in one process and one thread,
// deterministic — the engine the model, the fuzzer and the unit tests drive
// collectives with, and a stand-in for MPI or NCCL in users' own tests.
//
// Each rank's Communicator (rank(r)) behaves like an asynchronous engine:
// start() records the call — the bytes it sends and its summary are copied
// at once, so the call sees its inputs as they were when it was made — and
// returns. The call completes when the last rank it needs has called: the
// k-th collective of every rank (all-reduce, all-gather, reduce-scatter,
// broadcast) forms one, matched in call order; a send from a to b matches
// the next recv on b from a. Completing writes every participant's output
// (host memory) and delivers the summaries; the rank whose call completed
// it sees it landed as start() returns, the others see it landed from then
// on. So the last rank's verdict is immediate and the others' late (C5),
// which exercises both paths of Collectives.
//
// Nothing can progress while the thread waits, so wait_all() on a rank whose
// call still lacks a participant fails that call at once, as a timeout
// would: "rank 2 did not take part in collective 5 (all_reduce)", and the
// whole world is broken (C6). Calls whose shapes disagree (kind, count,
// type, op, root) fail likewise when the last one arrives.
//
// Reductions are computed in rank order, element by element (u8 sums wrap),
// so results are deterministic. Not thread-safe; the world must outlive
// its ranks' users.
#pragma once

#include <taintpool/collective/communicator.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace taintpool {

/// N in-process ranks (see above).
class LoopbackWorld {
 public:
  /// The most ranks one world holds. Every rank lives in this process and
  /// a collective waits for all of them, so a world far larger than any
  /// test or fuzzer needs is a caller's mistake: refused by number (P3),
  /// not allocated until the host runs out.
  static constexpr int max_ranks = 4096;

  /// 1 ≤ `ranks` ≤ max_ranks; std::invalid_argument otherwise.
  explicit LoopbackWorld(int ranks);
  ~LoopbackWorld();
  LoopbackWorld(const LoopbackWorld&) = delete;
  LoopbackWorld& operator=(const LoopbackWorld&) = delete;
  LoopbackWorld(LoopbackWorld&&) = delete;
  LoopbackWorld& operator=(LoopbackWorld&&) = delete;

  /// Rank `rank`'s communicator; std::out_of_range for a bad rank.
  [[nodiscard]] Communicator& rank(int rank);
  [[nodiscard]] int size() const noexcept { return static_cast<int>(ranks_.size()); }
  /// Calls started and not yet complete (waiting for a participant).
  [[nodiscard]] std::size_t waiting() const noexcept;
  /// Why the world is broken, once it is.
  [[nodiscard]] const std::optional<Error>& broken() const noexcept { return broken_; }

 private:
  class Rank;
  /// One started call of one rank.
  struct Started {
    int rank = 0;
    Ticket ticket = 0;
    CollectiveCall call;
    std::vector<std::byte> data;    ///< The bytes it sends, as they were.
    std::vector<std::byte> summary; ///< Its summary, as it was.
  };
  /// One collective being matched (every rank), or one pair.
  struct Match {
    std::uint64_t sequence = 0; ///< Collectives: the k of "k-th collective".
    std::vector<Started> calls;
  };
  /// A ticket's state, on its rank.
  struct Slot {
    bool landed = false;
    std::optional<Error> failure;
    std::vector<std::byte> summaries;
  };

  Ticket start(int rank, const CollectiveCall& call);
  void complete_collective(Match& match, int completing);
  void complete_pair(Started& send, Started& recv);
  void fail(Match& match, const Error& error);
  void break_world(const Error& error);
  void wait_all(int rank);
  Slot* slot(int rank, Ticket ticket);
  /// A spare byte buffer, empty, that holds `bytes` — the smallest that
  /// does (no capacity when none does).
  std::vector<std::byte> take_buffer(std::size_t bytes) noexcept;
  /// `buffer` := `bytes`, in a spare buffer when its own is too small.
  void fill(std::vector<std::byte>& buffer, std::span<const std::byte> bytes);
  /// Keeps `buffer`'s capacity for a later call, when there is room.
  void give_back(std::vector<std::byte>& buffer) noexcept;
  /// An empty list of calls with room for every rank: a finished match's.
  std::vector<Started> take_calls();
  /// Keeps a finished match's buffers and its list of calls (emptied) for
  /// later calls, when there is room.
  void give_back(Match& match) noexcept;

  std::vector<std::unique_ptr<Rank>> ranks_;
  // Vectors, not deques: a few open matches at most, and a deque allocates
  // its map and first block when the world is built (issue 13).
  std::vector<Match> collectives_;           ///< Open collectives, oldest first.
  std::vector<std::uint64_t> next_sequence_; ///< Per rank: its next collective's k.
  std::vector<Match> pairs_;                 ///< Open sends and recvs, oldest first.
  std::optional<Error> broken_;
  /// The byte buffers of finished calls (their snapshots) and released
  /// slots (their summaries), reused by the next calls: each call took
  /// three fresh ones, a kilobyte-sized summary among them (issue 13).
  /// At most kSpare, so a burst of large calls is not held for good.
  std::vector<std::vector<std::byte>> spare_;
  static constexpr std::size_t kSpare = 32;
  /// Finished matches' lists of calls, reused likewise: a list per
  /// collective and per pair was the next allocation (issue 13).
  std::vector<std::vector<Started>> spare_calls_;
  /// Each rank's room for open tickets, made at its first call: most hold
  /// one or two at once, a few while verdicts are pending.
  static constexpr std::size_t kOpenSlots = 8;
  std::vector<std::byte> reduced_; ///< complete_collective's reduction, reused.
};

} // namespace taintpool
