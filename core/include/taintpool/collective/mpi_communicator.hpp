// MpiCommunicator: collectives between processes over MPI, on host memory
// (a Device on HostBackend, or a CollectiveBackend around one) — part of
// taintpool::mpi, built where CMake finds MPI (TAINTPOOL_MPI=AUTO|ON|OFF).
//
// Each call issues the data operation and the summary exchange as two MPI-3
// nonblocking operations on a duplicate of the caller's communicator — the
// data as the user would have issued it (MPI_Iallreduce, MPI_Iallgather,
// MPI_Ireduce_scatter_block, MPI_Ibcast, MPI_Isend / MPI_Irecv), the
// summaries as one more small one (an MPI_Iallgather of 1 KiB per rank, an
// MPI_Ibcast from the root, or a second message of the pair) — and then
// polls both with MPI_Testall until they complete: the call is blocking, so
// every verdict is applied at once (lands_at_once, C5). Send/recv pairs
// block like MPI_Send/MPI_Recv: order them as you would those (a ring needs
// even ranks to send first).
//
// Never a hang (C6): the duplicate communicator returns errors instead of
// aborting (MPI_ERRORS_RETURN), and a call that has not completed within
// the timeout fails. Either way the call throws Exception (kind
// Communicator) naming the operation, the rank and MPI's error text; the
// communicator is broken from then on and its requests are abandoned
// (never freed, since the peers may still complete them). A process that
// dies makes mpirun end the job.
//
// Staging (MpiOptions::stage, the default): MPI works on the
// communicator's own scratch, copied from the input before and to the
// output after, so an abandoned request can only ever touch that scratch —
// which is kept, never freed — and never the Device's memory, which the
// caller may free or reuse once the call has thrown. It costs one copy of
// the input and one of the output per call (and makes aliased buffers need
// no MPI_IN_PLACE). Without it MPI works on the buffers themselves: no
// copies, but after a timeout the buffers must outlive the process's MPI.
//
// MPI itself must be initialized (MPI_Init) before and finalized after.
// Counts are MPI ints: a call of more than INT_MAX elements throws
// std::invalid_argument. Not thread-safe (one thread calls it, as the
// Collectives above it require).
#pragma once

#include <taintpool/collective/communicator.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mpi.h>
#include <optional>
#include <string>
#include <vector>

namespace taintpool {

/// How an MpiCommunicator is built.
struct MpiOptions {
  /// How long one call may take before it fails (C6).
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  /// MPI works on scratch copies, so a call abandoned by a timeout never
  /// touches the caller's memory afterwards (see above).
  bool stage = true;
};

/// Collectives over MPI (see above).
class MpiCommunicator final : public Communicator {
 public:
  /// Duplicates `communicator` (collective over it: every rank must build
  /// one) and makes the duplicate return errors. Throws Exception
  /// (Communicator) if MPI is not initialized or refuses.
  explicit MpiCommunicator(MPI_Comm communicator = MPI_COMM_WORLD, MpiOptions options = {});
  /// Frees the duplicate, unless broken (then its requests may be live).
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;
  MpiCommunicator(MpiCommunicator&&) = delete;
  MpiCommunicator& operator=(MpiCommunicator&&) = delete;

  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] int size() const noexcept override { return size_; }
  [[nodiscard]] std::string name() const override;
  [[nodiscard]] bool lands_at_once() const noexcept override { return true; }
  /// Issues both operations and waits for them (see above).
  [[nodiscard]] Ticket start(const CollectiveCall& call) override;
  [[nodiscard]] bool landed(Ticket /*ticket*/) override { return true; }
  void wait_all() override {}
  [[nodiscard]] std::optional<Error> failure(Ticket /*ticket*/) const override {
    return std::nullopt;
  }
  [[nodiscard]] std::span<const std::byte> summaries(Ticket ticket) const override;
  void release(Ticket ticket) noexcept override { landed_.erase(ticket); }
  [[nodiscard]] std::optional<Error> broken() const override { return broken_; }

  /// The duplicate communicator.
  [[nodiscard]] MPI_Comm handle() const noexcept { return communicator_; }

 private:
  /// Requests and scratch of a call that failed: kept, never freed.
  struct Abandoned {
    std::vector<MPI_Request> requests;
    std::unique_ptr<std::byte[]> scratch;
    std::vector<std::byte> summaries;
  };
  /// Scratch of at least `bytes`, reused across calls until one is abandoned.
  std::byte* scratch(std::size_t bytes);
  [[noreturn]] void fail(const CollectiveCall& call, const std::string& why);

  MPI_Comm communicator_ = MPI_COMM_NULL;
  MpiOptions options_;
  int rank_ = 0;
  int size_ = 1;
  Ticket next_ticket_ = 1;
  std::map<Ticket, std::vector<std::byte>> landed_;
  std::vector<Abandoned> abandoned_;
  std::unique_ptr<std::byte[]> scratch_;
  std::size_t scratch_bytes_ = 0;
  std::optional<Error> broken_;
};

} // namespace taintpool
