// Communicator: the engine that moves a collective's bytes between ranks —
// MPI (MpiCommunicator), NCCL (NcclCommunicator), or the in-process
// LoopbackWorld — and nothing about taint.
//
// taintpool builds no communication layer of its own: users already run MPI
// or NCCL, and a Communicator is the thinnest wrapper that lets Collectives
// (collectives.hpp) put taint next to their data. Each call moves a
// collective's data *and*, in the same step, the ranks' taint summaries
// (summary.hpp): gathered from every rank for the collectives every rank
// contributes to (all-reduce, all-gather, reduce-scatter), from the root for
// a broadcast, from the sender for a send/recv pair. NCCL issues both in one
// group call, MPI as one more small nonblocking collective next to the data.
//
// Completion. start() returns a ticket. A blocking engine (MPI) has landed
// everything when it returns; an asynchronous one (NCCL) lands it when its
// stream gets there; the loopback when the last rank of the collective has
// called. landed() asks without blocking. wait_all() blocks for everything
// in flight, but never for longer than the communicator's timeout: a peer
// that died or stopped calling makes it abort the communicator, fail what is
// left and mark the communicator broken (C6). No call here hangs.
//
// Errors: start() on a broken communicator, or one the engine refuses at
// once, throws Exception (kind Communicator) having started nothing; a
// failure found later is the ticket's failure(). Not thread-safe: the
// Collectives of one Device calls it one call at a time.
#pragma once

#include <taintpool/collective/data_type.hpp>
#include <taintpool/error.hpp>
#include <taintpool/stream/queue_backend.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace taintpool {

/// The five operations (send/recv are the two halves of a pair).
enum class CollectiveKind : std::uint8_t {
  all_reduce,     ///< recv[i] = op over ranks of send[i]; count elements each.
  all_gather,     ///< recv = every rank's send in rank order; count elements per rank.
  reduce_scatter, ///< recv = block `rank` of op over ranks of send; count elements per rank.
  broadcast,      ///< recv = the root's send (`peer` is the root); count elements.
  send,           ///< send goes to rank `peer`; count elements.
  recv,           ///< recv comes from rank `peer`; count elements.
};

/// "all_reduce", "all_gather", "reduce_scatter", "broadcast", "send", "recv".
[[nodiscard]] std::string_view name(CollectiveKind kind) noexcept;

/// One collective as the engine sees it: addresses (host memory for MPI and
/// the loopback, device memory for NCCL), a count, and this rank's summary.
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::all_reduce;
  /// The bytes this rank contributes: count elements (reduce-scatter:
  /// size() * count); a broadcast's on the root only; null for recv.
  const std::byte* send = nullptr;
  /// Where the result lands: count elements (all-gather: size() * count);
  /// null for send. May equal `send` (in place) for all-reduce and broadcast.
  std::byte* recv = nullptr;
  std::uint64_t count = 0;
  DataType type = DataType::u8;
  ReduceOp op = ReduceOp::sum;
  int peer = 0; ///< Broadcast: the root. Send/recv: the other rank.
  /// The queue the work goes on (NCCL: a cudaStream_t); ignored by MPI and
  /// the loopback.
  StreamHandle stream = nullptr;
  /// This rank's summary (TaintSummary::bytes); empty for recv.
  std::span<const std::byte> summary;
};

/// Names one started call of one communicator.
using Ticket = std::uint64_t;

/// The engine (see above).
class Communicator {
 public:
  virtual ~Communicator() = default;

  /// This rank, 0 ≤ rank() < size().
  [[nodiscard]] virtual int rank() const noexcept = 0;
  /// The number of ranks.
  [[nodiscard]] virtual int size() const noexcept = 0;
  /// For messages: "mpi rank 1 of 4".
  [[nodiscard]] virtual std::string name() const = 0;
  /// Whether every call has landed when start() returns (a blocking
  /// engine): then no verdict is ever late.
  [[nodiscard]] virtual bool lands_at_once() const noexcept = 0;

  /// Starts the call's data movement and summary exchange (see above).
  /// Throws Exception(Communicator) having started nothing.
  [[nodiscard]] virtual Ticket start(const CollectiveCall& call) = 0;
  /// Whether the ticket's data and summaries have landed, or it failed.
  /// Never blocks.
  [[nodiscard]] virtual bool landed(Ticket ticket) = 0;
  /// Blocks until every ticket has landed or failed, for at most the
  /// timeout (then: abort, fail the rest, broken()).
  virtual void wait_all() = 0;
  /// A landed ticket's communicator error, if it failed.
  [[nodiscard]] virtual std::optional<Error> failure(Ticket ticket) const = 0;
  /// A landed, successful ticket's summaries: size() of them in rank order
  /// for all-reduce, all-gather and reduce-scatter; the root's for a
  /// broadcast; the sender's for a recv; none for a send. Valid until
  /// release().
  [[nodiscard]] virtual std::span<const std::byte> summaries(Ticket ticket) const = 0;
  /// Forgets a landed ticket.
  virtual void release(Ticket ticket) noexcept = 0;
  /// Why the communicator can no longer be used, once it cannot (C6).
  [[nodiscard]] virtual std::optional<Error> broken() const = 0;

 protected:
  Communicator() = default;
  Communicator(const Communicator&) = default;
  Communicator& operator=(const Communicator&) = default;
  Communicator(Communicator&&) = default;
  Communicator& operator=(Communicator&&) = default;
};

} // namespace taintpool
