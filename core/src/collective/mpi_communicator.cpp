// MpiCommunicator: two nonblocking MPI operations per call, polled to
// completion within a timeout (mpi_communicator.hpp).
#include <taintpool/collective/mpi_communicator.hpp>
#include <taintpool/collective/summary.hpp>
#include <taintpool/exception.hpp>

#include <climits>
#include <cstring>
#include <new>
#include <stdexcept>
#include <thread>

namespace taintpool {

namespace {

constexpr int data_tag = 0x7a01;
constexpr int summary_tag = 0x7a02;

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    return "MPI error " + std::to_string(code);
  }
  return std::string(text, static_cast<std::size_t>(length));
}

MPI_Datatype mpi_type(DataType type) {
  switch (type) {
  case DataType::u8:
    return MPI_UINT8_T;
  case DataType::i32:
    return MPI_INT32_T;
  case DataType::i64:
    return MPI_INT64_T;
  case DataType::f32:
    return MPI_FLOAT;
  case DataType::f64:
    return MPI_DOUBLE;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
  case ReduceOp::sum:
    return MPI_SUM;
  case ReduceOp::prod:
    return MPI_PROD;
  case ReduceOp::min:
    return MPI_MIN;
  case ReduceOp::max:
    return MPI_MAX;
  }
  return MPI_SUM;
}

bool overlaps(const std::byte* a, std::size_t a_bytes, const std::byte* b, std::size_t b_bytes) {
  return a != nullptr && b != nullptr && a < b + b_bytes && b < a + a_bytes;
}

} // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm communicator, MpiOptions options)
    : options_(options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0) {
    throw Exception(Error::communicator("MpiCommunicator: MPI is not initialized (call MPI_Init)"));
  }
  if (const int code = MPI_Comm_dup(communicator, &communicator_); code != MPI_SUCCESS) {
    throw Exception(Error::communicator("MpiCommunicator: MPI_Comm_dup: " + mpi_error(code)));
  }
  MPI_Comm_set_errhandler(communicator_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(communicator_, &rank_);
  MPI_Comm_size(communicator_, &size_);
}

MpiCommunicator::~MpiCommunicator() {
  if (!abandoned_.empty()) {
    // C6: a peer may still complete an abandoned request — MPI progresses
    // it inside any later call, even a barrier on another communicator — so
    // its buffers must outlive this object: they are kept, reachable, until
    // the process ends, never freed (AddressSanitizer found the timeout test
    // writing into them after the communicator was gone).
    // NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables)
    static std::vector<Abandoned>* kept = nullptr;
    try {
      if (kept == nullptr) {
        kept = new std::vector<Abandoned>(); // NOLINT(cppcoreguidelines-owning-memory)
      }
      for (Abandoned& each : abandoned_) {
        kept->push_back(std::move(each));
      }
    } catch (const std::bad_alloc&) {
      // No room to keep the records: keep the scratch at least (the
      // summaries' buffers are small; MPI writes the data into scratch).
      for (Abandoned& each : abandoned_) {
        static_cast<void>(each.scratch.release()); // NOLINT(bugprone-unused-return-value)
      }
    }
  }
  if (!broken_ && communicator_ != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized == 0) {
      MPI_Comm_free(&communicator_);
    }
  }
}

std::string MpiCommunicator::name() const {
  return "mpi rank " + std::to_string(rank_) + " of " + std::to_string(size_);
}

std::span<const std::byte> MpiCommunicator::summaries(Ticket ticket) const {
  const auto found = landed_.find(ticket);
  return found != landed_.end() ? std::span<const std::byte>(found->second)
                                : std::span<const std::byte>();
}

void MpiCommunicator::fail(const CollectiveCall& call, const std::string& why) {
  broken_ = Error::communicator(name() + ": " + std::string(taintpool::name(call.kind)) + " of " +
                                std::to_string(call.count) + " " +
                                std::string(taintpool::name(call.type)) + " failed: " + why +
                                " (the communicator is broken from now on)");
  throw Exception(*broken_);
}

std::byte* MpiCommunicator::scratch(std::size_t bytes) {
  if (scratch_bytes_ < bytes || !scratch_) {
    scratch_ = std::make_unique<std::byte[]>(bytes);
    scratch_bytes_ = bytes;
  }
  return scratch_.get();
}

Ticket MpiCommunicator::start(const CollectiveCall& call) {
  if (broken_) {
    throw Exception(*broken_);
  }
  if (call.count > static_cast<std::uint64_t>(INT_MAX) ||
      (call.kind == CollectiveKind::reduce_scatter &&
       call.count * static_cast<std::uint64_t>(size_) > static_cast<std::uint64_t>(INT_MAX))) {
    throw std::invalid_argument(name() + ": " + std::to_string(call.count) +
                                " elements do not fit an MPI count");
  }
  const int count = static_cast<int>(call.count);
  MPI_Datatype type = mpi_type(call.type); // A handle: `const` would bind to the pointer.
  const std::size_t element = size_of(call.type);
  const std::size_t block = call.count * element;
  const auto ranks = static_cast<std::size_t>(size_);
  constexpr int summary_bytes = static_cast<int>(TaintSummary::bytes);
  std::size_t in_bytes = 0;  // What MPI reads from `send`.
  std::size_t out_bytes = 0; // What MPI writes to `recv`.
  switch (call.kind) {
  case CollectiveKind::all_reduce:
    in_bytes = out_bytes = block;
    break;
  case CollectiveKind::all_gather:
    in_bytes = block;
    out_bytes = ranks * block;
    break;
  case CollectiveKind::reduce_scatter:
    in_bytes = ranks * block;
    out_bytes = block;
    break;
  case CollectiveKind::broadcast:
    in_bytes = rank_ == call.peer ? block : 0;
    out_bytes = block;
    break;
  case CollectiveKind::send:
    in_bytes = block;
    break;
  case CollectiveKind::recv:
    out_bytes = block;
    break;
  }

  // Where MPI reads and writes: the caller's buffers, or scratch (stage).
  const std::byte* send = call.send;
  std::byte* recv = call.recv;
  if (options_.stage) {
    std::byte* staged = scratch(in_bytes + out_bytes);
    if (in_bytes != 0) {
      std::memcpy(staged, call.send, in_bytes);
    }
    send = staged;
    recv = staged + in_bytes;
  }

  Abandoned live; // Moves to abandoned_ if the call fails.
  live.requests.assign(2, MPI_REQUEST_NULL);
  std::vector<std::byte>& summaries = live.summaries;
  // Unstaged, MPI forbids aliased send and receive buffers except through
  // MPI_IN_PLACE: a send that overlaps the output any other way is copied.
  const auto apart = [&](std::size_t bytes) -> const void* {
    if (!overlaps(send, in_bytes, recv, out_bytes)) {
      return send;
    }
    live.scratch = std::make_unique<std::byte[]>(bytes);
    std::memcpy(live.scratch.get(), send, bytes);
    return live.scratch.get();
  };
  int code = MPI_SUCCESS;
  switch (call.kind) {
  case CollectiveKind::all_reduce: {
    const void* input = send == recv ? MPI_IN_PLACE : apart(block);
    code = MPI_Iallreduce(input, recv, count, type, mpi_op(call.op), communicator_,
                          live.requests.data());
    break;
  }
  case CollectiveKind::all_gather: {
    const void* input =
        send == recv + static_cast<std::size_t>(rank_) * block ? MPI_IN_PLACE : apart(block);
    code =
        MPI_Iallgather(input, count, type, recv, count, type, communicator_, live.requests.data());
    break;
  }
  case CollectiveKind::reduce_scatter:
    code = MPI_Ireduce_scatter_block(apart(ranks * block), recv, count, type, mpi_op(call.op),
                                     communicator_, live.requests.data());
    break;
  case CollectiveKind::broadcast:
    if (rank_ == call.peer && send != recv && block != 0) {
      std::memmove(recv, send, block);
    }
    code = MPI_Ibcast(recv, count, type, call.peer, communicator_, live.requests.data());
    break;
  case CollectiveKind::send:
    code = MPI_Isend(send, count, type, call.peer, data_tag, communicator_, live.requests.data());
    break;
  case CollectiveKind::recv:
    code = MPI_Irecv(recv, count, type, call.peer, data_tag, communicator_, live.requests.data());
    break;
  }
  if (code != MPI_SUCCESS) {
    fail(call, mpi_error(code)); // Nothing was started that needs keeping.
  }

  // The summaries: one more small operation next to the data (C2).
  switch (call.kind) {
  case CollectiveKind::all_reduce:
  case CollectiveKind::all_gather:
  case CollectiveKind::reduce_scatter:
    // Its own summary rides at the end, so an abandoned request reads only
    // memory that is kept; the delivered ones are the first size().
    summaries.resize((ranks + 1) * TaintSummary::bytes);
    std::memcpy(summaries.data() + ranks * TaintSummary::bytes, call.summary.data(),
                TaintSummary::bytes);
    code = MPI_Iallgather(summaries.data() + ranks * TaintSummary::bytes, summary_bytes, MPI_BYTE,
                          summaries.data(), summary_bytes, MPI_BYTE, communicator_,
                          live.requests.data() + 1);
    break;
  case CollectiveKind::broadcast:
    summaries.assign(TaintSummary::bytes, std::byte{0});
    if (rank_ == call.peer) {
      std::memcpy(summaries.data(), call.summary.data(), TaintSummary::bytes);
    }
    code = MPI_Ibcast(summaries.data(), summary_bytes, MPI_BYTE, call.peer, communicator_,
                      live.requests.data() + 1);
    break;
  case CollectiveKind::send:
    // Its own copy: MPI reads it until the send completes.
    summaries.assign(call.summary.begin(), call.summary.end());
    code = MPI_Isend(summaries.data(), summary_bytes, MPI_BYTE, call.peer, summary_tag,
                     communicator_, live.requests.data() + 1);
    break;
  case CollectiveKind::recv:
    summaries.resize(TaintSummary::bytes);
    code = MPI_Irecv(summaries.data(), summary_bytes, MPI_BYTE, call.peer, summary_tag,
                     communicator_, live.requests.data() + 1);
    break;
  }
  const auto abandon = [&](const std::string& why) {
    if (options_.stage) {
      live.scratch = std::move(scratch_); // MPI may still use it: never freed.
      scratch_bytes_ = 0;
    }
    abandoned_.push_back(std::move(live));
    fail(call, why);
  };
  if (code != MPI_SUCCESS) {
    abandon(mpi_error(code));
  }

  // Poll until both complete, or the timeout: never block in MPI itself.
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (unsigned spins = 0;; ++spins) {
    int done = 0;
    code = MPI_Testall(2, live.requests.data(), &done, MPI_STATUSES_IGNORE);
    if (code != MPI_SUCCESS) {
      abandon(mpi_error(code));
    }
    if (done != 0) {
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      abandon("not complete after " + std::to_string(options_.timeout.count()) +
              " ms: a peer did not take part, or died");
    }
    if (spins > 1000) {
      std::this_thread::sleep_for(std::chrono::microseconds(50)); // Oversubscribed hosts.
    }
  }
  if (options_.stage && out_bytes != 0) {
    std::memcpy(call.recv, recv, out_bytes);
  }
  if (call.kind != CollectiveKind::send && call.kind != CollectiveKind::recv &&
      call.kind != CollectiveKind::broadcast) {
    summaries.resize(ranks * TaintSummary::bytes); // Drops its own copy.
  }
  const Ticket ticket = next_ticket_++;
  landed_.emplace(ticket, std::move(summaries));
  return ticket;
}

} // namespace taintpool
