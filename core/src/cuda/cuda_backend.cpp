#include <taintpool/cuda/cuda_backend.hpp>
#include <taintpool/exception.hpp>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <limits>
#include <stdexcept>
#include <utility>

#include "cuda_error.hpp"

namespace taintpool::cuda {

using detail::describe;
using detail::is_sticky;

int device_count(std::string* why) noexcept {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    if (why != nullptr) {
      try {
        *why = describe(error);
      } catch (...) {
      }
    }
    return 0;
  }
  if (count == 0 && why != nullptr) {
    try {
      *why = "the CUDA runtime sees no device";
    } catch (...) {
    }
  }
  return count;
}

namespace {

MemoryConfig default_config(const CudaBackendOptions& options) {
  if (options.memory) {
    return *options.memory;
  }
  MemoryConfig config;
  config.alignment = options.alignment;
  return config;
}

bool regions_wanted(SanitizerRegions choice) noexcept {
  switch (choice) {
  case SanitizerRegions::On:
    return true;
  case SanitizerRegions::Off:
    return false;
  case SanitizerRegions::Auto:
    break;
  }
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read once per backend.
  if (const char* asked = std::getenv("TAINTPOOL_SANITIZER_REGIONS")) {
    return std::strcmp(asked, "0") != 0 && std::strcmp(asked, "off") != 0;
  }
  return running_under_sanitizer();
}

[[noreturn]] void unusable(int device, const char* what, cudaError_t error) {
  static_cast<void>(cudaGetLastError());
  throw Exception(Error::generic("cuda device " + std::to_string(device) + ": " + what +
                                 " failed: " + describe(error)));
}

} // namespace

CudaBackend::CudaBackend(CudaBackendOptions options)
    : options_(std::move(options))
    , config_(default_config(options_)) {
  if (options_.alignment != 256 && options_.alignment != 512) {
    throw std::invalid_argument("CudaBackend: alignment " + std::to_string(options_.alignment) +
                                " is not 256 or 512");
  }
  start();
  try {
    owned_storage_ = std::make_unique<CudaStorage>(
        CudaStorageOptions{options_.device, options_.alignment, options_.stream_ordered_storage,
                           options_.stream_ordered_storage ? stream_ : nullptr});
  } catch (...) {
    release();
    throw;
  }
  storage_ = owned_storage_.get();
  try {
    describe_to_sanitizer();
  } catch (...) {
    owned_storage_.reset();
    release();
    throw;
  }
}

CudaBackend::CudaBackend(Storage& storage, CudaBackendOptions options)
    : options_(std::move(options))
    , storage_(&storage)
    , config_(default_config(options_)) {
  start();
  try {
    describe_to_sanitizer();
  } catch (...) {
    release();
    throw;
  }
}

void CudaBackend::describe_to_sanitizer() {
  // A config that names an observer already keeps it: one observer a manager.
  // Auto leaves stream-ordered storage alone: compute-sanitizer refuses
  // cudaMallocAsync memory as an NVTX heap ("one or more of the parameters
  // is invalid", seen on the H200), so regions there only add warnings.
  const bool refused =
      options_.sanitizer_regions == SanitizerRegions::Auto && options_.stream_ordered_storage;
  if (config_.observer == nullptr && !refused && regions_wanted(options_.sanitizer_regions)) {
    regions_ = std::make_unique<NvtxRegions>();
    config_.observer = regions_.get();
  }
}

void CudaBackend::start() {
  if (options_.status_words < kStatusHeaderWords + 1) {
    throw std::invalid_argument("CudaBackend: status_words must be at least " +
                                std::to_string(kStatusHeaderWords + 1));
  }
  // The backend's device stays current on this thread: bodies launch on it.
  if (const cudaError_t error = cudaSetDevice(options_.device); error != cudaSuccess) {
    unusable(options_.device, "cudaSetDevice", error);
  }
  cudaDeviceProp properties{};
  if (const cudaError_t error = cudaGetDeviceProperties(&properties, options_.device);
      error != cudaSuccess) {
    unusable(options_.device, "cudaGetDeviceProperties", error);
  }
  name_ = "cuda device " + std::to_string(options_.device) + " (" + properties.name + ")";
  try {
    if (options_.stream != nullptr) {
      stream_ = options_.stream;
    } else {
      cudaStream_t stream = nullptr;
      if (const cudaError_t error = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
          error != cudaSuccess) {
        unusable(options_.device, "cudaStreamCreateWithFlags", error);
      }
      stream_ = stream;
      owns_stream_ = true;
    }
    const std::size_t bytes = std::size_t{options_.status_words} * sizeof(std::uint32_t);
    void* device_words = nullptr;
    if (const cudaError_t error = cudaMalloc(&device_words, bytes); error != cudaSuccess) {
      unusable(options_.device, "cudaMalloc of the status-slot arena", error);
    }
    status_device_ = static_cast<std::uint32_t*>(device_words);
    void* host_words = nullptr;
    if (const cudaError_t error = cudaMallocHost(&host_words, bytes); error != cudaSuccess) {
      unusable(options_.device, "cudaMallocHost of the status-slot mirror", error);
    }
    status_host_ = static_cast<std::uint32_t*>(host_words);
    cudaError_t error = cudaMemsetAsync(status_device_, 0, bytes, stream_);
    if (error == cudaSuccess) {
      error = cudaStreamSynchronize(stream_);
    }
    if (error != cudaSuccess) {
      unusable(options_.device, "clearing the status-slot arena", error);
    }
    checks_.reserve(64);
    set_may_hold_unconfirmed(false); // Nothing checked yet (backend.hpp).
  } catch (...) {
    release();
    throw;
  }
}

void CudaBackend::release() noexcept {
  if (stream_ != nullptr) {
    static_cast<void>(cudaStreamSynchronize(stream_));
  }
  for (void* event : free_events_) {
    static_cast<void>(cudaEventDestroy(static_cast<cudaEvent_t>(event)));
  }
  free_events_.clear();
  if (status_device_ != nullptr) {
    static_cast<void>(cudaFree(status_device_));
    status_device_ = nullptr;
  }
  if (status_host_ != nullptr) {
    static_cast<void>(cudaFreeHost(status_host_));
    status_host_ = nullptr;
  }
  if (owns_stream_ && stream_ != nullptr) {
    static_cast<void>(cudaStreamDestroy(stream_));
  }
  stream_ = nullptr;
  owns_stream_ = false;
  // A poisoned context fails all of the above; that must not leak into the
  // caller's next runtime call.
  static_cast<void>(cudaGetLastError());
}

CudaBackend::~CudaBackend() {
  release();
}

// ------------------------------------------------------------ errors

std::string CudaBackend::note(int code, const char* where) {
  const auto error = static_cast<cudaError_t>(code);
  bool sticky = is_sticky(error);
  if (!sticky && stream_ != nullptr) {
    // Not a documented sticky error; still, if the stream no longer
    // answers, nothing more can run on this context.
    const cudaError_t probe = cudaStreamQuery(stream_);
    if (probe != cudaSuccess && probe != cudaErrorNotReady) {
      static_cast<void>(cudaGetLastError());
      sticky = true;
    }
  }
  if (sticky && !poison_) {
    poison_with(code, where);
  }
  return describe(error);
}

void CudaBackend::poison_with(int code, const char* where) {
  poison_ = Error::launch(
      name_ + " is unusable: " + describe(static_cast<cudaError_t>(code)) + ", first seen " +
      where +
      ". This sticky error poisons the whole CUDA context: the faulting launch cannot be "
      "named, every byte of device memory is lost, every launch not yet confirmed is reported "
      "failed, and nothing more runs on this backend. Destroy the Device and the backend; the "
      "GPU is usable again only after cudaDeviceReset() or a new process");
}

Error CudaBackend::refusal() const {
  return Error::launch("not run: " + poison_->message());
}

// ------------------------------------------------------------ launches

LaunchOutcome CudaBackend::run(KernelBody body, const KernelContext& context) {
  if (poison_) [[unlikely]] {
    return LaunchOutcome::failure(refusal());
  }
  if (raw_bodies_) {
    // A body that launches with <<<>>> is judged by the runtime's last
    // error: a non-sticky error left pending by earlier, unrelated runtime
    // calls must not be blamed on it; a sticky one poisons us before we
    // start. (Skipped while bodies launch through cuda::launch.)
    if (const cudaError_t stale = cudaGetLastError(); stale != cudaSuccess) {
      static_cast<void>(note(stale, "before a launch"));
      if (poison_) {
        return LaunchOutcome::failure(refusal());
      }
    }
  }
  owned_launches_ = 0;
  owned_error_ = 0;
  LaunchOutcome outcome = body(context);
  cudaError_t error = cudaSuccess;
  if (owned_launches_ != 0) [[likely]] {
    // Every launch told us its status: no runtime call.
    raw_bodies_ = false;
    error = static_cast<cudaError_t>(owned_error_);
    if (error != cudaSuccess) [[unlikely]] {
      static_cast<void>(cudaGetLastError()); // The failed launch left it pending too.
    }
  } else {
    raw_bodies_ = true;
    error = cudaGetLastError();
  }
  if (error == cudaSuccess && !poison_) [[likely]] {
    if (!outcome.ok()) {
      forget_checks(context.launch()); // It failed already; its slot says nothing more.
    }
    return outcome;
  }
  forget_checks(context.launch());
  if (error == cudaSuccess) {
    return LaunchOutcome::failure(refusal()); // Poisoned while the body ran (an early drain).
  }
  // Conservative: whatever the body said it wrote, a launch the runtime
  // refused wrote nothing we can vouch for.
  std::string text = note(error, "when a kernel was launched");
  if (poison_) {
    text += "; " + poison_->message();
  }
  return LaunchOutcome::failure(Error::launch(std::move(text) + " (at launch, on " + name_ + ")"));
}

KernelStatus CudaBackend::checked(const KernelContext& context,
                                  std::span<const std::uint64_t> tile_bytes) {
  if (tile_bytes.size() != context.writes()) {
    throw std::invalid_argument("CudaBackend::checked: " + std::to_string(tile_bytes.size()) +
                                " tile sizes for a launch with " +
                                std::to_string(context.writes()) + " outputs");
  }
  if (tile_bytes.size() > kMaxCheckedOutputs) {
    throw std::invalid_argument("CudaBackend::checked: a checked launch describes at most " +
                                std::to_string(kMaxCheckedOutputs) + " outputs, not " +
                                std::to_string(tile_bytes.size()));
  }
  if (!checks_.empty() && checks_.back().launch == context.launch()) {
    throw std::logic_error("CudaBackend::checked: called twice for launch " +
                           std::to_string(context.launch()));
  }
  if (poison_) {
    return KernelStatus{};
  }
  // Before a check or an early drain's failure can be held (backend.hpp):
  // from here on the Device asks oldest_unconfirmed_launch() again.
  set_may_hold_unconfirmed(true);
  PendingCheck check;
  check.launch = context.launch();
  check.outputs = static_cast<std::uint32_t>(tile_bytes.size());
  std::uint64_t tiles = 0;
  for (std::uint32_t output = 0; output < check.outputs; ++output) {
    const std::uint64_t size = context.write_binding(output).range.size();
    const std::uint64_t tile = tile_bytes[output] == 0 ? size : tile_bytes[output];
    check.first_tile[output] = static_cast<std::uint32_t>(tiles);
    check.tile_bytes[output] = tile;
    check.output_bytes[output] = size;
    tiles += size == 0 ? 0 : size / tile + (size % tile != 0 ? 1 : 0);
    if (tiles > std::numeric_limits<std::uint32_t>::max() - 64) {
      throw std::length_error("CudaBackend::checked: more than 2^32 tiles in one launch");
    }
  }
  for (std::uint32_t output = check.outputs; output <= kMaxCheckedOutputs; ++output) {
    check.first_tile[output] = static_cast<std::uint32_t>(tiles);
  }
  check.tiles = static_cast<std::uint32_t>(tiles);
  const std::uint64_t words = kStatusHeaderWords + (tiles + 31) / 32;
  if (words > options_.status_words) {
    throw std::length_error(
        "CudaBackend::checked: a launch of " + std::to_string(tiles) + " tiles needs " +
        std::to_string(words) + " status words; the arena holds " +
        std::to_string(options_.status_words) + " (CudaBackendOptions::status_words)");
  }
  if (used_ + words > options_.status_words) {
    // Full: read what is there now; its failures wait in pending_ for the
    // Device's next synchronize().
    ++early_drains_;
    collect(pending_);
    if (poison_) {
      return KernelStatus{};
    }
  }
  check.offset = used_;
  used_ += static_cast<std::uint32_t>(words);
  checks_.push_back(check);

  KernelStatus status;
  status.words = status_device_ + check.offset;
  status.tiles = check.tiles;
  std::copy(std::begin(check.first_tile), std::end(check.first_tile),
            std::begin(status.first_tile));
  return status;
}

void CudaBackend::forget_checks(std::uint64_t launch) noexcept {
  // Only the newest check can belong to the launch that is running.
  if (!checks_.empty() && checks_.back().launch == launch) {
    checks_.pop_back();
    refresh_may_hold_unconfirmed();
  }
}

// ------------------------------------------------------------ synchronisation

std::optional<std::uint64_t> CudaBackend::oldest_unconfirmed_launch() const noexcept {
  // Early-drained failures are older than every check still in the arena.
  if (!pending_.empty()) {
    return pending_.front().launch;
  }
  if (!checks_.empty()) {
    return checks_.front().launch;
  }
  return std::nullopt;
}

std::vector<LateFailure> CudaBackend::synchronize() {
  // Allocates nothing when nothing failed (every Device read calls this):
  // an empty vector owns no memory, and pending_, filled only by an early
  // drain, is handed over whole.
  std::vector<LateFailure> failures;
  failures.swap(pending_);
  collect(failures);
  refresh_may_hold_unconfirmed();
  return failures;
}

void CudaBackend::fail_unconfirmed(std::vector<LateFailure>& into, const Error& why) {
  for (const PendingCheck& check : checks_) {
    into.push_back(
        LateFailure{check.launch, Error::launch("its outputs are unknown: " + why.message()), {}});
  }
  checks_.clear();
  used_ = 0;
  // may_hold_unconfirmed() is not refreshed here but by the callers that end
  // a holding period (synchronize): an early drain in checked() reaches here
  // with the flag set for the check it is about to hold, and a refresh with
  // nothing failed and nothing pending would clear it under that check.
}

void CudaBackend::collect(std::vector<LateFailure>& into) {
  if (poison_) {
    fail_unconfirmed(into, *poison_);
    return;
  }
  // Checked kernels may run on any of our streams: wait for each of them
  // (not the whole device: other backends' work is none of ours).
  auto error = static_cast<cudaError_t>(finish_streams());
  if (error == cudaSuccess && used_ != 0) {
    error =
        cudaMemcpyAsync(status_host_, status_device_, std::size_t{used_} * sizeof(std::uint32_t),
                        cudaMemcpyDeviceToHost, stream_);
    if (error == cudaSuccess) {
      error = cudaStreamSynchronize(stream_);
    }
  }
  if (error != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    const std::string text = note(error, "when the stream was synchronised");
    // Poisoned or not, the slots cannot be trusted: every unconfirmed
    // launch fails with no written ranges.
    fail_unconfirmed(into, poison_ ? *poison_
                                   : Error::launch(text + " when the stream was synchronised"));
    return;
  }
  for (const PendingCheck& check : checks_) {
    if (std::optional<LateFailure> failure = verdict(check)) {
      into.push_back(std::move(*failure));
    }
  }
  checks_.clear();
  if (used_ != 0) {
    // Waited for, so the next slots start clean before a kernel on any
    // stream can write them.
    error = cudaMemsetAsync(status_device_, 0, std::size_t{used_} * sizeof(std::uint32_t), stream_);
    if (error == cudaSuccess) {
      error = cudaStreamSynchronize(stream_);
    }
    if (error != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      static_cast<void>(note(error, "when the status slots were cleared"));
    }
    used_ = 0;
  }
}

int CudaBackend::finish_streams() noexcept {
  cudaError_t first = cudaStreamSynchronize(stream_);
  for (Stream stream : created_streams_) {
    const cudaError_t error = cudaStreamSynchronize(stream);
    if (first == cudaSuccess) {
      first = error;
    }
  }
  return static_cast<int>(first);
}

std::optional<LateFailure> CudaBackend::verdict(const PendingCheck& check) const {
  const std::uint32_t* words = status_host_ + check.offset;
  const std::uint32_t code = words[0];
  const std::uint32_t bad_marks = words[1];
  const std::uint32_t* bits = words + kStatusHeaderWords;
  const auto done = [&](std::uint32_t tile) {
    return ((bits[tile / 32] >> (tile % 32)) & 1u) != 0;
  };
  std::uint64_t finished = 0;
  for (std::uint32_t word = 0; word < (check.tiles + 31) / 32; ++word) {
    std::uint32_t value = bits[word];
    if (word == check.tiles / 32 && check.tiles % 32 != 0) {
      value &= (1u << (check.tiles % 32)) - 1u;
    }
    finished += static_cast<std::uint64_t>(std::popcount(value));
  }
  if (code == 0 && bad_marks == 0 && finished == check.tiles) {
    return std::nullopt;
  }
  std::string message = code != 0
                            ? "the checked kernel reported failure code " + std::to_string(code)
                            : std::string("the checked kernel left tiles unmarked");
  message +=
      "; " + std::to_string(finished) + " of " + std::to_string(check.tiles) + " tiles finished";
  if (bad_marks != 0) {
    message += "; " + std::to_string(bad_marks) + " tile marks named no tile of their output";
  }
  LateFailure failure{check.launch, Error::launch(std::move(message)), {}};
  // S2: each run of finished tiles of an output is one written range.
  for (std::uint32_t output = 0; output < check.outputs; ++output) {
    const std::uint32_t first = check.first_tile[output];
    const std::uint32_t count = check.first_tile[output + 1] - first;
    std::uint32_t tile = 0;
    while (tile < count) {
      if (!done(first + tile)) {
        ++tile;
        continue;
      }
      const std::uint32_t begin = tile;
      while (tile < count && done(first + tile)) {
        ++tile;
      }
      const std::uint64_t from = std::uint64_t{begin} * check.tile_bytes[output];
      const std::uint64_t to =
          std::min(std::uint64_t{tile} * check.tile_bytes[output], check.output_bytes[output]);
      failure.written.push_back(WrittenRange{output, ByteRange::of(from, to)});
    }
  }
  return failure;
}

// ------------------------------------------------------------ copies

std::optional<Error> CudaBackend::copy_in(StreamHandle stream, std::byte* to, const std::byte* from,
                                          std::size_t bytes) {
  if (poison_) {
    return refusal();
  }
  if (bytes == 0) {
    return std::nullopt;
  }
  auto* queue = static_cast<cudaStream_t>(stream);
  cudaError_t error = cudaMemcpyAsync(to, from, bytes, cudaMemcpyHostToDevice, queue);
  if (error == cudaSuccess) {
    error = cudaStreamSynchronize(queue); // The host span may go away when we return.
  }
  if (error != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    std::string text = note(error, "when copying to the device");
    if (poison_) {
      text += "; " + poison_->message();
    }
    return Error::launch("copying " + std::to_string(bytes) + " bytes to " + name_ +
                         " failed: " + text);
  }
  return std::nullopt;
}

std::optional<Error> CudaBackend::copy_out(StreamHandle stream, std::byte* to,
                                           const std::byte* from, std::size_t bytes) {
  if (poison_) {
    return Error::launch("cannot read: " + poison_->message());
  }
  if (bytes == 0) {
    return std::nullopt;
  }
  // Queued after every write to the bytes (the Device ordered the stream),
  // then waited for.
  auto* queue = static_cast<cudaStream_t>(stream);
  cudaError_t error = cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToHost, queue);
  if (error == cudaSuccess) {
    error = cudaStreamSynchronize(queue);
  }
  if (error != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    std::string text = note(error, "when copying to the host");
    if (poison_) {
      text += "; " + poison_->message();
    }
    return Error::launch("copying " + std::to_string(bytes) + " bytes from " + name_ +
                         " failed: " + text);
  }
  return std::nullopt;
}

// ------------------------------------------------------------ streams and events

namespace {
[[noreturn]] void stream_error(const std::string& backend, const char* what, cudaError_t error) {
  static_cast<void>(cudaGetLastError());
  throw Exception(Error::launch(backend + ": " + what + " failed: " + describe(error)));
}
} // namespace

StreamHandle CudaBackend::create_stream() {
  if (poison_) {
    throw Exception(refusal());
  }
  created_streams_.reserve(created_streams_.size() + 1); // Before the stream exists.
  // On the backend's device, whichever thread asks (O5).
  const detail::DeviceGuard guard(options_.device);
  cudaStream_t stream = nullptr;
  cudaError_t error = guard.error();
  if (error == cudaSuccess) {
    error = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  }
  if (error != cudaSuccess) {
    static_cast<void>(note(error, "when a stream was created"));
    stream_error(name_, "cudaStreamCreateWithFlags", error);
  }
  created_streams_.push_back(stream);
  return stream;
}

void CudaBackend::destroy_stream(StreamHandle stream) noexcept {
  auto* queue = static_cast<cudaStream_t>(stream);
  std::erase(created_streams_, queue);
  static_cast<void>(cudaStreamSynchronize(queue));
  static_cast<void>(cudaStreamDestroy(queue));
  static_cast<void>(cudaGetLastError());
}

EventHandle CudaBackend::record(StreamHandle stream) {
  if (poison_) {
    throw Exception(refusal());
  }
  cudaEvent_t event = nullptr;
  if (!free_events_.empty()) {
    event = static_cast<cudaEvent_t>(free_events_.back());
    free_events_.pop_back();
  } else {
    // Made on the backend's device, whichever thread asks (O5); only until
    // the pool is warm.
    const detail::DeviceGuard guard(options_.device);
    if (const cudaError_t error = guard.error() != cudaSuccess
                                      ? guard.error()
                                      : cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
        error != cudaSuccess) {
      static_cast<void>(note(error, "when an event was created"));
      stream_error(name_, "cudaEventCreateWithFlags", error);
    }
    ++events_created_;
  }
  if (const cudaError_t error = cudaEventRecord(event, static_cast<cudaStream_t>(stream));
      error != cudaSuccess) {
    release(event);
    static_cast<void>(note(error, "when an event was recorded"));
    stream_error(name_, "cudaEventRecord", error);
  }
  return event;
}

void CudaBackend::wait(StreamHandle waiter, EventHandle event) {
  if (const cudaError_t error = cudaStreamWaitEvent(static_cast<cudaStream_t>(waiter),
                                                    static_cast<cudaEvent_t>(event), 0);
      error != cudaSuccess) {
    static_cast<void>(note(error, "when a stream was made to wait"));
    stream_error(name_, "cudaStreamWaitEvent", error);
  }
}

bool CudaBackend::done(EventHandle event) noexcept {
  const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (status == cudaErrorNotReady) {
    return false;
  }
  if (status != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    try {
      static_cast<void>(note(status, "when an event was queried"));
    } catch (...) {
    }
  }
  return true; // Complete, or broken: nothing will run after it anyway.
}

void CudaBackend::release(EventHandle event) noexcept {
  try {
    free_events_.push_back(event);
  } catch (...) {
    static_cast<void>(cudaEventDestroy(static_cast<cudaEvent_t>(event)));
  }
}

void CudaBackend::finish(StreamHandle stream) {
  if (const cudaError_t error = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
      error != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    static_cast<void>(note(error, "when a stream was waited for"));
    // Poisoned or not, the work is over as far as the host can tell: the
    // Device's next synchronize() reports what failed.
  }
}

} // namespace taintpool::cuda
