// CudaBackend: the Device's scopes on an NVIDIA GPU (§3.6; S1–S5, D1–D2).
//
// The scope logic stays in Device; this backend supplies what differs on a
// GPU, mirroring HostBackend:
//
//   storage    a CudaStorage (cudaMalloc pages, or cudaMallocAsync on the
//              backend's stream), or any Storage the caller wraps around one
//              (FaultInjectingStorage, CountingStorage);
//   run        calls the body — which launches kernels on stream_of(context),
//              with the device pointers the context's bindings hold — and
//              turns any launch error into LaunchOutcome::failure(Error::
//              launch(...)), so it taints the write set (S1): an invalid
//              configuration, too many resources requested, no kernel image
//              for the device, a failed staging cudaMallocAsync. A body that
//              launches through cuda::launch (kernel_launch.hpp) hands the
//              backend each launch's status, and run() asks the runtime
//              nothing; a body that launches with <<<>>> is checked through
//              the runtime's last error, cleared before the body (so an
//              unrelated earlier failure is not blamed on this launch) and
//              read after it. The error text names the runtime error as the
//              runtime names it ("cudaErrorLaunchOutOfResources (too many
//              resources requested for launch)"; CUDA 13.0 calls a block of
//              2048 threads cudaErrorInvalidValue);
//   copies     copy_in: host-to-device on the stream, then synchronise (the
//              host span may go away when it returns); copy_out: the same,
//              device-to-host, after everything queued before it. A runtime
//              error is returned as an Error: a failed host write taints its
//              binding, a failed read throws (Device::read).
//
// Checked kernels. A kernel cannot return an error, so a body that wants its
// kernel's verdict asks checked(context, tile_bytes) for a KernelStatus — a
// status slot in device memory plus the tile layout of each output — and
// passes it to the kernel, which marks tiles finished and may report a
// failure code (kernel_status.cuh). The launch is then *unconfirmed*: the
// Device logs it and what runs after it. synchronize() waits for the stream,
// copies every used slot back in one transfer, and returns a LateFailure for
// each checked launch that reported a failure or left a tile unmarked, with
// the marked tiles as its written ranges (S2). The Device attributes each to
// the launch's unfinished bytes and to every launch that consumed them since
// (skip records with `ran` set), exactly as on DeferredHostBackend. Slots
// live in one bump arena (status_words); a launch that does not fit makes
// the backend drain early — synchronise and read the slots now, keeping the
// failures for the next synchronize().
//
// What cannot be attributed: a *sticky* error (an illegal address, a device
// assert, a kernel that faulted — cudaErrorIllegalAddress and the others
// driver_types.h says leave "the process in an inconsistent state") poisons
// the whole CUDA context. The runtime does not say which launch faulted and
// every byte of device memory is lost. From the moment the backend sees one
// — after a launch, at a copy, or at synchronisation:
//   * every launch still unconfirmed (checked, not yet synchronised) is
//     reported failed with the poison error and *no* written ranges, so its
//     whole write set and everything downstream of it is tainted;
//   * unchecked launches were confirmed when they were queued, so their
//     outputs are not re-tainted — but no byte can be read any more:
//     copy_out refuses, so Device::read throws Exception with the poison
//     error instead of returning bytes (D1 holds: nothing garbage escapes);
//   * run() refuses further work — it returns a failure without calling the
//     body — and copy_in fails, so every later output carries the poison;
//   * poisoned() and poison() say so. Destroy the Device, then the backend;
//     the GPU is usable again only after the process calls
//     cudaDeviceReset() (or exits). The backend never resets anything.
//
// Cost. run() around a body that launches through cuda::launch is a few
// compares: no runtime call beyond the launch itself. Around a <<<>>> body it
// adds two cudaGetLastError() calls, ~50 ns together on an H200 host (about
// 1% of the ~4 us an empty kernel's launch costs there, bench/RESULTS.md,
// "GPU"). An unchecked launch is confirmed when queued, so the Device keeps
// no log for it. checked() is a bump in the arena and one record, no
// allocation once warm; synchronize() with checked launches pending adds one
// device-to-host copy of the used slots and one memset.
//
// Streams and events (QueueBackend). The backend's own stream is the
// Device's default stream; create_stream() makes non-blocking streams on the
// backend's device; events come from a pool of cudaEvent_t created with
// timing disabled and reused once given back, so a warm Device creates none
// (events_created() stays flat). A body launches on stream_of(context), the
// launch's stream: the Device has already made that stream wait for every
// conflicting access on the others (O1), and pool reuse is stream-ordered
// (O3). Checked kernels may run on any of the backend's streams:
// synchronize() and an early drain wait for every one of them (and only
// them: other work in the process, another backend's streams included, is
// not waited for) before the status slots are read, and the slots are
// cleared before any later kernel can write them.
//
// Threading: the Device calls the backend under its lock, and bodies run
// under it, so the backend is used by one thread at a time, whichever thread
// that is (O5). Every thread that drives it must have the backend's device
// current (device 0 is every thread's default; the constructor makes
// options.device current on its own thread; streams are created on the
// backend's device whatever is current).
#pragma once

#include <taintpool/cuda/cuda_storage.hpp>
#include <taintpool/cuda/kernel_status.hpp>
#include <taintpool/cuda/nvtx_regions.hpp>
#include <taintpool/device/backend.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace taintpool::cuda {

/// Whether a CudaBackend describes its pools to compute-sanitizer through
/// NVTX memory regions (nvtx_regions.hpp).
enum class SanitizerRegions {
  /// On when the process runs under compute-sanitizer
  /// (running_under_sanitizer()) or TAINTPOOL_SANITIZER_REGIONS=1 is set;
  /// TAINTPOOL_SANITIZER_REGIONS=0 turns it off. Off otherwise: free.
  Auto,
  On,  ///< Always (NVTX calls are near-free without a tool attached).
  Off, ///< Never: the sanitizers see whole pages, as before.
};

/// How a CudaBackend is built; checked by its constructor.
struct CudaBackendOptions {
  int device = 0; ///< The CUDA device to run on; made current by the constructor.
  /// Launch on this stream (borrowed; it must outlive the backend). Null:
  /// the backend creates a non-blocking stream of its own.
  Stream stream = nullptr;
  /// Pages from cudaMallocAsync on the stream instead of cudaMalloc.
  bool stream_ordered_storage = false;
  /// Page and allocation alignment: 256 or 512.
  std::uint64_t alignment = 256;
  /// The pools' configuration; default: MemoryConfig{} at `alignment`.
  std::optional<MemoryConfig> memory;
  /// Capacity of the status-slot arena, in 32-bit words (each checked launch
  /// takes 2 + one bit per tile); held twice, in device and pinned memory.
  std::uint32_t status_words = 1u << 20;
  /// NVTX regions for compute-sanitizer (see SanitizerRegions). When on,
  /// memory_config() names the backend's NvtxRegions as its observer,
  /// unless `memory` already names one. A Device given a MemoryConfig of
  /// its own (DeviceOptions::memory) uses that config's observer instead.
  /// Auto stays off with stream_ordered_storage: compute-sanitizer does not
  /// accept cudaMallocAsync memory as an NVTX heap.
  SanitizerRegions sanitizer_regions = SanitizerRegions::Auto;
};

/// How many CUDA devices this process can use; 0, with `why` set to the
/// runtime's reason, when none (no driver, no GPU). Never throws.
[[nodiscard]] int device_count(std::string* why = nullptr) noexcept;

class CudaBackend final : public Backend {
 public:
  /// Owns a CudaStorage on options.device (stream-ordered on the backend's
  /// stream if asked). Makes options.device current. Throws Exception
  /// (kind Generic) when the device cannot be used; std::invalid_argument
  /// for bad options.
  explicit CudaBackend(CudaBackendOptions options = {});
  /// Uses `storage` (it must outlive the backend and every Device on it, and
  /// give memory of options.device usable on the backend's stream).
  CudaBackend(Storage& storage, CudaBackendOptions options);
  /// Waits for the stream; frees the slots; destroys a stream it created.
  /// Destroy every Device on the backend first.
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  [[nodiscard]] Storage& storage() override { return *storage_; }
  [[nodiscard]] MemoryConfig memory_config() const override { return config_; }
  /// The NVTX regions the pools are described with, or null when
  /// options.sanitizer_regions left them off.
  [[nodiscard]] const NvtxRegions* sanitizer_regions() const noexcept { return regions_.get(); }
  /// "cuda device 0 (NVIDIA H200)".
  [[nodiscard]] std::string name() const override { return name_; }

  /// Calls the body and turns a launch error it caused into a failure (see
  /// above); on a poisoned backend, refuses without calling the body. No
  /// runtime call around a body that launches through cuda::launch; two
  /// cudaGetLastError calls around one that launches with <<<>>>.
  LaunchOutcome run(KernelBody body, const KernelContext& context) override;

  /// For cuda::launch (kernel_launch.hpp), from inside a body: one launch
  /// was made through the backend and returned `status` (a cudaError_t).
  /// A failed status makes the running launch fail (S1). A body that queues
  /// other work through the runtime (cudaMemcpyAsync, a library's call) may
  /// report that call's status here too: its error then fails the launch
  /// just the same, and run() asks the runtime nothing.
  void launched(int status) noexcept {
    ++owned_launches_;
    if (status != 0 && owned_error_ == 0) [[unlikely]] {
      owned_error_ = status;
    }
  }
  /// Host-to-device on the stream, then waits for it (the host span may go
  /// away on return). A runtime error, or poison, is returned, not thrown.
  [[nodiscard]] std::optional<Error> copy_in(StreamHandle stream, std::byte* to,
                                             const std::byte* from, std::size_t bytes) override;
  /// Device-to-host on the stream, after everything queued before it, then
  /// waits. Refuses on a poisoned backend, so no garbage escapes (D1).
  [[nodiscard]] std::optional<Error> copy_out(StreamHandle stream, std::byte* to,
                                              const std::byte* from, std::size_t bytes) override;

  /// QueueBackend over cudaStream_t and pooled cudaEvent_t (see above).
  /// Runtime errors throw Exception (and may poison the backend).
  [[nodiscard]] StreamHandle default_stream() noexcept override { return stream_; }
  [[nodiscard]] StreamHandle create_stream() override;
  void destroy_stream(StreamHandle stream) noexcept override;
  [[nodiscard]] EventHandle record(StreamHandle stream) override;
  void wait(StreamHandle waiter, EventHandle event) override;
  [[nodiscard]] bool done(EventHandle event) noexcept override;
  void release(EventHandle event) noexcept override;
  void finish(StreamHandle stream) override;
  /// No: kernels run after their launch returns.
  [[nodiscard]] bool synchronous() const noexcept override { return false; }
  /// cudaEvent_t created so far (a warm Device creates no more).
  [[nodiscard]] std::size_t events_created() const noexcept { return events_created_; }
  /// The backend itself: what cuda::launch and checked() find it by
  /// (cuda::backend_of). The launch's stream is stream_of(context).
  [[nodiscard]] void* backend_data() noexcept override { return this; }
  /// Yes: checked kernels report at synchronisation.
  [[nodiscard]] bool reports_late_failures() const noexcept override { return true; }
  /// Waits for every stream of the backend, reads every used status slot in one copy, and
  /// returns the checked launches that failed (plus any an early drain
  /// found), oldest first; on poison, every unconfirmed launch fails with
  /// no written ranges.
  [[nodiscard]] std::vector<LateFailure> synchronize() override;
  /// The oldest checked launch not yet returned by synchronize(), if any.
  [[nodiscard]] std::optional<std::uint64_t> oldest_unconfirmed_launch() const noexcept override;

  /// From inside a body: makes this launch checked and returns the status
  /// slot to pass to its kernel. tile_bytes has one entry per write binding:
  /// the bytes of that output each tile covers (0: the output is one tile);
  /// tile t of output o is bytes [t * tile_bytes[o], min((t + 1) *
  /// tile_bytes[o], size)) of that binding. At most kMaxCheckedOutputs
  /// outputs, once per launch. Throws std::invalid_argument /
  /// std::logic_error / std::length_error for a layout that does not fit
  /// (inside a body: S3). On a poisoned backend it returns an empty status
  /// (the launch is refused anyway).
  [[nodiscard]] KernelStatus checked(const KernelContext& context,
                                     std::span<const std::uint64_t> tile_bytes);
  /// As above, with the tile sizes listed inline.
  [[nodiscard]] KernelStatus checked(const KernelContext& context,
                                     std::initializer_list<std::uint64_t> tile_bytes) {
    return checked(context, std::span<const std::uint64_t>(tile_bytes.begin(), tile_bytes.size()));
  }

  /// The backend's own stream (owned or borrowed): the Device's default
  /// stream. A body launches on stream_of(context), the launch's stream.
  [[nodiscard]] Stream stream() const noexcept { return stream_; }
  /// The CUDA device it runs on.
  [[nodiscard]] int device() const noexcept { return options_.device; }
  /// The owned CudaStorage, or null when the caller passed a storage.
  [[nodiscard]] CudaStorage* cuda_storage() noexcept { return owned_storage_.get(); }
  /// Checked launches not yet confirmed or reported.
  [[nodiscard]] std::size_t unconfirmed_launches() const noexcept {
    return checks_.size() + pending_.size();
  }
  /// Status-arena drains forced by a full arena (diagnostics, tests).
  [[nodiscard]] std::uint64_t early_drains() const noexcept { return early_drains_; }

  /// Whether a sticky error has poisoned the context; poison() says which.
  [[nodiscard]] bool poisoned() const noexcept { return poison_.has_value(); }
  /// The sticky error that poisoned the context, if any.
  [[nodiscard]] const std::optional<Error>& poison() const noexcept { return poison_; }

 private:
  /// A checked launch waiting for its slot to be read.
  struct PendingCheck {
    std::uint64_t launch = 0;
    std::uint32_t offset = 0; ///< First word of its slot in the arena.
    std::uint32_t outputs = 0;
    std::uint32_t tiles = 0;
    std::uint32_t first_tile[kMaxCheckedOutputs + 1] = {};
    std::uint64_t tile_bytes[kMaxCheckedOutputs] = {};
    std::uint64_t output_bytes[kMaxCheckedOutputs] = {};
  };

  void start();
  void release() noexcept;
  /// Installs NvtxRegions as config_.observer if options_ ask for it.
  void describe_to_sanitizer();
  /// Records a runtime error seen `where`; poisons the backend if it is
  /// sticky or the stream no longer answers. Returns the error's text.
  std::string note(int code, const char* where);
  void poison_with(int code, const char* where);
  [[nodiscard]] Error refusal() const;
  void forget_checks(std::uint64_t launch) noexcept;
  /// may_hold_unconfirmed() made exact again (backend.hpp): after a check
  /// or a held failure went.
  void refresh_may_hold_unconfirmed() noexcept {
    set_may_hold_unconfirmed(!checks_.empty() || !pending_.empty());
  }
  /// Waits for every stream of the backend; the first error, if any.
  [[nodiscard]] int finish_streams() noexcept;
  /// Waits for the streams, reads every used slot, turns the failures into
  /// LateFailures appended to `into`, and empties the arena.
  void collect(std::vector<LateFailure>& into);
  void fail_unconfirmed(std::vector<LateFailure>& into, const Error& why);
  [[nodiscard]] std::optional<LateFailure> verdict(const PendingCheck& check) const;

  CudaBackendOptions options_;
  std::unique_ptr<CudaStorage> owned_storage_;
  Storage* storage_ = nullptr;
  /// config_.observer when the pools are described to compute-sanitizer.
  std::unique_ptr<NvtxRegions> regions_;
  MemoryConfig config_;
  std::string name_;
  Stream stream_ = nullptr;
  bool owns_stream_ = false;
  std::uint32_t* status_device_ = nullptr; ///< The slot arena.
  std::uint32_t* status_host_ = nullptr;   ///< Pinned mirror the slots are read into.
  std::uint32_t used_ = 0;                 ///< Words of the arena handed out.
  std::vector<PendingCheck> checks_;       ///< Oldest first.
  std::vector<LateFailure> pending_;       ///< Read by an early drain, not yet returned.
  std::uint64_t early_drains_ = 0;
  std::optional<Error> poison_;
  std::vector<void*> free_events_; ///< cudaEvent_t, ready to record.
  std::size_t events_created_ = 0;
  std::vector<Stream> created_streams_; ///< Live streams of create_stream().
  // The body running now: launches made through cuda::launch and the first
  // failed status among them; whether the bodies lately launched raw.
  std::uint32_t owned_launches_ = 0;
  int owned_error_ = 0;
  bool raw_bodies_ = true;
};

/// The stream a body launches on: the launch's stream.
[[nodiscard]] inline Stream stream_of(const KernelContext& context) noexcept {
  return static_cast<Stream>(context.stream_handle());
}

} // namespace taintpool::cuda
