// NcclCommunicator: collectives between GPUs over NCCL, on device memory (a
// Device on a CollectiveBackend around a CudaBackend) — taintpool::nccl,
// built where CMake finds nccl.h and libnccl (TAINTPOOL_NCCL=AUTO|ON|OFF).
//
// Each call is one NCCL group (ncclGroupStart/End) holding the data
// operation exactly as the user would issue it and the summary exchange —
// an ncclAllGather of 1 KiB per rank, an ncclBroadcast from the root, or a
// second send/recv of the pair — so the summaries cost no extra launch and
// ride the same stream. Then an event is recorded behind them. The call
// returns at once; the summaries land when the stream gets there, and the
// verdict reaches the Device at its next synchronize (C5).
//
// Where the summaries live (NcclOptions::summaries):
//   * host_mapped (default): pinned host memory mapped into the device's
//     address space. NCCL's kernels read this rank's summary from it and
//     write the others' into it; nothing is copied, and the host reads them
//     once the event completed;
//   * device: device memory, with one host-to-device copy of this rank's
//     summary before the group and one device-to-host copy of the delivered
//     ones after it, on the same stream — for platforms where NCCL cannot
//     use mapped host memory.
// Slots are pooled (one per call in flight), so a warm communicator
// allocates nothing per call.
//
// Never a hang (C6). The communicator is nonblocking (ncclConfig_t
// blocking = 0): initialization, group ends and finalization are polled.
// landed() polls the call's event and ncclCommGetAsyncError; wait_all()
// does so until every call landed, for at most the timeout. An asynchronous
// NCCL error, or the timeout, aborts the communicator (ncclCommAbort, which
// ends its kernels, so the streams drain), fails every call in flight with
// an Error of kind Communicator, and marks the communicator broken.
//
// One process (or thread) per GPU; the GPU must be current on the thread
// that uses it (the constructor makes it current). Not thread-safe.
#pragma once

#include <taintpool/collective/communicator.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <nccl.h>
#include <optional>
#include <string>
#include <vector>

namespace taintpool::cuda {

/// How an NcclCommunicator is built.
struct NcclOptions {
  enum class Summaries : std::uint8_t { host_mapped, device };
  /// How long initialization, or any call, may take before it fails (C6).
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  /// Where the summaries live (see above).
  Summaries summaries = Summaries::host_mapped;
};

/// Collectives over NCCL (see above).
class NcclCommunicator final : public Communicator {
 public:
  /// An id for ncclCommInitRank, made by one rank and given to the others
  /// (an ncclUniqueId's bytes). Throws Exception (Communicator) on failure.
  [[nodiscard]] static std::array<char, NCCL_UNIQUE_ID_BYTES> unique_id();

  /// Joins the communicator of `ranks` ranks named by `id` as `rank`, on
  /// CUDA device `device` (made current). Blocks until every rank joined,
  /// at most options.timeout; throws Exception (Communicator) otherwise.
  NcclCommunicator(const std::array<char, NCCL_UNIQUE_ID_BYTES>& id, int ranks, int rank,
                   int device, NcclOptions options = {});
  /// Waits for the calls in flight (bounded), then finalizes and destroys
  /// the communicator; a broken one was aborted already.
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;
  NcclCommunicator(NcclCommunicator&&) = delete;
  NcclCommunicator& operator=(NcclCommunicator&&) = delete;

  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] int size() const noexcept override { return size_; }
  [[nodiscard]] std::string name() const override;
  [[nodiscard]] bool lands_at_once() const noexcept override { return false; }
  [[nodiscard]] Ticket start(const CollectiveCall& call) override;
  [[nodiscard]] bool landed(Ticket ticket) override;
  void wait_all() override;
  [[nodiscard]] std::optional<Error> failure(Ticket ticket) const override;
  [[nodiscard]] std::span<const std::byte> summaries(Ticket ticket) const override;
  void release(Ticket ticket) noexcept override;
  [[nodiscard]] std::optional<Error> broken() const override { return broken_; }

  /// The NCCL communicator, for calls of your own next to taintpool's.
  [[nodiscard]] ncclComm_t handle() const noexcept { return comm_; }
  /// Summary slots allocated so far (a warm communicator allocates none).
  [[nodiscard]] std::size_t slots_made() const noexcept { return slots_.size(); }

 private:
  /// Room for size() delivered summaries and this rank's own.
  struct Slot {
    std::byte* host = nullptr;   ///< Pinned host memory (mapped, or the mirror).
    std::byte* device = nullptr; ///< What NCCL reads and writes.
    bool owns_device = false;    ///< Device mode: `device` is cudaMalloc'd.
  };
  struct Call {
    std::size_t slot = 0;
    void* event = nullptr; ///< cudaEvent_t, pooled.
    CollectiveKind kind = CollectiveKind::all_reduce;
    bool landed = false;
    std::optional<Error> failure;
  };

  [[nodiscard]] std::size_t take_slot();
  [[nodiscard]] void* take_event();
  /// Polls ncclCommGetAsyncError until it is not ncclInProgress, at most
  /// until `deadline`; aborts on an error or the deadline.
  void settle(const char* what, std::chrono::steady_clock::time_point deadline);
  /// Aborts the communicator and fails every call in flight.
  void abort(const std::string& why) noexcept;
  [[noreturn]] void fail(const std::string& why);

  ncclComm_t comm_ = nullptr;
  NcclOptions options_;
  int rank_ = 0;
  int size_ = 1;
  int device_ = 0;
  std::size_t slot_bytes_ = 0;
  std::vector<Slot> slots_;
  std::vector<std::size_t> free_slots_;
  std::vector<void*> free_events_;
  std::map<Ticket, Call> calls_;
  Ticket next_ticket_ = 1;
  std::optional<Error> broken_;
};

} // namespace taintpool::cuda
