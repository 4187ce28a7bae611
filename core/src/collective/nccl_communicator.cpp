// NcclCommunicator: one NCCL group per call (data and summaries), an event
// behind it, polled to land within a timeout (nccl_communicator.hpp).
#include <taintpool/collective/nccl_communicator.hpp>
#include <taintpool/collective/summary.hpp>
#include <taintpool/exception.hpp>

#include <cstring>
#include <cuda_runtime.h>
#include <thread>

namespace taintpool::cuda {

namespace {

std::string nccl_error(ncclResult_t result) {
  return std::string(ncclGetErrorString(result)) + " (ncclResult_t " +
         std::to_string(static_cast<int>(result)) + ")";
}

std::string cuda_error(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

ncclDataType_t nccl_type(DataType type) {
  switch (type) {
  case DataType::u8:
    return ncclUint8;
  case DataType::i32:
    return ncclInt32;
  case DataType::i64:
    return ncclInt64;
  case DataType::f32:
    return ncclFloat32;
  case DataType::f64:
    return ncclFloat64;
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
  case ReduceOp::sum:
    return ncclSum;
  case ReduceOp::prod:
    return ncclProd;
  case ReduceOp::min:
    return ncclMin;
  case ReduceOp::max:
    return ncclMax;
  }
  return ncclSum;
}

bool gathers(CollectiveKind kind) {
  return kind == CollectiveKind::all_reduce || kind == CollectiveKind::all_gather ||
         kind == CollectiveKind::reduce_scatter;
}

/// Between polls: spin a little (a call usually lands within microseconds),
/// then sleep, so a long wait does not burn a core.
void pause(unsigned& spins) {
  if (++spins > 200) {
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

} // namespace

std::array<char, NCCL_UNIQUE_ID_BYTES> NcclCommunicator::unique_id() {
  ncclUniqueId id;
  if (const ncclResult_t result = ncclGetUniqueId(&id); result != ncclSuccess) {
    throw Exception(Error::communicator("ncclGetUniqueId: " + nccl_error(result)));
  }
  std::array<char, NCCL_UNIQUE_ID_BYTES> bytes{};
  std::memcpy(bytes.data(), id.internal, bytes.size());
  return bytes;
}

NcclCommunicator::NcclCommunicator(const std::array<char, NCCL_UNIQUE_ID_BYTES>& id, int ranks,
                                   int rank, int device, NcclOptions options)
    : options_(options)
    , rank_(rank)
    , size_(ranks)
    , device_(device)
    , slot_bytes_((static_cast<std::size_t>(ranks) + 1) * TaintSummary::bytes) {
  if (const cudaError_t error = cudaSetDevice(device); error != cudaSuccess) {
    throw Exception(Error::communicator(name() + ": cudaSetDevice: " + cuda_error(error)));
  }
  ncclUniqueId unique;
  std::memcpy(unique.internal, id.data(), id.size());
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0; // Polled: a peer that never joins cannot hang us (C6).
  const ncclResult_t result = ncclCommInitRankConfig(&comm_, ranks, unique, rank, &config);
  if (result != ncclSuccess && result != ncclInProgress) {
    throw Exception(
        Error::communicator(name() + ": ncclCommInitRankConfig: " + nccl_error(result)));
  }
  settle("joining the communicator", std::chrono::steady_clock::now() + options_.timeout);
}

NcclCommunicator::~NcclCommunicator() {
  if (!broken_) {
    wait_all();
  }
  if (!broken_) {
    const ncclResult_t result = ncclCommFinalize(comm_);
    try {
      if (result == ncclInProgress || result == ncclSuccess) {
        settle("finalizing", std::chrono::steady_clock::now() + options_.timeout);
      } else {
        abort("ncclCommFinalize: " + nccl_error(result));
      }
    } catch (...) {
      // settle() aborted the communicator: nothing more to release.
    }
    if (!broken_) {
      ncclCommDestroy(comm_);
    }
  }
  for (const Slot& slot : slots_) {
    cudaFreeHost(slot.host);
    if (slot.owns_device) {
      cudaFree(slot.device);
    }
  }
  for (void* event : free_events_) {
    cudaEventDestroy(static_cast<cudaEvent_t>(event));
  }
  for (const auto& [ticket, call] : calls_) {
    cudaEventDestroy(static_cast<cudaEvent_t>(call.event));
  }
}

std::string NcclCommunicator::name() const {
  return "nccl rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " (cuda device " +
         std::to_string(device_) + ")";
}

void NcclCommunicator::abort(const std::string& why) noexcept {
  if (broken_) {
    return;
  }
  try {
    broken_ = Error::communicator(name() + ": " + why +
                                  " (the communicator was aborted and is broken from now on)");
  } catch (...) {
    broken_ = Error(ErrorKind::Communicator, std::string());
  }
  ncclCommAbort(comm_); // Ends its kernels: the streams drain.
  for (auto& [ticket, call] : calls_) {
    if (!call.landed) {
      call.landed = true;
      call.failure = broken_;
    }
  }
}

void NcclCommunicator::fail(const std::string& why) {
  abort(why);
  throw Exception(*broken_);
}

void NcclCommunicator::settle(const char* what, std::chrono::steady_clock::time_point deadline) {
  for (unsigned spins = 0;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t result = ncclCommGetAsyncError(comm_, &state);
    if (result != ncclSuccess) {
      fail(std::string(what) + ": ncclCommGetAsyncError: " + nccl_error(result));
    }
    if (state == ncclSuccess) {
      return;
    }
    if (state != ncclInProgress) {
      fail(std::string(what) + ": " + nccl_error(state));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      fail(std::string(what) + ": not done after " + std::to_string(options_.timeout.count()) +
           " ms: a peer did not take part, or died");
    }
    pause(spins);
  }
}

std::size_t NcclCommunicator::take_slot() {
  if (!free_slots_.empty()) {
    const std::size_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }
  Slot slot;
  void* host = nullptr;
  const bool mapped = options_.summaries == NcclOptions::Summaries::host_mapped;
  cudaError_t error =
      cudaHostAlloc(&host, slot_bytes_,
                    mapped ? cudaHostAllocMapped | cudaHostAllocPortable : cudaHostAllocPortable);
  if (error != cudaSuccess) {
    throw Exception(
        Error::out_of_memory(name() + ": cudaHostAlloc of a summary slot: " + cuda_error(error)));
  }
  slot.host = static_cast<std::byte*>(host);
  void* device = nullptr;
  error = mapped ? cudaHostGetDevicePointer(&device, host, 0) : cudaMalloc(&device, slot_bytes_);
  if (error != cudaSuccess) {
    cudaFreeHost(host);
    throw Exception(
        Error::out_of_memory(name() + ": device memory for a summary slot: " + cuda_error(error)));
  }
  slot.device = static_cast<std::byte*>(device);
  slot.owns_device = !mapped;
  slots_.push_back(slot);
  return slots_.size() - 1;
}

void* NcclCommunicator::take_event() {
  if (!free_events_.empty()) {
    void* event = free_events_.back();
    free_events_.pop_back();
    return event;
  }
  cudaEvent_t event = nullptr;
  if (const cudaError_t error = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
      error != cudaSuccess) {
    throw Exception(Error::communicator(name() + ": cudaEventCreate: " + cuda_error(error)));
  }
  return event;
}

Ticket NcclCommunicator::start(const CollectiveCall& call) {
  if (broken_) {
    throw Exception(*broken_);
  }
  const std::size_t slot_index = take_slot();
  void* event = nullptr;
  try {
    event = take_event();
  } catch (...) {
    free_slots_.push_back(slot_index);
    throw;
  }
  const auto give_back = [&] {
    free_slots_.push_back(slot_index);
    free_events_.push_back(event);
  };
  const Slot& slot = slots_[slot_index];
  const std::size_t delivered = static_cast<std::size_t>(size_) * TaintSummary::bytes;
  std::byte* mine_host = slot.host + delivered;
  std::byte* mine = slot.device + delivered;
  std::byte* all = slot.device;
  auto* stream = static_cast<cudaStream_t>(call.stream);
  const bool mapped = options_.summaries == NcclOptions::Summaries::host_mapped;
  if (!call.summary.empty()) {
    std::memcpy(mine_host, call.summary.data(), TaintSummary::bytes);
  }
  if (!mapped && !call.summary.empty()) {
    if (const cudaError_t error =
            cudaMemcpyAsync(mine, mine_host, TaintSummary::bytes, cudaMemcpyHostToDevice, stream);
        error != cudaSuccess) {
      give_back();
      throw Exception(Error::communicator(name() + ": summary upload: " + cuda_error(error)));
    }
  }

  const ncclDataType_t type = nccl_type(call.type);
  const auto count = static_cast<std::size_t>(call.count);
  ncclResult_t first = ncclGroupStart();
  const auto issue = [&](ncclResult_t result) {
    if (first == ncclSuccess && result != ncclSuccess && result != ncclInProgress) {
      first = result;
    }
  };
  switch (call.kind) {
  case CollectiveKind::all_reduce:
    issue(ncclAllReduce(call.send, call.recv, count, type, nccl_op(call.op), comm_, stream));
    break;
  case CollectiveKind::all_gather:
    issue(ncclAllGather(call.send, call.recv, count, type, comm_, stream));
    break;
  case CollectiveKind::reduce_scatter:
    issue(ncclReduceScatter(call.send, call.recv, count, type, nccl_op(call.op), comm_, stream));
    break;
  case CollectiveKind::broadcast:
    issue(ncclBroadcast(rank_ == call.peer ? call.send : call.recv, call.recv, count, type,
                        call.peer, comm_, stream));
    break;
  case CollectiveKind::send:
    issue(ncclSend(call.send, count, type, call.peer, comm_, stream));
    break;
  case CollectiveKind::recv:
    issue(ncclRecv(call.recv, count, type, call.peer, comm_, stream));
    break;
  }
  // The summaries, in the same group: no extra launch (C2).
  switch (call.kind) {
  case CollectiveKind::all_reduce:
  case CollectiveKind::all_gather:
  case CollectiveKind::reduce_scatter:
    issue(ncclAllGather(mine, all, TaintSummary::bytes, ncclUint8, comm_, stream));
    break;
  case CollectiveKind::broadcast:
    issue(ncclBroadcast(mine, all, TaintSummary::bytes, ncclUint8, call.peer, comm_, stream));
    break;
  case CollectiveKind::send:
    issue(ncclSend(mine, TaintSummary::bytes, ncclUint8, call.peer, comm_, stream));
    break;
  case CollectiveKind::recv:
    issue(ncclRecv(all, TaintSummary::bytes, ncclUint8, call.peer, comm_, stream));
    break;
  }
  const ncclResult_t ended = ncclGroupEnd();
  const std::string what = std::string(taintpool::name(call.kind)) + " of " +
                           std::to_string(call.count) + " " +
                           std::string(taintpool::name(call.type));
  if (first != ncclSuccess) {
    give_back();
    fail(what + ": " + nccl_error(first));
  }
  if (ended == ncclInProgress) {
    try {
      settle(what.c_str(), std::chrono::steady_clock::now() + options_.timeout);
    } catch (...) {
      give_back();
      throw;
    }
  } else if (ended != ncclSuccess) {
    give_back();
    fail(what + ": ncclGroupEnd: " + nccl_error(ended));
  }
  const std::size_t back = gathers(call.kind)                  ? delivered
                           : call.kind == CollectiveKind::send ? 0
                                                               : TaintSummary::bytes;
  if (!mapped && back != 0) {
    if (const cudaError_t error =
            cudaMemcpyAsync(slot.host, all, back, cudaMemcpyDeviceToHost, stream);
        error != cudaSuccess) {
      give_back();
      fail(what + ": summary download: " + cuda_error(error));
    }
  }
  if (const cudaError_t error = cudaEventRecord(static_cast<cudaEvent_t>(event), stream);
      error != cudaSuccess) {
    give_back();
    fail(what + ": cudaEventRecord: " + cuda_error(error));
  }
  const Ticket ticket = next_ticket_++;
  calls_.emplace(ticket, Call{slot_index, event, call.kind, false, std::nullopt});
  return ticket;
}

bool NcclCommunicator::landed(Ticket ticket) {
  const auto found = calls_.find(ticket);
  if (found == calls_.end()) {
    return true;
  }
  Call& call = found->second;
  if (call.landed) {
    return true;
  }
  const cudaError_t query = cudaEventQuery(static_cast<cudaEvent_t>(call.event));
  if (query == cudaSuccess) {
    call.landed = true;
    return true;
  }
  if (query != cudaErrorNotReady) {
    abort("waiting for a collective: " + cuda_error(query));
    return true;
  }
  ncclResult_t state = ncclSuccess;
  if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess ||
      (state != ncclSuccess && state != ncclInProgress)) {
    abort("asynchronous NCCL error: " + nccl_error(state));
    return true;
  }
  return false;
}

void NcclCommunicator::wait_all() {
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (unsigned spins = 0;;) {
    bool all = true;
    for (auto& [ticket, call] : calls_) {
      if (!call.landed && !landed(ticket)) {
        all = false;
        break; // They land in order on one stream: no need to ask the rest.
      }
    }
    if (all) {
      return;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      abort("a collective did not complete within " + std::to_string(options_.timeout.count()) +
            " ms: a peer did not take part, or died");
      return;
    }
    pause(spins);
  }
}

std::optional<Error> NcclCommunicator::failure(Ticket ticket) const {
  const auto found = calls_.find(ticket);
  return found != calls_.end() ? found->second.failure : std::nullopt;
}

std::span<const std::byte> NcclCommunicator::summaries(Ticket ticket) const {
  const auto found = calls_.find(ticket);
  if (found == calls_.end() || !found->second.landed || found->second.failure) {
    return {};
  }
  const Call& call = found->second;
  const std::byte* host = slots_[call.slot].host;
  if (gathers(call.kind)) {
    return {host, static_cast<std::size_t>(size_) * TaintSummary::bytes};
  }
  if (call.kind == CollectiveKind::send) {
    return {};
  }
  return {host, TaintSummary::bytes};
}

void NcclCommunicator::release(Ticket ticket) noexcept {
  const auto found = calls_.find(ticket);
  if (found == calls_.end()) {
    return;
  }
  try {
    free_slots_.push_back(found->second.slot);
    free_events_.push_back(found->second.event);
  } catch (...) {
    // Out of memory growing a free list: the slot and event leak.
  }
  calls_.erase(found);
}

} // namespace taintpool::cuda
