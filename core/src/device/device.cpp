#include <taintpool/device/device.hpp>
#include <taintpool/taint.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace taintpool {

// ------------------------------------------------------------ KernelContext

const BoundBuffer& KernelContext::at(std::span<const BoundBuffer> buffers, std::size_t index,
                                     const char* what) {
  if (index >= buffers.size()) {
    throw std::out_of_range(std::string("KernelContext: ") + what + " binding " +
                            std::to_string(index) + " of " + std::to_string(buffers.size()));
  }
  return buffers[index];
}

void KernelContext::check_fits(const void* data, std::size_t bytes, std::size_t size,
                               std::size_t alignment) {
  if (bytes % size != 0 || reinterpret_cast<std::uintptr_t>(data) % alignment != 0) {
    throw std::invalid_argument("KernelContext: a binding of " + std::to_string(bytes) +
                                " bytes is not a whole, aligned array of " + std::to_string(size) +
                                "-byte elements");
  }
}

// ------------------------------------------------------------ read outcomes

std::string to_string(const ReadOutcome& outcome) {
  std::string text;
  for (const Report& report : outcome.reports) {
    if (!text.empty()) {
      text += '\n';
    }
    text += to_string(report);
  }
  return text;
}

StaleRead::StaleRead(std::vector<Report> reports)
    : Exception(Error(ErrorKind::Unwritten, to_string(ReadOutcome{reports})))
    , reports_(std::move(reports)) {
}

// ------------------------------------------------------------ Device

/// Marks a launch in progress, so a body that launches on its own device is
/// refused instead of clobbering the scope's scratch state.
struct Device::ScopeGuard {
  explicit ScopeGuard(bool& flag)
      : flag_(flag) {
    if (flag_) {
      throw std::logic_error("Device::launch is not reentrant: a body launched on its own device");
    }
    flag_ = true;
  }
  ~ScopeGuard() { flag_ = false; }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  bool& flag_;
};

Device::Device(Backend& backend)
    : Device(backend, backend.memory_config()) {
}

Device::Device(Backend& backend, MemoryConfig config)
    : backend_(backend)
    , reports_late_(backend.reports_late_failures())
    , memory_(backend.storage(), graph_, std::move(config)) {
}

void Device::throw_inside_launch(const char* call) {
  throw std::logic_error(std::string("Device::") + call +
                         " was called from a body on its own device: a body must not launch, "
                         "write, read, synchronize or create buffers on the device running it");
}

Allocation Device::create_buffer(std::span<const std::byte> bytes) {
  refuse_inside_launch("create_buffer");
  Allocation buffer = memory_.allocate(bytes.size());
  write(buffer.whole(), bytes);
  return buffer;
}

void Device::resolve_all(std::span<const Binding> bindings, std::vector<BoundBuffer>& into,
                         std::vector<Taint*>& taints) {
  // The scratch keeps its capacity, so a warm launch allocates nothing here.
  into.clear();
  taints.clear();
  for (const Binding& binding : bindings) {
    const BoundBytes bytes = memory_.resolve_swept(binding);
    into.push_back(
        BoundBuffer{binding.allocation, binding.range, bytes.data + binding.range.begin()});
    taints.push_back(bytes.taint);
  }
}

LaunchResult Device::launch(std::string_view kernel, std::span<const Binding> reads,
                            std::span<const Binding> writes, KernelBody body) {
  ScopeGuard guard(in_launch_);
  // Every binding is checked before anything is claimed (P3, S1).
  memory_.sweep();
  resolve_all(reads, reads_, read_taints_);
  resolve_all(writes, writes_, write_taints_);
  released_.clear();
  const std::uint64_t launch = next_launch_++;
  LaunchResult result = [&] {
    try {
      return decide_and_run(launch, kernel, body);
    } catch (...) {
      log_if_unconfirmed(launch, kernel, reads, writes, LaunchStatus::Failed);
      throw;
    }
  }();
  log_if_unconfirmed(launch, kernel, reads, writes, result.status);
  return result;
}

LaunchResult Device::decide_and_run(std::uint64_t launch, std::string_view kernel,
                                    KernelBody body) {
  // S1: decide before claiming. Only reads are checked (S5).
  for (std::size_t index = 0; index < reads_.size(); ++index) {
    if (const auto root = read_taints_[index]->failure(reads_[index].range)) {
      return skip(kernel, *root, reads_[index].allocation);
    }
  }
  return enter(launch, kernel, body);
}

LaunchResult Device::skip(std::string_view kernel, FailureId root, AllocationId needed) {
  SkipRecord record{std::string(kernel), needed, {}};
  for (const BoundBuffer& output : writes_) {
    if (std::find(record.produced.begin(), record.produced.end(), output.allocation) ==
        record.produced.end()) {
      record.produced.push_back(output.allocation);
    }
  }
  // The outputs take the root failure; nothing is minted (S4).
  for (std::size_t index = 0; index < writes_.size(); ++index) {
    write_taints_[index]->taint(writes_[index].range, root, graph_);
  }
  graph_.skipped(root, std::move(record));
  LaunchResult result;
  result.status = LaunchStatus::Skipped;
  result.failure = root;
  result.needed = needed;
  return result;
}

namespace {

/// The stored error names the kernel, so a report says who left the bytes
/// unwritten.
Error named(std::string_view kernel, const Error& error, std::size_t ignored_ranges) {
  std::string message(kernel);
  message += ": ";
  message += error.message().empty() ? std::string(name(error.kind())) : error.message();
  if (ignored_ranges != 0) {
    message += " (" + std::to_string(ignored_ranges) +
               " reported written ranges lay outside their outputs and were ignored)";
  }
  return Error(error.kind(), std::move(message));
}

} // namespace

LaunchOutcome Device::run_claimed(FailureId provisional, std::string_view kernel, KernelBody body,
                                  const KernelContext& context) {
  try {
    return backend_.run(body, context);
  } catch (...) {
    // S3: the write set stays claimed by TornDown; say which kernel threw.
    try {
      std::string why = "a non-standard exception";
      try {
        throw;
      } catch (const std::exception& error) {
        why = error.what();
      } catch (...) {
      }
      graph_.replace(provisional, Error(ErrorKind::TornDown,
                                        std::string(kernel) + " threw before finishing: " + why));
    } catch (...) {
      // Keep the payload-free TornDown if even the message cannot be built.
    }
    graph_.prune(provisional);
    throw;
  }
}

LaunchResult Device::enter(std::uint64_t launch, std::string_view kernel, KernelBody body) {
  const KernelContext context(launch, kernel, reads_, writes_, backend_.backend_data());
  LaunchResult result;
  if (writes_.empty()) {
    // Nothing to claim, nothing to taint: a failure here is only reported.
    LaunchOutcome outcome = backend_.run(body, context);
    if (!outcome.ok()) {
      result.status = LaunchStatus::Failed;
      result.error = named(kernel, *outcome.error(), outcome.written().size());
    }
    return result;
  }

  // The provisional failure claims the whole write set (S1).
  const FailureId provisional = graph_.insert_provisional();
  try {
    for (std::size_t index = 0; index < writes_.size(); ++index) {
      write_taints_[index]->taint(writes_[index].range, provisional, graph_);
    }
  } catch (...) {
    // Out of memory mid-claim: what was claimed reads as torn down, which
    // is the safe direction; the provisional node goes if it claimed nothing.
    graph_.prune(provisional);
    throw;
  }

  const LaunchOutcome outcome = run_claimed(provisional, kernel, body, context);
  if (outcome.ok()) {
    for (std::size_t index = 0; index < writes_.size(); ++index) {
      write_taints_[index]->written(writes_[index].range, graph_);
    }
    graph_.prune(provisional);
    return result;
  }

  // S2: reported ranges are untrusted input. One inside its output is
  // released; one outside is ignored, never releasing bytes it does not own.
  std::size_t ignored = 0;
  for (const WrittenRange& written : outcome.written()) {
    if (written.output >= writes_.size() ||
        written.range.end() > writes_[written.output].range.size()) {
      ++ignored;
    }
  }
  Error error = named(kernel, *outcome.error(), ignored);
  graph_.replace(provisional, error);
  for (const WrittenRange& written : outcome.written()) {
    if (written.output < writes_.size() &&
        written.range.end() <= writes_[written.output].range.size()) {
      const BoundBuffer& output = writes_[written.output];
      const ByteRange bytes = ByteRange::of(output.range.begin() + written.range.begin(),
                                            output.range.begin() + written.range.end());
      write_taints_[written.output]->written(bytes, graph_);
      if (!bytes.empty()) {
        released_.push_back({output.allocation, bytes});
      }
    }
  }
  graph_.prune(provisional);
  result.status = LaunchStatus::Failed;
  if (graph_.contains(provisional)) {
    result.failure = provisional;
  }
  result.error = std::move(error);
  return result;
}

LaunchResult Device::write(const Binding& into, std::span<const std::byte> bytes) {
  refuse_inside_launch("write");
  if (bytes.size() != into.range.size()) {
    throw Exception(Error::invalid_binding("a host write of " + std::to_string(bytes.size()) +
                                           " bytes into " + to_string(into.allocation) + " bytes " +
                                           to_string(into.range) + " (" +
                                           std::to_string(into.range.size()) + " bytes)"));
  }
  return launch("host write", std::span<const Binding>(), std::span<const Binding>(&into, 1),
                [&](const KernelContext& context) {
                  if (auto error = backend_.copy_in(context.write_binding(0).data, bytes.data(),
                                                    bytes.size())) {
                    return LaunchOutcome::failure(std::move(*error));
                  }
                  return LaunchOutcome::success();
                });
}

// ------------------------------------------------------------ late failures

void Device::log_if_unconfirmed(std::uint64_t launch, std::string_view kernel,
                                std::span<const Binding> reads, std::span<const Binding> writes,
                                LaunchStatus status) {
  if (!reports_late_ && log_.empty()) {
    return; // A synchronous backend confirms every launch as it runs.
  }
  const std::optional<std::uint64_t> oldest = backend_.oldest_unconfirmed_launch();
  if (!oldest) {
    if (!log_.empty()) {
      log_.clear(); // Everything is confirmed: no replay will need it.
    }
    return;
  }
  while (!log_.empty() && log_.front().launch < *oldest) {
    log_.pop_front();
  }
  log_.push_back(LoggedLaunch{launch, std::string(kernel), status,
                              std::vector<Binding>(reads.begin(), reads.end()),
                              std::vector<Binding>(writes.begin(), writes.end()), released_});
}

namespace {

bool overlaps(const Binding& a, const Binding& b) {
  return a.allocation == b.allocation && a.range.overlaps(b.range);
}

/// Removes `cut`'s bytes from a set of bindings, splitting what it lands in.
void subtract(std::vector<Binding>& set, const Binding& cut) {
  std::vector<Binding> kept;
  for (const Binding& held : set) {
    if (!overlaps(held, cut)) {
      kept.push_back(held);
      continue;
    }
    if (held.range.begin() < cut.range.begin()) {
      kept.push_back({held.allocation, ByteRange::of(held.range.begin(), cut.range.begin())});
    }
    if (cut.range.end() < held.range.end()) {
      kept.push_back({held.allocation, ByteRange::of(cut.range.end(), held.range.end())});
    }
  }
  set = std::move(kept);
}

} // namespace

void Device::synchronize() {
  refuse_inside_launch("synchronize");
  // A late failure the backend has handed over must not be lost if its
  // attribution runs out of memory: it waits in unattributed_ and the next
  // call attributes it first, before taking anything new from the backend.
  // So the queue is empty whenever the backend's list arrives, and taking
  // that list is a vector move: nothing between the backend and the queue
  // can throw.
  attribute_queued();
  unattributed_ = backend_.synchronize();
  // Newest first, so the oldest is at the back: attributed in launch order
  // and removed with pop_back (std::sort works in place, allocating nothing).
  std::sort(unattributed_.begin(), unattributed_.end(),
            [](const LateFailure& a, const LateFailure& b) { return a.launch > b.launch; });
  attribute_queued();
  const std::optional<std::uint64_t> oldest = backend_.oldest_unconfirmed_launch();
  while (!log_.empty() && (!oldest || log_.front().launch < *oldest)) {
    log_.pop_front();
  }
}

void Device::attribute_queued() {
  while (!unattributed_.empty()) {
    try {
      attribute(unattributed_.back());
    } catch (const std::logic_error&) {
      unattributed_.pop_back(); // A backend's contract violation: said once, not retried.
      throw;
    }
    unattributed_.pop_back();
  }
}

void Device::attribute(const LateFailure& late) {
  const auto origin = std::find_if(log_.begin(), log_.end(), [&](const LoggedLaunch& logged) {
    return logged.launch == late.launch;
  });
  if (origin == log_.end()) {
    throw std::logic_error("Device::synchronize: the backend reported launch " +
                           std::to_string(late.launch) +
                           " failed, but it was confirmed already (a backend must keep a "
                           "checked launch unconfirmed until it reports it)");
  }
  if (origin->status != LaunchStatus::Ran) {
    return; // Its outputs already carry the failure that stopped it.
  }
  // Two phases, so that running out of memory halfway leaves nothing half
  // done that a retry would not redo: first the plan (the stale bytes, the
  // skip records, the launches they mark), touching only locals; then the
  // graph and the taints, and last the log's statuses, which cannot throw.

  // The stale bytes: the write set, less what the kernel says it finished
  // (untrusted: a range outside its output is ignored, S2).
  std::vector<Binding> stale = origin->writes;
  std::size_t ignored = 0;
  for (const WrittenRange& written : late.written) {
    if (written.output >= origin->writes.size() ||
        written.range.end() > origin->writes[written.output].range.size()) {
      ++ignored;
      continue;
    }
    const Binding& output = origin->writes[written.output];
    subtract(stale, {output.allocation, ByteRange::of(output.range.begin() + written.range.begin(),
                                                      output.range.begin() + written.range.end())});
  }

  // Replay what ran since: a launch that read stale bytes computed garbage,
  // so its outputs join the stale set; any other launch overwrote its
  // outputs (with good data, or with its own failure), so they leave it.
  struct Joined {
    LoggedLaunch* launch;
    SkipRecord record;
  };
  std::vector<Joined> joined;
  const auto record_of = [](const LoggedLaunch& later, AllocationId consumed,
                            const std::vector<Binding>& produced) {
    SkipRecord record{later.kernel, consumed, {}, true};
    for (const Binding& output : produced) {
      if (std::find(record.produced.begin(), record.produced.end(), output.allocation) ==
          record.produced.end()) {
        record.produced.push_back(output.allocation);
      }
    }
    return record;
  };
  for (auto later = std::next(origin); later != log_.end(); ++later) {
    const auto consumed =
        std::find_if(later->reads.begin(), later->reads.end(), [&](const Binding& read) {
          return std::any_of(stale.begin(), stale.end(),
                             [&](const Binding& held) { return overlaps(read, held); });
        });
    if (consumed != later->reads.end() && later->status == LaunchStatus::Ran) {
      joined.push_back({&*later, record_of(*later, consumed->allocation, later->writes)});
      stale.insert(stale.end(), later->writes.begin(), later->writes.end());
    } else if (consumed != later->reads.end() && !later->released.empty()) {
      // It failed, but the bytes it reported written (S2) were computed
      // from stale input: they are garbage too (D1). The rest of its
      // outputs carry its own failure.
      for (const Binding& output : later->writes) {
        subtract(stale, output);
      }
      joined.push_back({&*later, record_of(*later, consumed->allocation, later->released)});
      stale.insert(stale.end(), later->released.begin(), later->released.end());
    } else {
      for (const Binding& output : later->writes) {
        subtract(stale, output);
      }
    }
  }
  Error error = named(origin->kernel, late.error, ignored);
  error = Error(error.kind(), error.message() + " (reported when the device synchronised)");

  const FailureId failure = graph_.insert(std::move(error));
  try {
    for (Joined& each : joined) {
      graph_.skipped(failure, std::move(each.record));
    }
    for (const Binding& bytes : stale) {
      if (memory_.contains(bytes.allocation)) {
        memory_.taint(bytes, failure); // All or nothing per binding (T6 contract).
      }
    }
  } catch (...) {
    // Out of memory: the failure keeps only the bytes it already claimed
    // (R1-R3 hold; gone if it claimed none). The late failure stays queued;
    // the retry's new failure claims the whole stale set again, taking these
    // bytes over (T1), so this one goes with its last claim (G3).
    graph_.prune(failure);
    throw;
  }
  origin->status = LaunchStatus::Failed;
  for (Joined& each : joined) {
    if (each.launch->status == LaunchStatus::Ran) {
      each.launch->status = LaunchStatus::Failed;
    } else {
      each.launch->released.clear();
    }
  }
  graph_.prune(failure);
}

// ------------------------------------------------------------ reads

std::vector<Report> Device::stale_reports(const Binding& from) {
  refuse_inside_launch("stale_reports");
  synchronize();
  const BoundBytes bytes = memory_.resolve(from);
  std::vector<Report> reports;
  for (const FailureId failure : bytes.taint->failures(from.range)) {
    Report report = graph_.report(failure, from.allocation);
    // The first stale range of this failure within the read.
    bytes.taint->for_each_claim([&](FailureId claimant, ByteRange claimed) {
      if (claimant == failure && !report.stale && claimed.overlaps(from.range)) {
        report.stale = claimed.intersect(from.range);
      }
    });
    reports.push_back(std::move(report));
  }
  return reports;
}

ReadOutcome Device::read(const Binding& from, std::span<std::byte> into) {
  refuse_inside_launch("read");
  synchronize();
  const BoundBytes bytes = memory_.resolve(from);
  if (into.size() != from.range.size()) {
    throw Exception(Error::invalid_binding("a read of " + to_string(from.allocation) + " bytes " +
                                           to_string(from.range) + " into " +
                                           std::to_string(into.size()) + " bytes"));
  }
  if (bytes.taint->failure(from.range)) {
    return ReadOutcome{stale_reports(from)};
  }
  if (auto error = backend_.copy_out(into.data(), bytes.data + from.range.begin(), into.size())) {
    throw Exception(std::move(*error));
  }
  return ReadOutcome{};
}

std::vector<std::byte> Device::read_bytes(const Binding& from) {
  refuse_inside_launch("read_bytes");
  // The binding first (P3): the result is sized by it, so a range past the
  // end must throw InvalidBinding before anything that size is allocated.
  (void)memory_.resolve(from);
  std::vector<std::byte> bytes(static_cast<std::size_t>(from.range.size()));
  ReadOutcome outcome = read(from, bytes);
  if (!outcome) {
    throw StaleRead(std::move(outcome.reports));
  }
  return bytes;
}

void Device::check_invariants() const {
  graph_.check_invariants();
  memory_.check_invariants();
  const std::vector<const Taint*> carriers = memory_.carriers();
  check_refcounts(graph_, carriers);
}

} // namespace taintpool
