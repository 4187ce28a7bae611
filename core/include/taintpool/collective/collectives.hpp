// Collectives: taint across ranks (C1-C6). All-reduce, all-gather,
// reduce-scatter, broadcast and send/recv over a Communicator (MPI, NCCL, the
// in-process loopback), as operations of one rank's Device.
//
// One rank's failed or skipped kernel leaves stale bytes in its input; a
// collective mixes them into every rank's output, and without this no rank
// but the first could tell. Here each collective is an exchange of its
// Device (device/exchange.hpp) — a launch on the stream you name, ordered
// after conflicting work on other streams like any launch (O1-O3) — and:
//
//   C1 takes part: a rank whose input is stale still runs the collective,
//      so taint never deadlocks a communicator;
//   C2 summary: alongside the data, every contributing rank sends a fixed
//      1 KiB summary of its contribution's taint at piece grain (64 pieces
//      of whole elements), with the root error and skip path of up to four
//      failures as text (summary.hpp). It describes the taint known in host
//      order when the call is made — after any earlier verdict these inputs
//      depend on has been attributed (Device::awaits_verdict: the call
//      synchronizes first only then);
//   C3 agreement: an output byte is stale iff a piece it was computed from
//      is stale on some rank; every rank derives this from the same
//      summaries, so all receiving ranks agree;
//   C4 attribution: output bytes computed from this rank's own stale piece
//      carry its own failure (the path gains a "took part" record); bytes
//      fed by other ranks carry one failure of kind Remote per collective,
//      whose report reads e.g. `all_reduce(grads) on rank 1: fed stale bytes
//      from rank 3: allocation 7 was left unwritten by failure 12 (out of
//      memory: ...)`;
//   C5 timing: when the summaries are there as the call returns (MPI; the
//      loopback's last rank) the verdict is applied at once; otherwise
//      (NCCL) at the next synchronize, as a late failure of the collective's
//      launch through the CollectiveBackend the Device runs on, attributed
//      to the fed bytes and to everything that ran on them since;
//   C6 communicator failure: a peer that fails or does not take part within
//      the communicator's timeout leaves the outputs carrying the error (the
//      body throws: S3, or late: the launch's late failure), marks the
//      communicator broken, and every later call throws Exception (kind
//      Communicator) before it starts anything. Nothing hangs.
//   D2 carries over: ranks that take no part (a send/recv pair's
//      bystanders) and bytes outside the bindings are untouched.
//   N2 never-written input (FreshBytes::NeverWritten): under
//      UnwrittenReads::Skip its bytes are stale like any failure's — the
//      collective takes part (C1), the outputs they feed carry the
//      NeverWritten failure here (C4, carried) and a Remote one on the
//      other ranks. Under Report the collective reads them as a launch
//      would (it runs either way) and lists them in the result's
//      launch.unwritten instead: no output byte carries them and the
//      summary the other ranks get calls them clean. Any other failure of
//      the input is carried as ever.
//
// What a summary cannot know: a checked kernel's failure found only at a
// later synchronize (CudaBackend::checked, DeferredHostBackend::fail_later).
// A collective whose inputs such a kernel wrote therefore synchronizes first
// (awaits_verdict says yes for them), which costs a host sync; without
// checked kernels nothing upstream is unconfirmed and nothing waits.
//
// Cost per collective: one small summary exchange next to the data (NCCL:
// in the same group call), a clean summary written as 16 bytes, the
// exchange's scope (a launch's), and a poll of the pending collectives.
// The stale path allocates its reports and messages.
//
// Threading: one Collectives per rank's Device, called from one thread at a
// time (like the communicator under it). Destroy it before its Device; it
// synchronizes the Device first when verdicts are still pending.
#pragma once

#include <taintpool/collective/collective_backend.hpp>
#include <taintpool/collective/communicator.hpp>
#include <taintpool/collective/data_type.hpp>
#include <taintpool/collective/summary.hpp>
#include <taintpool/device/device.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace taintpool {

/// What a collective call tells its caller.
struct CollectiveResult {
  /// The exchange's launch: Ran when the collective was queued (whatever its
  /// outputs carry), Failed when the backend failed the run.
  LaunchResult launch;
  /// Output bytes known stale when the call returned (carried, and fed when
  /// the verdict was applied at once).
  std::uint64_t stale_bytes = 0;
  /// The other ranks' verdict arrives at the next synchronize (C5).
  bool verdict_pending = false;
};

/// One rank's collectives (see above).
class Collectives final : private VerdictSource {
 public:
  /// Borrows both; they must outlive it. Throws std::invalid_argument when
  /// the communicator may deliver summaries late and `device` does not run
  /// on a CollectiveBackend (the verdicts would have no way in).
  Collectives(Device& device, Communicator& communicator);
  virtual ~Collectives(); // Virtual: it has virtual functions (VerdictSource's).
  Collectives(const Collectives&) = delete;
  Collectives& operator=(const Collectives&) = delete;
  Collectives(Collectives&&) = delete;
  Collectives& operator=(Collectives&&) = delete;

  [[nodiscard]] int rank() const noexcept { return communicator_.rank(); }
  [[nodiscard]] int size() const noexcept { return communicator_.size(); }

  /// recv = op over every rank of send, element by element. send and recv
  /// have the same size (a whole number of elements); they may be the same
  /// binding (in place). Bad sizes throw Exception(InvalidBinding) before
  /// anything starts; so does a binding the Device refuses.
  CollectiveResult all_reduce(StreamId stream, std::string_view name, const Binding& send,
                              const Binding& recv, DataType type, ReduceOp op);
  /// recv = every rank's send, in rank order: recv is size() times send.
  CollectiveResult all_gather(StreamId stream, std::string_view name, const Binding& send,
                              const Binding& recv, DataType type);
  /// recv = block rank() of op over every rank of send: send is size() times recv.
  CollectiveResult reduce_scatter(StreamId stream, std::string_view name, const Binding& send,
                                  const Binding& recv, DataType type, ReduceOp op);
  /// recv = the root's send on every rank (the root's send and recv may be
  /// the same binding; other ranks' send is ignored and may be recv).
  CollectiveResult broadcast(StreamId stream, std::string_view name, const Binding& send,
                             const Binding& recv, DataType type, int root);
  /// The sending half of a pair: `peer` receives send.
  CollectiveResult send(StreamId stream, std::string_view name, const Binding& send, DataType type,
                        int peer);
  /// The receiving half: recv = `peer`'s send (same size).
  CollectiveResult recv(StreamId stream, std::string_view name, const Binding& recv, DataType type,
                        int peer);

  /// Collectives whose verdict has not been applied yet.
  [[nodiscard]] std::size_t pending() const noexcept { return pending_.size(); }

 private:
  struct Call {
    CollectiveKind kind;
    std::string_view name;
    const Binding* send;
    const Binding* recv;
    DataType type;
    ReduceOp op;
    int peer;
  };
  struct Pending {
    std::uint64_t launch;
    Ticket ticket;
    CollectiveShape shape;
  };

  CollectiveResult run(StreamId stream, const Call& call);
  /// N2 under UnwrittenReads::Report: the stale input bytes less those the
  /// memory's NeverWritten failure claims, which are appended to
  /// `unwritten` (allocation-relative, for LaunchResult::unwritten)
  /// instead. `stale` itself when none are (no copy), else a view of
  /// `kept`. Under Skip, `stale` unchanged.
  [[nodiscard]] std::span<const StaleInput>
  reported_unwritten(std::span<const StaleInput> stale, const Binding& send,
                     std::vector<UnwrittenRead>& unwritten, std::vector<StaleInput>& kept) const;
  [[nodiscard]] CollectiveShape shape_of(const Call& call) const;
  std::vector<Pending>::iterator find(std::uint64_t launch);

  // VerdictSource
  [[nodiscard]] bool landed_clean(std::uint64_t launch) override;
  void wait_all() override;
  [[nodiscard]] std::optional<LateFailure> verdict(std::uint64_t launch) override;

  Device& device_;
  Communicator& communicator_;
  CollectiveBackend* verdicts_; ///< The Device's backend, when it is one.
  std::vector<Pending> pending_;
  std::string kernel_;     ///< Scratch: "all_reduce(grads) on rank 1".
  TaintSummary summary_{}; ///< Scratch: this rank's summary.
};

} // namespace taintpool
