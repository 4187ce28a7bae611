// Collectives: each call is one exchange of the rank's Device whose body
// summarizes the input, starts the communicator's call and says what the
// outputs carry (collectives.hpp, C1-C6).
#include <taintpool/collective/collectives.hpp>
#include <taintpool/exception.hpp>

#include <algorithm>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace taintpool {

Collectives::Collectives(Device& device, Communicator& communicator)
    : device_(device)
    , communicator_(communicator)
    , verdicts_(dynamic_cast<CollectiveBackend*>(&device.backend())) {
  if (verdicts_ == nullptr && !communicator.lands_at_once()) {
    throw std::invalid_argument(
        "Collectives: " + communicator.name() +
        " delivers the other ranks' summaries late, so the Device must run on a "
        "CollectiveBackend (it carries the late verdicts); this one runs on " +
        device.backend().name());
  }
}

Collectives::~Collectives() {
  if (!pending_.empty()) {
    try {
      device_.synchronize(); // Every pending verdict reaches the Device.
    } catch (...) {
      // Out of memory or a broken device: the verdicts are lost with us.
    }
  }
  if (verdicts_ != nullptr) {
    verdicts_->forget(*this);
  }
  for (const Pending& pending : pending_) {
    communicator_.release(pending.ticket);
  }
}

namespace {

[[noreturn]] void bad_size(const std::string& what) {
  throw Exception(Error::invalid_binding(what));
}

std::string describe(const Binding& binding) {
  return to_string(binding.allocation) + " bytes " + to_string(binding.range);
}

} // namespace

CollectiveShape Collectives::shape_of(const Call& call) const {
  CollectiveShape shape;
  shape.kind = call.kind;
  shape.element_size = size_of(call.type);
  shape.ranks = communicator_.size();
  shape.me = communicator_.rank();
  shape.peer = call.peer;
  // The call's name for a message, built only when one is thrown: built
  // eagerly it was two allocations per collective on the passing path
  // (issue 13).
  const auto what = [&] {
    return std::string(name(call.kind)) + "(" + std::string(call.name) + ")";
  };
  const bool paired = call.kind == CollectiveKind::send || call.kind == CollectiveKind::recv;
  if (call.peer < 0 || call.peer >= shape.ranks || (paired && call.peer == shape.me)) {
    throw std::invalid_argument(what() + ": rank " + std::to_string(call.peer) +
                                " is not a peer of rank " + std::to_string(shape.me) + " of " +
                                std::to_string(shape.ranks));
  }
  const auto elements = [&](const Binding& binding) {
    if (binding.range.size() % shape.element_size != 0) {
      bad_size(what() + ": " + describe(binding) + " is not a whole number of " +
               std::string(name(call.type)) + " elements");
    }
    return binding.range.size() / shape.element_size;
  };
  const auto ranks = static_cast<std::uint64_t>(shape.ranks);
  switch (call.kind) {
  case CollectiveKind::all_reduce:
    shape.count = elements(*call.send);
    if (call.recv->range.size() != call.send->range.size()) {
      bad_size(what() + ": send " + describe(*call.send) + " and recv " + describe(*call.recv) +
               " differ in size");
    }
    break;
  case CollectiveKind::all_gather:
    shape.count = elements(*call.send);
    if (call.recv->range.size() != ranks * call.send->range.size()) {
      bad_size(what() + ": recv " + describe(*call.recv) + " must be " + std::to_string(ranks) +
               " times send " + describe(*call.send));
    }
    break;
  case CollectiveKind::reduce_scatter:
    shape.count = elements(*call.recv);
    if (call.send->range.size() != ranks * call.recv->range.size()) {
      bad_size(what() + ": send " + describe(*call.send) + " must be " + std::to_string(ranks) +
               " times recv " + describe(*call.recv));
    }
    break;
  case CollectiveKind::broadcast:
    shape.count = elements(*call.recv);
    if (shape.me == call.peer && call.send->range.size() != call.recv->range.size()) {
      bad_size(what() + ": the root's send " + describe(*call.send) + " and recv " +
               describe(*call.recv) + " differ in size");
    }
    break;
  case CollectiveKind::send:
    shape.count = elements(*call.send);
    break;
  case CollectiveKind::recv:
    shape.count = elements(*call.recv);
    break;
  }
  static_cast<void>(shape.layout()); // Throws for a size it cannot cut.
  return shape;
}

CollectiveResult Collectives::run(StreamId stream, const Call& call) {
  if (const std::optional<Error> why = communicator_.broken()) {
    throw Exception(*why); // C6: nothing starts on a broken communicator.
  }
  const CollectiveShape shape = shape_of(call);
  const bool contributes = shape.send_bytes() != 0 || call.kind == CollectiveKind::send;
  const bool receives = call.kind != CollectiveKind::send;
  const std::span<const Binding> reads =
      contributes ? std::span<const Binding>(call.send, 1) : std::span<const Binding>();
  const std::span<const Binding> writes =
      receives ? std::span<const Binding>(call.recv, 1) : std::span<const Binding>();

  // C2: the summary describes the taint known now, so a verdict these
  // inputs may still get must be attributed first. Landed clean verdicts
  // are confirmed without waiting; only a dependency synchronizes.
  if (verdicts_ != nullptr) {
    verdicts_->poll();
  }
  if (!reads.empty() && device_.awaits_verdict(reads)) {
    device_.synchronize();
  }

  kernel_.assign(name(call.kind));
  kernel_ += '(';
  kernel_ += call.name;
  kernel_ += ") on rank ";
  kernel_ += std::to_string(shape.me);
  CollectiveResult result;
  std::vector<UnwrittenRead> unwritten; // N2 under Report: filled only when some are read.
  result.launch =
      device_.exchange(stream, kernel_, reads, writes, [&](const ExchangeContext& context) {
        const KernelContext& kernel = context.kernel();
        Summarized roots;
        if (contributes) {
          const AllocationId input_allocation = kernel.read_binding(0).allocation;
          std::vector<StaleInput> reported; // Scratch: the stale bytes less the reported ones.
          const std::span<const StaleInput> stale =
              reported_unwritten(context.stale(), *call.send, unwritten, reported);
          roots =
              summarize(summary_, shape.layout(), stale, [&](FailureId failure) -> const Report& {
                const Report* report = context.report(failure, input_allocation);
                if (report == nullptr) {
                  throw std::logic_error("Collectives: no report of " + to_string(failure) +
                                         " for the input");
                }
                return *report;
              });
        } else {
          clear_summary(summary_);
        }
        CollectiveCall engine;
        engine.kind = call.kind;
        engine.send = contributes ? kernel.read_binding(0).data : nullptr;
        engine.recv = receives ? kernel.write_binding(0).data : nullptr;
        engine.count = shape.count;
        engine.type = call.type;
        engine.op = call.op;
        engine.peer = call.peer;
        engine.stream = kernel.stream_handle();
        if (call.kind != CollectiveKind::recv) {
          engine.summary = std::span<const std::byte>(reinterpret_cast<const std::byte*>(&summary_),
                                                      TaintSummary::bytes);
        }
        const Ticket ticket = communicator_.start(engine); // A throw: S3, C6.

        ExchangeOutcome outcome;
        outcome.carried = carried_stale(shape, summary_, roots);
        if (verdicts_ == nullptr && !communicator_.landed(ticket)) {
          communicator_.wait_all(); // Not reached with a blocking engine; never hangs.
        }
        if (communicator_.landed(ticket)) {
          if (std::optional<Error> failure = communicator_.failure(ticket)) {
            communicator_.release(ticket);
            throw Exception(std::move(*failure));
          }
          if (receives) {
            FedStale fed = fed_stale(shape, communicator_.summaries(ticket));
            outcome.fed = std::move(fed.ranges);
            outcome.fed_error = std::move(fed.error);
          }
          communicator_.release(ticket);
        } else {
          if (verdicts_ == nullptr) {
            // The engine said it lands at once, and has not after wait_all:
            // its contract is broken, and no backend could take a verdict.
            communicator_.release(ticket);
            throw std::logic_error("Collectives: " + communicator_.name() +
                                   " claims to land at once but had not landed after wait_all, "
                                   "and the Device has no CollectiveBackend for a late verdict");
          }
          pending_.push_back(Pending{kernel.launch(), ticket, shape});
          verdicts_->expect(kernel.launch(), *this);
          result.verdict_pending = true;
        }
        for (const CarriedStale& carried : outcome.carried) {
          result.stale_bytes += carried.range.size();
        }
        for (const WrittenRange& fed : outcome.fed) {
          result.stale_bytes += fed.range.size();
        }
        return outcome;
      });
  if (!unwritten.empty()) [[unlikely]] {
    result.launch.unwritten = std::move(unwritten);
  }
  return result;
}

std::span<const StaleInput> Collectives::reported_unwritten(std::span<const StaleInput> stale,
                                                            const Binding& send,
                                                            std::vector<UnwrittenRead>& unwritten,
                                                            std::vector<StaleInput>& kept) const {
  if (stale.empty() || device_.unwritten_reads() != UnwrittenReads::Report) {
    return stale; // Skip: never-written bytes are stale like any (C1, C4).
  }
  const std::optional<FailureId> never_written = device_.memory().never_written_failure();
  const auto is_unwritten = [&](const StaleInput& input) {
    return never_written && input.failure == *never_written;
  };
  if (std::none_of(stale.begin(), stale.end(), is_unwritten)) {
    return stale;
  }
  // N2: the collective reads them as it would have anyway (C1), and they
  // are listed, not carried: no output byte and no other rank's summary
  // takes the NeverWritten failure. Any other failure is carried as ever.
  for (const StaleInput& input : stale) {
    if (is_unwritten(input)) {
      unwritten.push_back(
          UnwrittenRead{send.allocation, ByteRange::of(send.range.begin() + input.range.begin(),
                                                       send.range.begin() + input.range.end())});
    } else {
      kept.push_back(input);
    }
  }
  return kept;
}

// ------------------------------------------------------------ the operations

CollectiveResult Collectives::all_reduce(StreamId stream, std::string_view name,
                                         const Binding& send, const Binding& recv, DataType type,
                                         ReduceOp op) {
  return run(stream, Call{CollectiveKind::all_reduce, name, &send, &recv, type, op, 0});
}

CollectiveResult Collectives::all_gather(StreamId stream, std::string_view name,
                                         const Binding& send, const Binding& recv, DataType type) {
  return run(stream, Call{CollectiveKind::all_gather, name, &send, &recv, type, ReduceOp::sum, 0});
}

CollectiveResult Collectives::reduce_scatter(StreamId stream, std::string_view name,
                                             const Binding& send, const Binding& recv,
                                             DataType type, ReduceOp op) {
  return run(stream, Call{CollectiveKind::reduce_scatter, name, &send, &recv, type, op, 0});
}

CollectiveResult Collectives::broadcast(StreamId stream, std::string_view name, const Binding& send,
                                        const Binding& recv, DataType type, int root) {
  return run(stream,
             Call{CollectiveKind::broadcast, name, &send, &recv, type, ReduceOp::sum, root});
}

CollectiveResult Collectives::send(StreamId stream, std::string_view name, const Binding& send,
                                   DataType type, int peer) {
  return run(stream, Call{CollectiveKind::send, name, &send, nullptr, type, ReduceOp::sum, peer});
}

CollectiveResult Collectives::recv(StreamId stream, std::string_view name, const Binding& recv,
                                   DataType type, int peer) {
  return run(stream, Call{CollectiveKind::recv, name, nullptr, &recv, type, ReduceOp::sum, peer});
}

// ------------------------------------------------------------ verdicts (C5)

std::vector<Collectives::Pending>::iterator Collectives::find(std::uint64_t launch) {
  return std::find_if(pending_.begin(), pending_.end(),
                      [&](const Pending& pending) { return pending.launch == launch; });
}

bool Collectives::landed_clean(std::uint64_t launch) {
  const auto pending = find(launch);
  if (pending == pending_.end()) {
    return true; // Not ours any more: nothing to say.
  }
  if (!communicator_.landed(pending->ticket) || communicator_.failure(pending->ticket)) {
    return false;
  }
  if (pending->shape.kind != CollectiveKind::send &&
      !fed_clean(pending->shape, communicator_.summaries(pending->ticket))) {
    return false; // Stale: reported at the next synchronize.
  }
  communicator_.release(pending->ticket);
  pending_.erase(pending);
  return true;
}

void Collectives::wait_all() {
  communicator_.wait_all();
}

std::optional<LateFailure> Collectives::verdict(std::uint64_t launch) {
  const auto pending = find(launch);
  if (pending == pending_.end()) {
    return std::nullopt;
  }
  std::optional<LateFailure> late;
  const CollectiveShape& shape = pending->shape;
  if (!communicator_.landed(pending->ticket)) {
    late = LateFailure{launch,
                       Error::communicator(communicator_.name() +
                                           ": the collective had not landed when waited for"),
                       {}};
  } else if (std::optional<Error> failure = communicator_.failure(pending->ticket)) {
    late = LateFailure{launch, std::move(*failure), {}};
  } else if (shape.kind != CollectiveKind::send) {
    FedStale fed = fed_stale(shape, communicator_.summaries(pending->ticket));
    if (!fed.ranges.empty()) {
      // Written: every output byte the fed ranges do not cover.
      std::vector<WrittenRange> written;
      std::uint64_t at = 0;
      for (const WrittenRange& stale : fed.ranges) {
        if (at < stale.range.begin()) {
          written.push_back(WrittenRange{0, ByteRange::of(at, stale.range.begin())});
        }
        at = stale.range.end();
      }
      if (at < shape.recv_bytes()) {
        written.push_back(WrittenRange{0, ByteRange::of(at, shape.recv_bytes())});
      }
      late = LateFailure{launch, std::move(*fed.error), std::move(written)};
    }
  }
  if (late && shape.kind == CollectiveKind::send) {
    late.reset(); // A send has no outputs to carry it; broken() tells the caller.
  }
  communicator_.release(pending->ticket);
  pending_.erase(pending);
  return late;
}

} // namespace taintpool
