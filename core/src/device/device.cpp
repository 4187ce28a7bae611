#include <taintpool/device/device.hpp>
#include <taintpool/taint.hpp>

#include <algorithm>
#include <atomic>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "../engine/words.hpp"

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

// ------------------------------------------------------------ LaunchVerdict

LaunchVerdict::LaunchVerdict(LaunchResult result) {
  if (result.status != LaunchStatus::Ran || result.failure || result.needed || result.error ||
      !result.unwritten.empty()) {
    details_ = std::make_unique<LaunchResult>(std::move(result));
  }
}

const LaunchResult& LaunchVerdict::result() const noexcept {
  static const LaunchResult bare_ran;
  return details_ ? *details_ : bare_ran;
}

LaunchResult LaunchVerdict::take() {
  if (!details_) {
    return LaunchResult{};
  }
  LaunchResult result = std::move(*details_);
  details_.reset();
  return result;
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

namespace {

/// Room for a race's message (O4) without a second allocation in the
/// common case: the fixed words are about 140 bytes, each number at most
/// 20 digits, and a kernel name past this grows the string once. Built by
/// appends into one string: the operator+ chains before took 8-10
/// allocations per race, which stream_fuzzer provokes on purpose (issue 13).
/// The words are unchanged.
constexpr std::size_t kRaceMessageReserve = 256;

/// to_string(StreamId) appended: its one spelling ("stream 3"), which fits
/// std::string's inline buffer for every number below 10^8, so it allocates
/// nothing.
void append_stream(std::string& text, StreamId stream) {
  text += to_string(stream);
}

/// The Device whose body this thread is running, if any (O5: a body must
/// not call back into its own Device).
/// Per-thread state by design, set and restored by run_body.
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables)
thread_local const Device* body_owner = nullptr;

/// The process-wide Device counter (StreamIds name their Device by it).
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables)
std::atomic<std::uint32_t> next_serial{1};

/// The stored error names the kernel, so a report says who left the bytes
/// unwritten; `suffix` ends it (attribute()'s "reported when the device
/// synchronised"). Built in one string sized for the whole text: appended
/// piece by piece it took two to four allocations per failed launch, one
/// more for a late failure's suffix (issue 13; the fuzzers fail launches on
/// purpose). The words are unchanged.
Error named(std::string_view kernel, const Error& error, std::size_t ignored_ranges,
            std::string_view suffix = {}) {
  constexpr std::string_view ignored_head = " (";
  constexpr std::string_view ignored_tail =
      " reported written ranges lay outside their outputs and were ignored)";
  constexpr std::size_t longest_count = 20; // Digits of the largest std::size_t.
  const std::string_view what =
      error.message().empty() ? name(error.kind()) : std::string_view(error.message());
  std::string message;
  message.reserve(
      kernel.size() + 2 + what.size() + suffix.size() +
      (ignored_ranges != 0 ? ignored_head.size() + longest_count + ignored_tail.size() : 0));
  message.append(kernel).append(": ").append(what);
  if (ignored_ranges != 0) {
    message.append(ignored_head).append(std::to_string(ignored_ranges)).append(ignored_tail);
  }
  message.append(suffix);
  return Error(error.kind(), std::move(message));
}

/// `whole` less every range of `cut` (same coordinates), in order.
void subtract_ranges(ByteRange whole, std::span<const ByteRange> cut, std::vector<ByteRange>& out) {
  out.clear();
  out.push_back(whole);
  for (const ByteRange taken : cut) {
    std::vector<ByteRange> kept;
    kept.reserve(out.size() + 1);
    for (const ByteRange piece : out) {
      if (!piece.overlaps(taken)) {
        kept.push_back(piece);
        continue;
      }
      if (piece.begin() < taken.begin()) {
        kept.push_back(ByteRange::of(piece.begin(), taken.begin()));
      }
      if (taken.end() < piece.end()) {
        kept.push_back(ByteRange::of(taken.end(), piece.end()));
      }
    }
    out = std::move(kept);
  }
}

/// A launch's read and write bindings: a plan's own, or `given` (a plain
/// launch's). A launch through a plan is given none (Device::launch(plan,
/// ...)): its bindings are looked up only off the clean path, which is all
/// that reads them, since spans loaded at entry stay live across the body's
/// call and were spilled to the frame on every launch (issue 11, item 7).
[[gnu::always_inline]] inline std::span<const Binding> reads_of(const LaunchPlan* plan,
                                                                std::span<const Binding> given) {
  return plan != nullptr ? plan->reads() : given;
}
[[gnu::always_inline]] inline std::span<const Binding> writes_of(const LaunchPlan* plan,
                                                                 std::span<const Binding> given) {
  return plan != nullptr ? plan->writes() : given;
}

/// The provisional id as run_flat keeps it (0: none) and as the cold ends
/// take it.
std::optional<FailureId> provisional_of(std::uint64_t raw) {
  return raw != 0 ? std::optional<FailureId>(FailureId::from_raw(raw)) : std::nullopt;
}

/// Runs `work` out of line, in a function the compiler takes as cold: the
/// branch of the launch path that leads here goes to the .cold section,
/// out of the plain launch's lines, and its locals stay in registers.
/// Why: every unusual end left inline was code the plain path jumped over
/// and locals it kept on the stack for it (issue 11, item 7; bench/RESULTS.md,
/// "The launch path shortened": 17-18 instructions fewer per plain launch).
/// Give `work` its values by copy: a capture by reference pins the
/// caller's locals to memory on the hot path too (that cost more than the
/// cold blocks saved). Only for the unusual ends, never the plain work.
template <class Work>
[[gnu::cold, gnu::noinline]] decltype(auto) cold_call(Work&& work) {
  return std::forward<Work>(work)();
}

/// T3 for a read binding whose taint holds a claim (cold: clean reads, the
/// common case, never call it).
[[gnu::cold, gnu::noinline]] bool claims_failure(const Taint& taint, ByteRange range) noexcept {
  return taint.failure(range).has_value();
}

/// Out of line: the refusal's message is built only when it is thrown.
[[noreturn]] void throw_inside_body(const char* call) {
  throw std::logic_error(std::string("Device::") + call +
                         " was called from a body on its own device: a body must not launch, "
                         "write, read, synchronize or create buffers on the device running it");
}

} // namespace

/// The Device's mutex, refusing a call from inside one of its own bodies
/// (which holds it already: O5).
class Device::Lock {
 public:
  /// `call` names the refused call in the error.
  /// Inline (with the mutex's fast path) into every call: a launch's lock
  /// is a few instructions, not a frame (issue 11, item 7).
  [[gnu::always_inline]] Lock(Device& device, const char* call)
      : device_(device) {
    if (body_owner == &device) [[unlikely]] {
      throw_inside_body(call);
    }
    device_.mutex_.lock();
  }
  [[gnu::always_inline]] ~Lock() { device_.mutex_.unlock(); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;
  Lock(Lock&&) = delete;
  Lock& operator=(Lock&&) = delete;

 private:
  Device& device_;
};

Device::Device(Backend& backend)
    : Device(backend, DeviceOptions{}) {
}

Device::Device(Backend& backend, MemoryConfig config)
    : Device(backend,
             DeviceOptions{std::move(config), StreamOrdering::Wait, UnwrittenReads::Skip}) {
}

Device::Device(Backend& backend, DeviceOptions options)
    : backend_(backend)
    , backend_data_(backend.backend_data())
    , reports_late_(backend.reports_late_failures())
    , ordering_(options.ordering)
    , unwritten_reads_(options.unwritten_reads)
    , serial_(next_serial.fetch_add(1, std::memory_order_relaxed))
    , memory_(backend.storage(), graph_,
              options.memory ? std::move(*options.memory) : backend.memory_config())
    , streams_(backend, serial_) {
  if (ordering_ == StreamOrdering::Detect) {
    streams_.order().track_every_allocation(); // Races name both accesses (O4).
  }
}

Device::~Device() = default;

void Device::reset() {
  const Lock lock(*this, "reset");
  // What can fail comes first, while nothing has changed: every stream's
  // work finished (the pins drop), then the backend's own synchronize,
  // whose late failures name launches of the Device as it was and are
  // dropped with it (see device.hpp).
  streams_.finish_all();
  static_cast<void>(backend_.synchronize());
  // From here nothing needs memory (clear_scope_lists tops up the log's
  // spares only where it can), and nothing throws but the graph's R1
  // check at the end. Freed, not kept: its block is the backend's list of
  // late failures, moved out by synchronize(), so the backend allocates a
  // new one with the next late failure; kept here, it would be freed by
  // the next job's synchronize instead, and the job that allocated it
  // would end with its heap grown (see clear_scope_lists). Emptied only
  // now: had the synchronize above thrown, the failures not yet
  // attributed would have been lost with it.
  unattributed_ = std::vector<LateFailure>{};
  clear_scope_lists();
  restart_streams();
  memory_.restart(); // Every allocation ended, every page back (P1), ids from the first again.
  graph_.clear();    // Nothing tags a node now, unless the caller did (std::logic_error).
}

void Device::clear_scope_lists() noexcept {
  reports_late_ = backend_.reports_late_failures();
  reads_ = {};
  writes_ = {};
  read_taints_ = {};
  write_taints_ = {};
  read_accesses_ = {};
  write_accesses_ = {};
  // Between calls the scope's lists are empty already (each call empties
  // what it filled); cleared again, not freed, so a reset cannot leave a
  // handle or a tag behind whatever ended the last call.
  hazards_.clear();
  pins_.clear();
  prior_.clear();
  prior_held_.clear();
  released_.clear();
  named_only_ = false;
  named_.clear();
  // The log's entries retire as trim_log() retires them: their lists'
  // capacity kept for the next job's entries, up to kSpareLog. Each kept
  // one gets the room of kLogListRoom bindings a list now, charged to the
  // job that ends here (a no-op once it has it), so a later job's launch
  // refills a spare without growing it. What that buys the caller who
  // resets per job (a request, a test case, a fuzz input): each job frees
  // what it allocates, so the heap compared before and after a job — by a
  // leak monitor, or libFuzzer's leak check — is flat, rather than growing
  // by a spare's block in whichever job first overfills it. Costs at most
  // kSpareLog * 5 small blocks (four lists and the name), once. Out of memory for it leaves a spare
  // as it was: only capacity.
  while (!log_.empty()) {
    if (spare_log_.size() < spare_log_.capacity()) {
      spare_log_.push_back(std::move(log_.front()));
    }
    log_.pop_front();
  }
  for (LoggedLaunch& spare : spare_log_) {
    try {
      spare.kernel.reserve(kLogKernelRoom);
      for (std::vector<Binding>* list :
           {&spare.reads, &spare.writes, &spare.released, &spare.named}) {
        list->reserve(kLogListRoom);
      }
    } catch (const std::bad_alloc&) {
      break; // Only capacity: the spare serves as it is.
    }
  }
  stale_inputs_.clear();
  // Destroyed, not kept for refilling as between exchanges: a kept report's
  // paths and texts would be freed by the next job's exchanges, so the job
  // that made them would end with its heap grown (see unattributed_ in
  // reset()).
  input_reports_.clear();
  input_reports_used_ = 0;
  exchange_recorded_.clear();
  exchange_stale_.clear();
  exchange_clean_.clear();
  input_held_.clear();
  suspect_.clear();
  next_launch_ = 1;
  finished_ = LaunchResult{};
  plain_work_ = true;
  sites_ = CreationSites{};
}

void Device::restart_streams() noexcept {
  // Before memory_.restart(): the table destroys the streams it made and
  // drops its pins (handles into memory_, which restart() must find gone).
  // Restarted in place, not built again, so this allocates nothing and a
  // reset cannot fail half-way for memory. The new serial makes every
  // StreamId and plan of before name another Device. The tracking mode of
  // detect mode (O4) is kept by the restart.
  serial_ = next_serial.fetch_add(1, std::memory_order_relaxed);
  streams_.restart(serial_);
}

// ------------------------------------------------------------ streams

StreamId Device::create_stream() {
  const Lock lock(*this, "create_stream");
  return streams_.create();
}

void Device::destroy_stream(StreamId stream) {
  const Lock lock(*this, "destroy_stream");
  streams_.destroy(stream);
}

StreamStats Device::stream_stats() {
  const Lock lock(*this, "stream_stats");
  return streams_.stats();
}

// ------------------------------------------------------------ buffers

Allocation Device::create_buffer(std::uint64_t size, StreamId stream) {
  const Lock lock(*this, "create_buffer");
  const std::uint32_t slot = streams_.slot(stream);
  if (!ordering_active()) {
    return memory_.allocate(size, slot);
  }
  streams_.poll(); // Learn what completed: held allocations may end now (O3).
  Allocation made = [&] {
    try {
      return memory_.allocate(size, slot);
    } catch (const Exception& error) {
      if (error.kind() != ErrorKind::OutOfMemory) {
        throw;
      }
    }
    // The last step before OutOfMemory (O3): wait for every stream, so
    // every held allocation is let go and every lane's free memory can go
    // back.
    streams_.finish_all();
    memory_.sweep();
    return memory_.allocate(size, slot);
  }();
  streams_.order().created(StreamAccess{made.id(), made.whole().range, size, slot});
  return made;
}

Allocation Device::create_buffer(std::uint64_t size, StreamId stream, std::string_view site) {
  Allocation made = create_buffer(size, stream);
  if (memory_.config().fresh_bytes == FreshBytes::NeverWritten && !site.empty()) {
    // N3, cold: one map entry, pruned of ended buffers as it grows.
    const Lock lock(*this, "create_buffer");
    sites_.note(made.id(), site, [&](AllocationId id) { return memory_.contains(id); });
  }
  return made;
}

Allocation Device::create_buffer(std::span<const std::byte> bytes, StreamId stream) {
  Allocation buffer = create_buffer(bytes.size(), stream);
  write(stream, buffer.whole(), bytes);
  return buffer;
}

void Device::sweep() {
  const Lock lock(*this, "sweep");
  memory_.sweep();
}

void Device::cleanup() {
  const Lock lock(*this, "cleanup");
  memory_.cleanup();
}

template <bool Reading>
[[gnu::always_inline]] inline void Device::note_taint(Resolved& found, const Taint& taint,
                                                      ByteRange range) const {
  // A read is dirty when it would skip (S1); an output when it holds a
  // claim the scope must remember (S6) or take over. Called only for a
  // taint that is not clean: a clean one (no claim at all) answers in two
  // loads, which the callers ask inline in their loops (with the test in
  // here, the plain launch ran 6 instructions more). A read's claims are
  // asked out of line (cold: a stale read skips, the rare case); an
  // output's inline, since a fresh buffer's first write (N1) is common
  // under FreshBytes::NeverWritten.
  if constexpr (Reading) {
    found.dirty = found.dirty || claims_failure(taint, range);
  } else {
    found.dirty = true;
    // N1: the flat path's fresh check, here where the taint is in hand.
    const std::optional<FailureId> never_written = memory_.never_written_failure();
    found.fresh = found.fresh && Taint::inline_claims && never_written &&
                  taint.claims_only(*never_written, range);
  }
}

template <bool Reading>
[[gnu::always_inline]] inline Device::Resolved
Device::resolve_side(std::span<const Binding> bindings, std::uint32_t slot, bool ordering,
                     BoundBuffer* bound, Taint** taints, StreamAccess* accesses) {
  // One pass per side: look each binding up once (P3: a bad one throws here,
  // before anything is claimed), note what the fast paths need, and fill the
  // scratch by index (no per-element capacity check; allocation-free once
  // warm).
  // (Inlined into the launch, once per side: no call, no branch on the side.)
  Resolved found;
  for (std::size_t index = 0; index < bindings.size(); ++index) {
    const Binding& binding = bindings[index];
    const BoundBytes bytes = memory_.resolve_swept(binding);
    std::construct_at(bound + index, BoundBuffer{binding.allocation, binding.range,
                                                 bytes.data + binding.range.begin()});
    taints[index] = bytes.taint;
    if (!bytes.taint->is_clean()) [[unlikely]] {
      note_taint<Reading>(found, *bytes.taint, binding.range);
    }
    if (ordering) {
      std::construct_at(accesses + index,
                        StreamAccess{binding.allocation, binding.range, bytes.size, bytes.lane});
      found.crosses = found.crosses || bytes.lane != slot;
    }
  }
  return found;
}

template <bool Views>
[[gnu::always_inline]] inline void
Device::resolve_all(std::span<const Binding> reads, std::span<const Binding> writes,
                    std::uint32_t slot, bool ordering, Resolved& in, Resolved& out) {
  // Reads first, then writes, in one run of each scratch: what the body's
  // context views (bound_store_) is then one array, and each array costs
  // one capacity check per launch.
  const std::size_t count = reads.size() + writes.size();
  BoundBuffer* bound = bound_store_.reserve(count);
  Taint** taints = taint_store_.reserve(count);
  StreamAccess* accesses = ordering ? access_store_.reserve(count) : nullptr;
  in = resolve_side<true>(reads, slot, ordering, bound, taints, accesses);
  out = resolve_side<false>(writes, slot, ordering, bound + reads.size(), taints + reads.size(),
                            ordering ? accesses + reads.size() : nullptr);
  if constexpr (Views) {
    point_views(reads.size(), writes.size(), ordering);
  }
}

[[gnu::always_inline]] inline void Device::clear_fresh_outputs(std::span<Taint* const> outputs,
                                                               ErrorGraph& graph) noexcept {
  for (Taint* const output : outputs) {
    output->clear(graph);
  }
}

void Device::point_views(std::size_t reads, std::size_t writes, bool ordering) noexcept {
  // Out of line: the general scope and exchanges call it, and a plain
  // launch only where it leaves the clean path (adopt_views).
  BoundBuffer* bound = bound_store_.data();
  Taint** taints = taint_store_.data();
  reads_ = {bound, reads};
  writes_ = {bound + reads, writes};
  read_taints_ = {taints, reads};
  write_taints_ = {taints + reads, writes};
  if (ordering) {
    StreamAccess* accesses = access_store_.data();
    read_accesses_ = {accesses, reads};
    write_accesses_ = {accesses + reads, writes};
  } else {
    read_accesses_ = {};
    write_accesses_ = {};
  }
}

template <bool Reading>
[[gnu::always_inline]] inline Device::Resolved Device::planned_side(const LaunchPlan& plan,
                                                                    bool ordering, bool clean) {
  // What resolve_side() finds, from the plan: the bound buffers, taints and
  // accesses are the plan's (fixed while it holds its allocations), so only
  // the taints are read — the same checks (note_taint), in the same order,
  // and only when some taint of the plan is not clean (`clean`: none is).
  // The views resolve_side() fills are the plan's too, adopted where they
  // are needed (adopt_views).
  Resolved found;
  if (!clean) [[unlikely]] {
    const std::span<Taint* const> taints = Reading ? plan.read_taints_ : plan.write_taints_;
    const std::span<const Binding> bindings = Reading ? plan.read_bindings_ : plan.write_bindings_;
    for (std::size_t index = 0; index < taints.size(); ++index) {
      if (!taints[index]->is_clean()) {
        note_taint<Reading>(found, *taints[index], bindings[index].range);
      }
    }
  }
  found.crosses = ordering && (Reading ? plan.owned_.reads_cross : plan.owned_.writes_cross);
  return found;
}

void Device::adopt_views(const LaunchPlan* plan, bool ordering, std::size_t reads,
                         std::size_t writes) noexcept {
  // The plan's views, made with it (LaunchPlan::derive): what resolve_all()
  // would have filled the scratch with. Null: a plain launch's own, which
  // resolve_all<false> filled without pointing the views at them. Out of
  // line: only a launch leaving the clean plain path gets here.
  if (plan == nullptr) {
    point_views(reads, writes, ordering);
    return;
  }
  reads_ = plan->context_.reads_;
  writes_ = plan->context_.writes_;
  read_taints_ = plan->read_taints_;
  write_taints_ = plan->write_taints_;
  read_accesses_ = ordering ? plan->read_accesses_ : std::span<const StreamAccess>();
  write_accesses_ = ordering ? plan->write_accesses_ : std::span<const StreamAccess>();
}

void Device::resolve_bindings(std::span<const Binding> reads, std::span<const Binding> writes,
                              std::uint32_t slot) {
  // Out of line, for the scopes that are not the hot launch (exchanges).
  const bool ordering = ordering_active();
  Resolved in;
  Resolved out;
  resolve_all<true>(reads, writes, slot, ordering, in, out);
}

// ------------------------------------------------------------ launches

template <bool Clean>
[[gnu::always_inline]] inline void
Device::log_launch(std::uint64_t launch, std::string_view kernel, std::span<const Binding> reads,
                   std::span<const Binding> writes, LaunchStatus status, StreamPoint work,
                   const LaunchPlan* plan) {
  // The common case, decided without touching the log: nothing is logged,
  // the Device is not detecting races, and the backend has nothing
  // unconfirmed from this launch on (one virtual call, and only for a
  // backend that can report late and may hold something unconfirmed).
  if (log_.empty() && ordering_ != StreamOrdering::Detect) [[likely]] {
    if (!reports_late_ || !backend_.may_hold_unconfirmed()) {
      return;
    }
    const std::optional<std::uint64_t> oldest = backend_.oldest_unconfirmed_launch();
    if (!oldest || *oldest > launch) {
      return;
    }
  }
  if constexpr (Clean) {
    // The plain path's success released and named nothing, and did not
    // clear what an earlier launch left (run_flat).
    released_.clear();
    named_only_ = false;
    named_.clear();
  }
  log_if_unconfirmed(launch, kernel, reads_of(plan, reads), writes_of(plan, writes), status, work);
}

LaunchResult Device::launch_locked(std::uint32_t slot, std::string_view kernel,
                                   std::span<const Binding> reads, std::span<const Binding> writes,
                                   KernelBody body) {
  memory_.sweep();
  const bool ordering = ordering_active();
  // Every binding is checked before anything is claimed (P3, S1).
  Resolved in;
  Resolved out;
  resolve_all<true>(reads, writes, slot, ordering, in, out);
  return launch_resolved(slot, kernel, reads, writes, body, in, out);
}

LaunchResult Device::launch_resolved(std::uint32_t slot, std::string_view kernel,
                                     std::span<const Binding> reads,
                                     std::span<const Binding> writes, KernelBody body, Resolved in,
                                     Resolved out) {
  const bool ordering = ordering_active();
  released_.clear();
  named_only_ = false;
  named_.clear();
  const std::uint64_t launch = next_launch_++;

  // S1: decide before claiming. Only reads are checked (S5). A skip queues
  // no work, so it needs no ordering either.
  std::vector<UnwrittenRead> unwritten; // N2: filled only under UnwrittenReads::Report.
  if (in.dirty) [[unlikely]] {
    const std::optional<FailureId> never_written =
        unwritten_reads_ == UnwrittenReads::Report ? memory_.never_written_failure() : std::nullopt;
    for (std::size_t index = 0; index < reads_.size(); ++index) {
      const std::optional<FailureId> root = never_written
                                                ? stale_read_root(index, *never_written, unwritten)
                                                : read_taints_[index]->failure(reads_[index].range);
      if (root) {
        LaunchResult result = skip(kernel, *root, reads_[index].allocation);
        log_launch(launch, kernel, reads, writes, result.status, StreamPoint{});
        return result;
      }
    }
  }

  // O1-O4. The plain case — every binding is homed on this stream and no
  // allocation has a cross-stream record — is ordered by the stream alone:
  // nothing to plan, wait for or pin (O2), and the work only takes its place
  // in the queue. Detect mode (O4) is never plain: a race is found between
  // two accesses, so every access must leave its record, even one on its
  // home stream with nothing recorded yet (records of completed work are
  // pruned, so "no record" does not mean "no stream ever touched it").
  const bool plain = !ordering || (!streams_.order().tracks_every_allocation() && !in.crosses &&
                                   !out.crosses && !streams_.order().any_record());
  if (!plain) {
    order(slot, launch); // Waits queued (or races noted) before the work is.
  }
  LaunchResult result = [&] {
    try {
      return enter(slot, launch, kernel, body, !out.dirty, out.dirty && outputs_fresh());
    } catch (...) {
      // S3: the body may have queued work before it threw.
      const StreamPoint work = ordering ? queue_work(slot, launch, plain) : StreamPoint{};
      log_launch(launch, kernel, reads, writes, LaunchStatus::Failed, work);
      throw;
    }
  }();
  StreamPoint work;
  if (ordering) {
    work = queue_work(slot, launch, plain);
    if (!plain && !hazards_.empty()) {
      taint_races(kernel, slot, launch, result);
    }
  }
  log_launch(launch, kernel, reads, writes, result.status, work);
  if (!unwritten.empty()) [[unlikely]] {
    result.unwritten = std::move(unwritten);
  }
  return result;
}

// ------------------------------------------------------------ the plain launch
//
// The common launch, flat: every read clean, every output clean, nothing to
// order across streams, the body succeeds. One function from the lock to
// the answer — the resolution, the provisional id, the body's call, the
// prune and the log's check inline — so the path has one frame (the body's
// and the backend's calls aside) and builds no LaunchResult. Whatever is not
// that goes, at the first point it is known, to the out-of-line path that
// handles every case (launch_resolved, finish_plain, abandon_plain), which
// then does exactly what the general scope would have done from that point:
// the plain path changes nothing before it decides, and after the body it
// has done exactly what enter()'s clean-output path does (G1 id minted,
// nothing claimed), so either way T1-T6, S1-S6, O1-O5, N1-N2 hold as before.

template <bool Plain>
[[gnu::always_inline]] inline Device::PlainEnd
Device::run_flat(std::uint32_t slot, std::string_view kernel, std::span<const Binding> reads,
                 std::span<const Binding> writes, KernelBody body, bool ordering, bool fresh,
                 const LaunchPlan* plan) {
  // released_ and named_ (what the log copies of a launch that failed in
  // part or named its writes) are not cleared here but where they are
  // read: finish_plain and abandon_plain clear them first, and the success
  // below logs through log_launch<true>, which clears them only when it
  // logs — a cache line and eight instructions a plain launch fewer (issue
  // 11, item 7).
  const std::uint64_t launch = next_launch_++;
  if constexpr (!Plain) {
    order(slot, launch); // Waits queued before the work is, as launch_resolved() does.
  }
  // A plan's context is built with it (its views are the plan's bound
  // buffers, its stream is `slot`'s: the lock found it live), and a launch
  // sets its number and name in place (under the lock: launch_plan.hpp) —
  // two stores, where a copy on the frame was ten more instructions and
  // two more lines written (issue 11, item 7). A plain launch's views the
  // scratch resolve_all() filled, reads then writes (the Device's own views
  // are not pointed at it on the clean path). Ordered (not Plain: from
  // launch_not_plain, plan or not) the views were adopted on the way
  // there, and are the only record of a plan's bindings here. (Which one
  // is known where run_flat is inlined: `built` is dead for a plan.)
  const bool planned = Plain && plan != nullptr;
  const BoundBuffer* const bound = bound_store_.data();
  const KernelContext built =
      planned  ? KernelContext(0, {}, {}, {}, nullptr) // Unused (dead where inlined).
      : !Plain ? KernelContext(launch, kernel, reads_, writes_, backend_data_, streams_.id(slot),
                               streams_.handle(slot))
               : KernelContext(launch, kernel, {bound, reads.size()},
                               {bound + reads.size(), writes.size()}, backend_data_,
                               streams_.id(slot), streams_.handle(slot));
  const KernelContext& context = planned ? plan->context_.relaunch(launch, kernel) : built;
  // G1: a scope with outputs mints its provisional id; with every output
  // clean it claims nothing unless the body fails or throws (see enter()).
  // So the id is minted now and its node made only when the scope claims
  // (`deferred`): a successful launch writes no node and prunes none. The
  // node can always be made later — an inline slot is vacant now, and
  // nothing inserts into the graph while the body runs (the lock, and O5).
  // Kept as its raw value (0: none), not a std::optional: the optional
  // was built, copied and tested through the frame (issue 11, item 7).
  std::uint64_t provisional = 0;
  bool deferred = false;
  // Not writes_ (a clean plan's views are not adopted), nor a plan's
  // writes(): the count is in the plan's first line.
  const bool writes_some =
      plan != nullptr ? plan->owned_.arrays.size() != plan->owned_.reads : !writes.empty();
  if (writes_some) {
    try {
      provisional = graph_.reserve_provisional_raw();
      deferred = provisional != 0;
      if (!deferred) [[unlikely]] {
        // Both slots taken: the table.
        provisional = cold_call([this] { return graph_.insert_provisional(); }).raw();
      }
    } catch (...) {
      // Ids exhausted (never, in practice): as the general scope, the
      // launch is queued and logged as failed, and the error propagates.
      if constexpr (Plain) { // Ordered: adopted before run_flat (launch_not_plain).
        adopt_views(plan, ordering, reads.size(), writes.size());
      }
      abandon_plain(slot, launch, kernel, reads_of(plan, reads), writes_of(plan, writes),
                    std::nullopt);
    }
  }
  // Inline by force: the plain and the planned launch() and submit() all
  // reach this, and with four callers g++ 12 made it a call, whose
  // by-reference captures then pinned this frame's locals to the stack
  // (59 instructions more per plain launch: bench/RESULTS.md, launch8).
  const auto run = [&]() __attribute__((always_inline)) {
    try {
      return run_body(body, context);
    } catch (...) {
      if (deferred) {
        graph_.materialize_provisional(FailureId::from_raw(provisional));
      }
      if constexpr (Plain) { // Ordered: adopted before run_flat (launch_not_plain).
        adopt_views(plan, ordering, reads.size(), writes.size());
      }
      abandon_plain(slot, launch, kernel, reads_of(plan, reads), writes_of(plan, writes),
                    provisional_of(provisional)); // S3; rethrows
    }
  };
  const LaunchOutcome outcome = run();
  if (!outcome.whole_success()) [[unlikely]] {
    return cold_call([=, this, answer = &outcome] {
      if (deferred) {
        graph_.materialize_provisional(FailureId::from_raw(provisional));
      }
      if constexpr (Plain) { // Ordered: adopted before run_flat (launch_not_plain).
        adopt_views(plan, ordering, reads.size(), writes.size());
      }
      finished_ = finish_plain(slot, launch, kernel, reads_of(plan, reads), writes_of(plan, writes),
                               provisional_of(provisional), *answer, fresh);
      return PlainEnd::Finished;
    });
  }
  if (fresh) [[unlikely]] {
    // N1: a whole write (anything else went cold above). The taints are the
    // plan's, or the scratch's that resolve_all() filled, reads then writes:
    // the views are not read on this path.
    clear_fresh_outputs(plan != nullptr ? plan->write_taints_
                                        : std::span<Taint* const>(
                                              taint_store_.data() + reads.size(), writes.size()),
                        graph_);
  }
  if (provisional != 0 && !deferred) [[unlikely]] {
    // G5: it claimed nothing, so it goes.
    cold_call([this, failure = FailureId::from_raw(provisional)] { graph_.prune(failure); });
  }
  StreamPoint work;
  if (ordering) {
    work = Plain ? streams_.order().queued(slot, launch) : queue_work(slot, launch, false);
  }
  log_launch<true>(launch, kernel, reads, writes, LaunchStatus::Ran, work, plan);
  return PlainEnd::Ran;
}

[[gnu::always_inline]] inline Device::PlainEnd
Device::launch_plain(std::uint32_t slot, std::string_view kernel, std::span<const Binding> reads,
                     std::span<const Binding> writes, KernelBody body, Resolved& general_in,
                     Resolved& general_out, const LaunchPlan* plan) {
  memory_.sweep();
  const bool ordering = ordering_active();
  // What each side found. A plan's are handed to the caller only on the
  // General end: written through the references on every launch, they
  // were six byte stores to the frame on its clean path (issue 11, item 7).
  // A plain launch's are written in place: resolve_all() fills them, and
  // copying them out cost its General end (every crossing launch) more.
  // (Whether there is a plan is known where this is inlined.)
  Resolved planned_in;
  Resolved planned_out;
  Resolved& in = plan != nullptr ? planned_in : general_in;
  Resolved& out = plan != nullptr ? planned_out : general_out;
  // Every binding is checked before anything is claimed (P3, S1); a plan's
  // were checked when it was made, and cannot have changed since (it holds
  // them: launch_plan.hpp).
  if (plan != nullptr) {
    // The common case in one pass over every taint, reads and writes
    // alike: all clean. `&`, not `&&`, so no branch per binding (spelled
    // with casts for clang-tidy; g++ 12 gives 332 instructions per
    // host-plan launch so, 338 with `&&`, 334-335 with an unsigned
    // accumulator).
    bool clean = true;
    for (const Taint* taint : std::span(plan->taints_, plan->owned_.arrays.size())) {
      clean = static_cast<bool>(static_cast<unsigned>(clean) &
                                static_cast<unsigned>(taint->is_clean()));
    }
    in = planned_side<true>(*plan, ordering, clean);
    out = planned_side<false>(*plan, ordering, clean);
    // The views (reads_, writes_, their taints and accesses) are read only
    // off the clean plain path: the dirty checks and fresh outputs below,
    // the general scope, and run_flat's cold ends. So a clean plan's are
    // adopted only where it leaves that path (adopt_views), and a clean
    // plain launch writes none of them (issue 11, item 7).
    if (!clean) [[unlikely]] {
      adopt_views(plan, ordering, reads.size(), writes.size());
    }
  } else {
    // The views are pointed at the scratch only off the clean path, as a
    // plan's are (adopt_views): 12 stores a launch fewer (issue 11, item 7).
    resolve_all<false>(reads, writes, slot, ordering, in, out);
  }
  // O2 plain: no binding crosses streams and no cross-stream record exists
  // (detect mode never is: O4 needs every access recorded).
  const bool plain = !ordering || (!streams_.order().tracks_every_allocation() && !in.crosses &&
                                   !out.crosses && !streams_.order().any_record());
  // N1: outputs whose every claim is the never-written node's, within their
  // own binding (a fresh buffer's first write), are plain too, as in
  // enter(): a success releases what it wrote, a failure claims over them.
  // Without this, trusted mode's first write took this path and the mode's
  // the general one, and the mode cost ~15 ns more than its budget.
  const bool fresh = out.dirty && out.fresh && !in.dirty && plain && Taint::inline_claims;
  if (in.dirty || (out.dirty && !fresh) || !plain || !Taint::inline_claims) [[unlikely]] {
    // The views are read from here on (launch_not_plain).
    adopt_views(plan, ordering, reads.size(), writes.size());
    if (plan != nullptr) {
      general_in = in;
      general_out = out;
    }
    return PlainEnd::General; // Nothing done yet: launch_not_plain() decides.
  }
  return run_flat<true>(slot, kernel, reads, writes, body, ordering, fresh, plan);
}

// The plain path's ends off the hot path (abandon_plain, release_plain_fresh,
// finish_plain): the work takes its place in its stream's queue (O2 plain:
// nothing to wait for; ordered: its accesses recorded, its pins held) and
// the launch is logged with how it ended.
void Device::queue_and_log(std::uint32_t slot, std::uint64_t launch, std::string_view kernel,
                           std::span<const Binding> reads, std::span<const Binding> writes,
                           LaunchStatus status) {
  const StreamPoint work =
      ordering_active() ? queue_work(slot, launch, plain_work_) : StreamPoint{};
  log_launch(launch, kernel, reads, writes, status, work);
}

void Device::abandon_plain(std::uint32_t slot, std::uint64_t launch, std::string_view kernel,
                           std::span<const Binding> reads, std::span<const Binding> writes,
                           std::optional<FailureId> provisional) {
  // Inside the handler of the body's exception: what enter() and
  // launch_locked() do there, in their order. Nothing was released or
  // named (run_flat does not clear these per launch).
  released_.clear();
  named_only_ = false;
  named_.clear();
  if (provisional) {
    claim_write_set(*provisional);
    tear_down(*provisional, kernel); // S3
  }
  queue_and_log(slot, launch, kernel, reads, writes, LaunchStatus::Failed);
  throw;
}

void Device::release_plain_fresh(std::uint32_t slot, std::uint64_t launch, std::string_view kernel,
                                 std::span<const Binding> reads, std::span<const Binding> writes,
                                 FailureId provisional, const LaunchOutcome& outcome) {
  // N1, S6: what enter()'s fresh path does after a success; if the release
  // runs out of memory, the unreleased bytes stay never-written (stale, the
  // safe direction) and the launch is queued and logged as failed, as the
  // general path does when enter() throws.
  try {
    release_fresh_outputs(outcome);
  } catch (...) {
    graph_.prune(provisional);
    queue_and_log(slot, launch, kernel, reads, writes, LaunchStatus::Failed);
    throw;
  }
}

LaunchResult Device::finish_plain(std::uint32_t slot, std::uint64_t launch, std::string_view kernel,
                                  std::span<const Binding> reads, std::span<const Binding> writes,
                                  std::optional<FailureId> provisional,
                                  const LaunchOutcome& outcome, bool fresh) {
  // The body failed, or succeeded naming the only ranges it wrote (S6):
  // what enter()'s clean-output path does then, then the queue and the log.
  // The lists the log copies start empty (run_flat does not clear them).
  released_.clear();
  named_only_ = false;
  named_.clear();
  LaunchResult result;
  if (!provisional) {
    if (!outcome.ok()) {
      result.status = LaunchStatus::Failed;
      result.error = named(kernel, *outcome.error(), outcome.written().size());
    }
  } else if (outcome.ok()) {
    note_named_ranges(outcome); // Clean bytes stay clean (S6); noted for the log.
    if (fresh) {
      // Named ranges released; every other byte keeps its never-written claim.
      release_plain_fresh(slot, launch, kernel, reads, writes, *provisional, outcome);
    }
    graph_.prune(*provisional);
  } else {
    claim_write_set(*provisional);
    result = failed(*provisional, kernel, outcome); // S1, S2
  }
  queue_and_log(slot, launch, kernel, reads, writes, result.status);
  return result;
}

template <class Answer>
[[gnu::noinline]] Answer Device::launch_not_plain(std::uint32_t slot, std::string_view kernel,
                                                  std::span<const Binding> reads,
                                                  std::span<const Binding> writes, KernelBody body,
                                                  Resolved in, Resolved out) {
  // Not plain but ordering mode, every binding clean: the work plans,
  // waits, pins and records its accesses (O1-O3) — what launch_resolved()
  // does before and after the body, done at the same points — and stays
  // flat: once any binding has crossed streams, every later launch has
  // records to probe, so a pipeline's launches all took the general
  // scope. Detect mode (O4) may taint a launch's outputs with a race
  // after its body, so it never is.
  if (in.dirty || out.dirty || !ordering_active() || streams_.order().tracks_every_allocation() ||
      !Taint::inline_claims) {
    return Answer(launch_resolved(slot, kernel, reads, writes, body, in, out));
  }
  // The cold ends (abandon_plain, finish_plain) queue through
  // queue_and_log(), which asks plain_work_: false only while this runs.
  struct PlainAgain {
    bool& plain;
    explicit PlainAgain(bool& flag)
        : plain(flag) {}
    PlainAgain(const PlainAgain&) = delete;
    PlainAgain& operator=(const PlainAgain&) = delete;
    ~PlainAgain() { plain = true; }
  } const plain_again(plain_work_);
  plain_work_ = false;
  if (run_flat<false>(slot, kernel, reads, writes, body, true, false, nullptr) == PlainEnd::Ran) {
    return Answer{};
  }
  return Answer(std::move(finished_));
}

// Inline into launch() and submit(), its only callers: one frame fewer
// and one function's code lines fewer on every launch (issue 11, item 7).
template <class Answer>
[[gnu::always_inline]] inline Answer
Device::launch_as(const char* call, StreamId stream, std::string_view kernel,
                  std::span<const Binding> reads, std::span<const Binding> writes, KernelBody body,
                  const LaunchPlan* plan) {
  const Lock lock(*this, call);
  const std::uint32_t slot = streams_.slot(stream);
  Resolved in;
  Resolved out;
  const PlainEnd end = launch_plain(slot, kernel, reads, writes, body, in, out, plan);
  if (end == PlainEnd::Ran) [[likely]] {
    return Answer{};
  }
  // Both other ends through a cold call (by value, see cold_call). The
  // crossing launch of a pipeline pays the trampoline (~13 instructions of
  // ~1700); launch_not_plain itself stays a normal, speed-optimized function.
  // A plan's bindings are looked up here, where it is known whether there
  // is a plan (launch_as is inlined into each caller), not in the lambda.
  const std::span<const Binding> bound_reads = reads_of(plan, reads);
  const std::span<const Binding> bound_writes = writes_of(plan, writes);
  return cold_call([=, this] {
    if (end == PlainEnd::General) {
      return launch_not_plain<Answer>(slot, kernel, bound_reads, bound_writes, body, in, out);
    }
    return Answer(std::move(finished_));
  });
}

LaunchResult Device::launch(StreamId stream, std::string_view kernel,
                            std::span<const Binding> reads, std::span<const Binding> writes,
                            KernelBody body) {
  return launch_as<LaunchResult>("launch", stream, kernel, reads, writes, body, nullptr);
}

LaunchVerdict Device::submit(StreamId stream, std::string_view kernel,
                             std::span<const Binding> reads, std::span<const Binding> writes,
                             KernelBody body) {
  return launch_as<LaunchVerdict>("submit", stream, kernel, reads, writes, body, nullptr);
}

// ------------------------------------------------------------ plans

LaunchPlan Device::plan(StreamId stream, std::span<const Binding> reads,
                        std::span<const Binding> writes) {
  const Lock lock(*this, "plan");
  const std::uint32_t slot = streams_.slot(stream);
  memory_.sweep();
  LaunchPlan made;
  LaunchPlan::Owned& owned = made.owned_;
  owned.stream = stream;
  const std::size_t count = reads.size() + writes.size();
  owned.arrays = LaunchPlan::Arrays(count); // One block for every array (launch_plan.hpp).
  owned.reads = static_cast<std::uint32_t>(reads.size()); // Fewer than 2^32: Arrays checked.
  for (std::size_t index = 0; index < count; ++index) {
    const Binding& binding = index < reads.size() ? reads[index] : writes[index - reads.size()];
    // P3, as a launch checks it: NotFound or InvalidBinding, nothing held
    // (`made` and its handles go with the exception).
    const BoundBytes bytes = memory_.resolve_swept(binding);
    (index < owned.reads ? owned.reads_cross : owned.writes_cross) |= bytes.lane != slot;
    // Empty only when the last handle went (on another thread) since the
    // sweep: the allocation is ending, as a launch a moment later would
    // have found it.
    Allocation held = memory_.share(binding.allocation);
    if (!held) [[unlikely]] {
      throw Exception(Error::not_found(to_string(binding.allocation) +
                                       " no longer exists: its last handle was dropped"));
    }
    owned.arrays.add(
        binding, BoundBuffer{binding.allocation, binding.range, bytes.data + binding.range.begin()},
        bytes.taint, StreamAccess{binding.allocation, binding.range, bytes.size, bytes.lane},
        std::move(held));
  }
  made.derive(
      KernelContext(0, {}, {}, {}, backend_data_, streams_.id(slot), streams_.handle(slot)));
  return made;
}

namespace {

/// Out of line: the refusal's message is built only when it is thrown.
[[noreturn]] void throw_foreign_plan(const char* call) {
  throw std::invalid_argument(std::string("Device::") + call +
                              " was given a launch plan this device did not make (or a moved-from "
                              "or default-constructed one)");
}

} // namespace

LaunchResult Device::launch(const LaunchPlan& plan, std::string_view kernel, KernelBody body) {
  if (plan.owned_.stream.device() != serial_) [[unlikely]] {
    throw_foreign_plan("launch");
  }
  // The bindings are the plan's, looked up only off the clean path (reads_of).
  return launch_as<LaunchResult>("launch", plan.owned_.stream, kernel, {}, {}, body, &plan);
}

LaunchVerdict Device::submit(const LaunchPlan& plan, std::string_view kernel, KernelBody body) {
  if (plan.owned_.stream.device() != serial_) [[unlikely]] {
    throw_foreign_plan("submit");
  }
  return launch_as<LaunchVerdict>("submit", plan.owned_.stream, kernel, {}, {}, body, &plan);
}

// Inline into launch_locked, its one caller: a call's prologue and epilogue
// were a quarter of its cost on a fresh buffer's first write (N1).
[[gnu::always_inline]] inline bool Device::outputs_fresh() const noexcept {
  if (!Taint::inline_claims) {
    return false;
  }
  const std::optional<FailureId> never_written = memory_.never_written_failure();
  if (!never_written) {
    return false;
  }
  for (std::size_t index = 0; index < writes_.size(); ++index) {
    if (!write_taints_[index]->claims_only(*never_written, writes_[index].range)) {
      return false;
    }
  }
  return true;
}

std::optional<FailureId> Device::stale_read_root(std::size_t index, FailureId never_written,
                                                 std::vector<UnwrittenRead>& unwritten) {
  const ByteRange range = reads_[index].range;
  std::optional<FailureId> root;
  read_taints_[index]->for_each_claim([&](FailureId failure, ByteRange claimed) {
    if (!claimed.overlaps(range)) {
      return;
    }
    if (failure == never_written) {
      unwritten.push_back(UnwrittenRead{reads_[index].allocation, claimed.intersect(range)});
    } else if (!root) {
      root = failure; // Claims come in offset order: the lowest-offset one.
    }
  });
  return root;
}

[[gnu::noinline]] StreamPoint Device::queue_work(std::uint32_t slot, std::uint64_t launch,
                                                 bool plain) {
  if (plain) {
    return streams_.order().queued(slot, launch);
  }
  commit(slot, launch);
  return StreamPoint{slot, streams_.order().tail(slot), launch};
}

[[gnu::noinline]] void Device::order(std::uint32_t slot, std::uint64_t launch) {
  hazards_.clear();
  pins_.clear();
  streams_.order().plan(slot, read_accesses_, write_accesses_, hazards_);
  // O3: an allocation made on another stream is held until this work is
  // done, so its home stream cannot reuse the memory under it. Detect mode
  // (O4) holds every binding, the home stream's too: there a later launch on
  // another stream may write the memory's next allocation with nothing
  // ordering it after this work, and if this work read the memory, the
  // bytes it read are gone with no record left naming it as the reader to
  // taint. Held until complete, the memory is reused only once every use of
  // it finished, so a race never crosses allocations. Costs a handle copy
  // per binding, in the mode that already records every access.
  const bool hold_home = ordering_ == StreamOrdering::Detect;
  // The stream's newest pin as commit() will see it at each step: commit
  // hands the pins over in this order, so a binding of the allocation the
  // newest pin holds then moves that pin on, as StreamTable::pin would,
  // without a handle (a table probe and two atomic operations saved on a
  // pipeline's every crossing launch).
  std::optional<AllocationId> newest = streams_.last_pinned(slot);
  auto pin_bound = [&](std::span<const StreamAccess> accesses) {
    for (const StreamAccess& access : accesses) {
      if ((access.home == slot && !hold_home) || access.range.empty()) {
        continue;
      }
      if (access.allocation == newest) {
        pins_.push_back(PinTaken{access.allocation, Allocation{}});
        continue;
      }
      Allocation held = memory_.share(access.allocation);
      if (!held) {
        throw Exception(Error::not_found(
            to_string(access.allocation) +
            " no longer exists: its last handle was dropped while this launch was being made"));
      }
      pins_.push_back(PinTaken{access.allocation, std::move(held)});
      newest = access.allocation;
    }
  };
  pin_bound(read_accesses_);
  pin_bound(write_accesses_);
  if (hazards_.empty()) {
    return;
  }
  if (ordering_ == StreamOrdering::Wait) {
    streams_.order_after(slot, hazards_); // O1, O2: one event and one wait per source stream.
    hazards_.clear();
    return;
  }
  // O4, write after read: the earlier reader may have seen this launch's
  // bytes, so its outputs, and what was computed from them since, are
  // suspect — attributed as a late failure of that launch, before this one
  // runs (its own writes then land on top). Oldest reader first, as
  // synchronize attributes late failures: one reader's failure may reach a
  // later reader that consumed its outputs, and the order fixes which
  // failure each byte ends up with. A reader named by several hazards keeps
  // the first one's message (the rest find it failed already).
  for (const Hazard& hazard : hazards_) {
    streams_.count_race();
    if (hazard.conflict != Conflict::WriteAfterRead) {
      continue;
    }
    const bool logged = std::any_of(log_.begin(), log_.end(), [&](const LoggedLaunch& entry) {
      return entry.launch == hazard.earlier.launch;
    });
    if (!logged) {
      continue; // Its outputs already carry a failure, or it left the log.
    }
    std::string message;
    message.reserve(kRaceMessageReserve);
    append_work(message, hazard.earlier);
    message += " read ";
    words::append(message, hazard.allocation);
    message += " bytes ";
    words::append(message, hazard.bytes);
    message += " while launch ";
    words::append_number(message, launch);
    message += " on ";
    append_stream(message, streams_.id(slot));
    message += " wrote them, with nothing ordering the two (detect mode queued no wait)";
    unattributed_.push_back(
        LateFailure{hazard.earlier.launch, Error::race(std::move(message)), {}});
  }
  std::stable_sort(unattributed_.begin(), unattributed_.end(),
                   [](const LateFailure& a, const LateFailure& b) { return a.launch > b.launch; });
  attribute_queued();
}

void Device::commit(std::uint32_t slot, std::uint64_t launch) {
  try {
    const StreamPoint point =
        streams_.order().commit(slot, launch, read_accesses_, write_accesses_);
    for (PinTaken& taken : pins_) {
      if (taken.held) {
        streams_.pin(slot, point.seq, std::move(taken.held));
      } else {
        streams_.pin_again(slot, point.seq, taken.id);
      }
    }
    pins_.clear();
  } catch (...) {
    // Out of memory in the bookkeeping: the work is queued but not
    // recorded. Waiting for everything makes every access complete, so no
    // later plan can miss an ordering it needed (O1) and no pin is needed
    // any more (O3). The work stays unrecorded: it is done.
    pins_.clear();
    streams_.finish_all();
  }
}

void Device::append_work(std::string& text, const StreamPoint& point) const {
  if (point.launch == 0) {
    text += "earlier work on ";
    append_stream(text, streams_.id(point.stream));
    text += " (its memory's previous use there)";
    return;
  }
  const auto logged = std::find_if(log_.begin(), log_.end(), [&](const LoggedLaunch& entry) {
    return entry.launch == point.launch;
  });
  text += "launch ";
  words::append_number(text, point.launch);
  if (logged != log_.end()) {
    text += " (\"";
    text += logged->kernel;
    text += "\")";
  }
  text += " on ";
  append_stream(text, streams_.id(point.stream));
}

namespace {

bool overlaps(const Binding& a, const Binding& b) {
  return a.allocation == b.allocation && a.range.overlaps(b.range);
}

/// Removes `cut`'s bytes from a set of bindings, splitting what it lands in.
void subtract(std::vector<Binding>& set, const Binding& cut) {
  // Most cuts miss every binding (a late failure's outputs, a written
  // range): then nothing is rebuilt and nothing allocated.
  if (std::none_of(set.begin(), set.end(),
                   [&](const Binding& held) { return overlaps(held, cut); })) {
    return;
  }
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

void Device::taint_races(std::string_view kernel, std::uint32_t slot, std::uint64_t launch,
                         LaunchResult& result) {
  // O4: read after write taints what this launch produced; write after
  // write taints the bytes both wrote. (Write after read went to the
  // earlier reader in order().)
  const Hazard* first = nullptr;
  std::size_t more = 0;
  bool read_race = false;
  for (const Hazard& hazard : hazards_) {
    if (hazard.conflict == Conflict::WriteAfterRead) {
      continue;
    }
    read_race = read_race || hazard.conflict == Conflict::ReadAfterWrite;
    if (first == nullptr) {
      first = &hazard;
    } else {
      ++more;
    }
  }
  if (first == nullptr) {
    hazards_.clear();
    return;
  }
  // What this launch wrote: its whole write set if it ran, or only the
  // ranges a wrote_only body named (S6: the rest kept its writer, and no
  // byte of it was computed from what this launch read); else the bytes a
  // failed body reported written (S2).
  std::vector<Binding> produced;
  if (result.ran() && named_only_) {
    produced = named_;
  } else if (result.ran()) {
    for (const BoundBuffer& output : writes_) {
      produced.push_back({output.allocation, output.range});
    }
  } else {
    produced = released_;
  }
  // Suspect: all of it when it read racy bytes; else only where it wrote
  // over an unordered writer.
  std::vector<Binding> suspect;
  if (read_race) {
    suspect = produced;
  } else {
    for (const Hazard& hazard : hazards_) {
      if (hazard.conflict != Conflict::WriteAfterWrite) {
        continue;
      }
      for (const Binding& bytes : produced) {
        if (bytes.allocation == hazard.allocation && bytes.range.overlaps(hazard.bytes)) {
          suspect.push_back({bytes.allocation, bytes.range.intersect(hazard.bytes)});
        }
      }
    }
  }
  const bool reading = first->conflict == Conflict::ReadAfterWrite;
  std::string message;
  message.reserve(kRaceMessageReserve + kernel.size());
  message += kernel;
  message += " (launch ";
  words::append_number(message, launch);
  message += " on ";
  append_stream(message, streams_.id(slot));
  message += reading ? ") read " : ") wrote ";
  words::append(message, first->allocation);
  message += " bytes ";
  words::append(message, first->bytes);
  message += " that ";
  append_work(message, first->earlier);
  message += " wrote, with nothing ordering the two (detect mode queued no wait)";
  if (more != 0) {
    message += "; and ";
    words::append_number(message, more);
    message += " more such conflicts";
  }
  hazards_.clear();
  Error error = Error::race(std::move(message));
  const FailureId failure = graph_.insert(error);
  try {
    for (const Binding& bytes : suspect) {
      memory_.taint(bytes, failure);
    }
  } catch (...) {
    graph_.prune(failure);
    throw;
  }
  graph_.prune(failure);
  // What it produced and the race does not claim stays released: a later
  // race on this launch's reads makes those bytes stale too (O4), so they
  // are what a replay of it claims.
  std::vector<Binding> unclaimed = std::move(produced);
  for (const Binding& bytes : suspect) {
    subtract(unclaimed, bytes);
  }
  std::erase_if(unclaimed, [](const Binding& bytes) { return bytes.range.empty(); });
  released_ = std::move(unclaimed);
  result.status = LaunchStatus::Failed;
  result.failure.reset();
  if (graph_.contains(failure)) {
    result.failure = failure;
  }
  result.error = std::move(error);
}

LaunchResult Device::skip(std::string_view kernel, FailureId root, AllocationId needed) {
  SkipRecord record{std::string(kernel), needed, {}};
  // At most one per output: room for all at once (grown from one, a skip of
  // two or three outputs reallocated once or twice; issue 13).
  record.produced.reserve(writes_.size());
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

LaunchOutcome Device::run_body(KernelBody body, const KernelContext& context) {
  struct Mark {
    explicit Mark(const Device* device) noexcept
        : saved(std::exchange(body_owner, device)) {}
    ~Mark() { body_owner = saved; }
    Mark(const Mark&) = delete;
    Mark& operator=(const Mark&) = delete;
    Mark(Mark&&) = delete;
    Mark& operator=(Mark&&) = delete;
    const Device* saved;
  };
  const Mark mark(this);
  return backend_.run(body, context);
}

void Device::tear_down(FailureId provisional, std::string_view kernel) noexcept {
  // S3: the write set stays claimed by TornDown; say which kernel threw.
  // Called inside the handler of the body's exception.
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
}

void Device::hold_prior_claims() {
  prior_.clear();
  prior_held_.clear();
  try {
    for (std::size_t index = 0; index < writes_.size(); ++index) {
      if (write_taints_[index]->is_clean()) {
        continue;
      }
      const ByteRange range = writes_[index].range;
      write_taints_[index]->for_each_claim([&](FailureId failure, ByteRange claimed) {
        if (claimed.overlaps(range)) {
          prior_.push_back(
              PriorClaim{static_cast<std::uint32_t>(index), claimed.intersect(range), failure});
        }
      });
    }
    for (const PriorClaim& claim : prior_) {
      if (std::find(prior_held_.begin(), prior_held_.end(), claim.failure) == prior_held_.end()) {
        prior_held_.push_back(claim.failure);
        graph_.tag(claim.failure); // Held: the provisional claim must not end it.
      }
    }
  } catch (...) {
    drop_prior_claims();
    throw;
  }
}

void Device::drop_prior_claims() noexcept {
  for (const FailureId failure : prior_held_) {
    graph_.untag(failure);
  }
  prior_held_.clear();
  prior_.clear();
}

void Device::restore_prior_claims(const LaunchOutcome& outcome) {
  // S6. The provisional failure still claims the whole write set. Named
  // ranges are released; every other byte goes back to what it was: a
  // prior claim is re-tainted, a clean byte released. If this runs out of
  // memory halfway, what is left keeps the provisional TornDown: stale, the
  // safe direction.
  std::vector<ByteRange> named;
  std::vector<ByteRange> pieces;
  std::vector<ByteRange> claimed;
  std::vector<ByteRange> clean;
  for (std::size_t index = 0; index < writes_.size(); ++index) {
    const BoundBuffer& output = writes_[index];
    // Every valid named range on this allocation, whichever output named it.
    named.clear();
    for (const WrittenRange& written : outcome.written()) {
      if (written.output >= writes_.size() ||
          written.range.end() > writes_[written.output].range.size()) {
        continue; // Untrusted and outside its output: ignored (S2).
      }
      const BoundBuffer& owner = writes_[written.output];
      if (owner.allocation != output.allocation) {
        continue;
      }
      const ByteRange bytes = ByteRange::of(owner.range.begin() + written.range.begin(),
                                            owner.range.begin() + written.range.end());
      if (!bytes.empty()) {
        named.push_back(bytes);
      }
    }
    for (const ByteRange bytes : named) {
      if (bytes.overlaps(output.range)) {
        write_taints_[index]->written(bytes.intersect(output.range), graph_);
      }
    }
    subtract_ranges(output.range, named, pieces);
    claimed.clear();
    for (const PriorClaim& claim : prior_) {
      if (writes_[claim.output].allocation == output.allocation) {
        claimed.push_back(claim.bytes);
      }
    }
    for (const ByteRange piece : pieces) {
      for (const PriorClaim& claim : prior_) {
        if (writes_[claim.output].allocation == output.allocation && claim.bytes.overlaps(piece)) {
          write_taints_[index]->taint(claim.bytes.intersect(piece), claim.failure, graph_);
        }
      }
      subtract_ranges(piece, claimed, clean);
      for (const ByteRange bytes : clean) {
        write_taints_[index]->written(bytes, graph_);
      }
    }
  }
}

void Device::claim_write_set(FailureId provisional) {
  // Only where every output was clean or fresh (outputs_fresh()): each
  // claim is the first on its taint, stored inline, and tags a node that
  // exists — nothing here can allocate or throw. A fresh output's
  // never-written claim lies within this binding, so T1 would take all of
  // it anyway; clearing first (noexcept) keeps the claim the first one.
  const std::optional<FailureId> never_written = memory_.never_written_failure();
  for (std::size_t index = 0; index < writes_.size(); ++index) {
    Taint& taint = *write_taints_[index];
    if (never_written && taint.carries(*never_written)) [[unlikely]] {
      taint.clear(graph_);
    }
    taint.taint(writes_[index].range, provisional, graph_);
  }
}

// Inline into enter() and the plain launch, like outputs_fresh().
[[gnu::always_inline]] inline void Device::release_fresh_outputs(const LaunchOutcome& outcome) {
  // N1, S6: a success releases what it wrote. A plain success wrote the
  // whole write set; a wrote_only one only its valid named ranges, and every
  // other byte keeps its prior state — its never-written claim, untouched.
  if (!outcome.wrote_only()) {
    clear_fresh_outputs(write_taints_, graph_);
    return;
  }
  for (const WrittenRange& written : outcome.written()) {
    if (written.output < writes_.size() &&
        written.range.end() <= writes_[written.output].range.size()) {
      const BoundBuffer& output = writes_[written.output];
      write_taints_[written.output]->written(
          ByteRange::of(output.range.begin() + written.range.begin(),
                        output.range.begin() + written.range.end()),
          graph_);
    }
  }
  // The named ranges are noted for the log by enter(), like any wrote_only
  // success's.
}

LaunchResult Device::enter(std::uint32_t slot, std::uint64_t launch, std::string_view kernel,
                           KernelBody body, bool outputs_clean, bool outputs_fresh) {
  const KernelContext context(launch, kernel, reads_, writes_, backend_data_, streams_.id(slot),
                              streams_.handle(slot));
  LaunchResult result;
  if (writes_.empty()) {
    // Nothing to claim, nothing to taint: a failure here is only reported.
    LaunchOutcome outcome = run_body(body, context);
    if (!outcome.ok()) {
      result.status = LaunchStatus::Failed;
      result.error = named(kernel, *outcome.error(), outcome.written().size());
    }
    return result;
  }

  // The common case: every output is clean. The provisional failure is
  // minted as always (G1: one id per scope that enters with outputs), but
  // it claims the write set (S1) only if that is needed — when the body
  // fails or throws — so a success touches no taint at all: clean bytes stay
  // clean, whatever a wrote_only outcome named (S6). Nobody can tell the
  // difference: a body may not call its Device (O5), other threads wait for
  // the lock, and the deferred claim cannot fail (the first claim on a clean
  // taint is stored inline and tags a node that exists), so a failing body
  // leaves exactly the state the eager claim would have.
  //
  // N1: outputs whose every claim is the never-written node's, within their
  // own binding (a fresh buffer's first write), take the same path: the
  // prior state S6 would restore is exactly those claims, so a success
  // releases the write set (or, wrote_only, the named ranges) and a failure
  // claims over them — clearing first, so the claim is again the first on a
  // clean taint and cannot allocate. The fresh path costs one clear per output.
  if (Taint::inline_claims && (outputs_clean || outputs_fresh)) [[likely]] {
    const FailureId provisional = graph_.insert_provisional();
    const LaunchOutcome outcome = [&] {
      try {
        return run_body(body, context);
      } catch (...) {
        claim_write_set(provisional);
        tear_down(provisional, kernel); // S3
        throw;
      }
    }();
    if (outcome.ok()) [[likely]] {
      if (outcome.wrote_only()) [[unlikely]] {
        note_named_ranges(outcome); // For the log's replay (S6).
      }
      if (outputs_fresh) [[unlikely]] {
        try {
          release_fresh_outputs(outcome);
        } catch (...) {
          graph_.prune(provisional); // Unreleased bytes stay never-written: stale, safe.
          throw;
        }
      }
      graph_.prune(provisional);
      return result;
    }
    claim_write_set(provisional);
    return failed(provisional, kernel, outcome);
  }

  // S6: claims the write set held before are remembered (and their
  // failures held) in case the body names only what it wrote.
  hold_prior_claims();

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
    drop_prior_claims();
    throw;
  }

  const LaunchOutcome outcome = [&] {
    try {
      return run_body(body, context);
    } catch (...) {
      drop_prior_claims();
      tear_down(provisional, kernel); // S3
      throw;
    }
  }();
  if (outcome.ok()) {
    if (outcome.wrote_only()) {
      try {
        restore_prior_claims(outcome);
      } catch (...) {
        graph_.prune(provisional);
        drop_prior_claims();
        throw;
      }
      note_named_ranges(outcome);
    } else {
      for (std::size_t index = 0; index < writes_.size(); ++index) {
        write_taints_[index]->written(writes_[index].range, graph_);
      }
    }
    drop_prior_claims();
    graph_.prune(provisional);
    return result;
  }
  drop_prior_claims();
  return failed(provisional, kernel, outcome);
}

void Device::note_named_ranges(const LaunchOutcome& outcome) {
  // S2/S6: a named range outside its output is ignored; an empty one names
  // nothing.
  named_only_ = true;
  for (const WrittenRange& written : outcome.written()) {
    if (written.output < writes_.size() &&
        written.range.end() <= writes_[written.output].range.size() && !written.range.empty()) {
      const BoundBuffer& output = writes_[written.output];
      named_.push_back(
          {output.allocation, ByteRange::of(output.range.begin() + written.range.begin(),
                                            output.range.begin() + written.range.end())});
    }
  }
}

LaunchResult Device::failed(FailureId provisional, std::string_view kernel,
                            const LaunchOutcome& outcome) {
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
  LaunchResult result;
  result.status = LaunchStatus::Failed;
  if (graph_.contains(provisional)) {
    result.failure = provisional;
  }
  result.error = std::move(error);
  return result;
}

LaunchResult Device::write(StreamId stream, const Binding& into, std::span<const std::byte> bytes) {
  const Lock lock(*this, "write");
  const std::uint32_t slot = streams_.slot(stream);
  if (bytes.size() != into.range.size()) {
    throw Exception(Error::invalid_binding("a host write of " + std::to_string(bytes.size()) +
                                           " bytes into " + to_string(into.allocation) + " bytes " +
                                           to_string(into.range) + " (" +
                                           std::to_string(into.range.size()) + " bytes)"));
  }
  StreamHandle handle = streams_.handle(slot);
  LaunchResult result =
      launch_locked(slot, "host write", std::span<const Binding>(),
                    std::span<const Binding>(&into, 1), [&](const KernelContext& context) {
                      if (auto error = backend_.copy_in(handle, context.write_binding(0).data,
                                                        bytes.data(), bytes.size())) {
                        return LaunchOutcome::failure(std::move(*error));
                      }
                      return LaunchOutcome::success();
                    });
  if (ordering_active() && result.status != LaunchStatus::Skipped) {
    streams_.finished(slot); // copy_in returns once the stream reached it.
  }
  return result;
}

// ------------------------------------------------------------ exchanges
//
// The scope itself is in device_exchange.cpp; here only the lock.

LaunchResult Device::exchange(StreamId stream, std::string_view kernel,
                              std::span<const Binding> reads, std::span<const Binding> writes,
                              ExchangeBody body) {
  const Lock lock(*this, "exchange");
  return exchange_locked(streams_.slot(stream), kernel, reads, writes, body);
}

bool Device::awaits_verdict(std::span<const Binding> reads) {
  const Lock lock(*this, "awaits_verdict");
  return awaits_verdict_locked(reads);
}

// ------------------------------------------------------------ late failures

std::optional<std::uint64_t> Device::oldest_needed_launch() const {
  return backend_.oldest_unconfirmed_launch();
}

void Device::trim_log() {
  static_assert(std::is_nothrow_move_constructible_v<LoggedLaunch>,
                "entries are retired into spare_log_ without a throw");
  // An entry is needed while it may still be the origin of a late failure
  // (the backend has not confirmed it) or, in detect mode, of a race (its
  // work is not known complete); everything after a needed entry is kept
  // for the replay.
  const std::optional<std::uint64_t> oldest = oldest_needed_launch();
  const bool detect = ordering_ == StreamOrdering::Detect;
  while (!log_.empty()) {
    const LoggedLaunch& front = log_.front();
    const bool unconfirmed = oldest && front.launch >= *oldest;
    const bool incomplete = detect && front.work.seq != 0 &&
                            front.work.seq > streams_.order().completed(front.work.stream);
    if (unconfirmed || incomplete) {
      return;
    }
    // Kept for the next entry's lists when there is room already (a
    // push_back within capacity of a nothrow-movable type cannot throw).
    if (spare_log_.size() < spare_log_.capacity()) {
      spare_log_.push_back(std::move(log_.front()));
    }
    log_.pop_front();
  }
}

void Device::log_if_unconfirmed(std::uint64_t launch, std::string_view kernel,
                                std::span<const Binding> reads, std::span<const Binding> writes,
                                LaunchStatus status, StreamPoint work) {
  const bool detect = ordering_ == StreamOrdering::Detect && ordering_active();
  if (!reports_late_ && !detect && log_.empty()) {
    return; // A synchronous backend confirms every launch as it runs.
  }
  trim_log();
  const std::optional<std::uint64_t> oldest = oldest_needed_launch();
  const bool needed =
      (oldest && *oldest <= launch) ||
      (detect && work.seq != 0 && work.seq > streams_.order().completed(work.stream));
  if (log_.empty() && !needed) {
    return;
  }
  // A retired entry refilled in place when there is one: each fresh entry
  // was three to five allocations (its kernel and lists) per logged launch
  // — every launch a late-reporting backend has not confirmed, and every
  // collective whose verdict is pending (issue 13). Every field is set, so
  // only capacity survives the entry's last use.
  if (spare_log_.capacity() == 0) {
    spare_log_.reserve(kSpareLog);
  }
  LoggedLaunch entry{};
  if (!spare_log_.empty()) {
    entry = std::move(spare_log_.back());
    spare_log_.pop_back();
  }
  // Where an assign would allocate anyway, it allocates room for
  // kLogListRoom bindings (kLogKernelRoom bytes) instead: no more blocks
  // than before, and a spare so grown never grows again (see kLogListRoom).
  const auto fill = [](std::vector<Binding>& list, std::span<const Binding> from) {
    if (list.capacity() < from.size()) {
      list.reserve(std::max(kLogListRoom, from.size()));
    }
    list.assign(from.begin(), from.end());
  };
  if (entry.kernel.capacity() < kernel.size()) {
    entry.kernel.reserve(std::max(kLogKernelRoom, kernel.size()));
  }
  entry.launch = launch;
  entry.kernel.assign(kernel);
  entry.status = status;
  fill(entry.reads, reads);
  fill(entry.writes, writes);
  fill(entry.released, released_);
  entry.work = work;
  entry.named_only = named_only_;
  fill(entry.named, named_only_ ? std::span<const Binding>(named_) : std::span<const Binding>());
  log_.push_back(std::move(entry));
}

void Device::synchronize() {
  const Lock lock(*this, "synchronize");
  synchronize_locked();
}

void Device::synchronize_locked() {
  // Every stream first: what was held for a stream is let go (O3), and in
  // detect mode every logged launch is complete.
  if (ordering_active()) {
    streams_.finish_all();
  }
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
  trim_log();
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
  // A race (O4) that reaches a reader which failed having written some
  // bytes (S2) makes those bytes stale: they were computed from what the
  // racing write may have changed. Any other late failure of a launch that
  // no longer stands as "ran" is moot: its outputs carry a failure already.
  const bool raced_partial = origin->status == LaunchStatus::Failed &&
                             late.error.kind() == ErrorKind::Race && !origin->released.empty();
  if (origin->status != LaunchStatus::Ran && !raced_partial) {
    return;
  }
  // Two phases, so that running out of memory halfway leaves nothing half
  // done that a retry would not redo: first the plan (the stale bytes, the
  // skip records, the launches they mark), touching only locals; then the
  // graph and the taints, and last the log's statuses, which cannot throw.

  // The stale bytes: what it produced (its write set, or the ranges a
  // wrote_only body named, S6), less what the kernel says it finished
  // (untrusted: a range outside its output is ignored, S2) — or, for the
  // raced partial reader, the bytes it reported written.
  std::vector<Binding> stale = raced_partial ? origin->released : origin->covered();
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
  // so what it produced joins the stale set; any other launch overwrote
  // what it covered (with good data, or with its own failure), so that
  // leaves it. A wrote_only launch (S6) covered only the ranges it named:
  // every other byte of its write set still holds what it held before —
  // stale bytes stay stale under it, clean ones clean.
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
    const std::vector<Binding>& covered = later->covered();
    if (consumed != later->reads.end() && later->status == LaunchStatus::Ran && !covered.empty()) {
      joined.push_back({&*later, record_of(*later, consumed->allocation, covered)});
      stale.insert(stale.end(), covered.begin(), covered.end());
    } else if (consumed != later->reads.end() && !later->released.empty()) {
      // It failed, but the bytes it reported written (S2) were computed
      // from stale input: they are garbage too (D1). The rest of what it
      // covered carries its own failure.
      for (const Binding& output : covered) {
        subtract(stale, output);
      }
      joined.push_back({&*later, record_of(*later, consumed->allocation, later->released)});
      stale.insert(stale.end(), later->released.begin(), later->released.end());
    } else {
      for (const Binding& output : covered) {
        subtract(stale, output);
      }
    }
  }
  Error error =
      named(origin->kernel, late.error, ignored, " (reported when the device synchronised)");

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
  // Its stale bytes are claimed now, the whole write set or what it
  // reported written: a later race on it finds them carried and is moot.
  origin->released.clear();
  for (Joined& each : joined) {
    // Its stale bytes are claimed now: a later race on it is moot.
    each.launch->status = LaunchStatus::Failed;
    each.launch->released.clear();
  }
  graph_.prune(failure);
}

// ------------------------------------------------------------ reads

std::vector<Report> Device::stale_reports(const Binding& from) {
  const Lock lock(*this, "stale_reports");
  return stale_reports_locked(from);
}

std::vector<Report> Device::stale_reports_locked(const Binding& from) {
  synchronize_locked();
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
    name_creation_site(report);
    reports.push_back(std::move(report));
  }
  return reports;
}

void Device::name_creation_site(Report& report) const {
  if (report.root.kind() != ErrorKind::NeverWritten) {
    return;
  }
  if (const std::string* site = sites_.find(report.origin)) {
    report.root = Error(ErrorKind::NeverWritten, "created at " + *site);
  }
}

ReadOutcome Device::read(StreamId stream, const Binding& from, std::span<std::byte> into) {
  const Lock lock(*this, "read");
  return read_locked(streams_.slot(stream), from, into);
}

ReadOutcome Device::read_locked(std::uint32_t slot, const Binding& from,
                                std::span<std::byte> into) {
  synchronize_locked();
  const BoundBytes bytes = memory_.resolve(from);
  if (into.size() != from.range.size()) {
    throw Exception(Error::invalid_binding("a read of " + to_string(from.allocation) + " bytes " +
                                           to_string(from.range) + " into " +
                                           std::to_string(into.size()) + " bytes"));
  }
  if (bytes.taint->failure(from.range)) {
    return ReadOutcome{stale_reports_locked(from)};
  }
  // Everything queued is complete (synchronize_locked), so the copy needs
  // no ordering: only the stream to run on.
  if (auto error = backend_.copy_out(streams_.handle(slot), into.data(),
                                     bytes.data + from.range.begin(), into.size())) {
    throw Exception(std::move(*error));
  }
  return ReadOutcome{};
}

std::vector<std::byte> Device::read_bytes(StreamId stream, const Binding& from) {
  const Lock lock(*this, "read_bytes");
  const std::uint32_t slot = streams_.slot(stream);
  static_cast<void>(memory_.resolve(from)); // The binding first: no result for a bad one.
  std::vector<std::byte> bytes(static_cast<std::size_t>(from.range.size()));
  ReadOutcome outcome = read_locked(slot, from, bytes);
  if (!outcome) {
    throw StaleRead(std::move(outcome.reports));
  }
  return bytes;
}

void Device::check_invariants() {
  const Lock lock(*this, "check_invariants");
  graph_.check_invariants();
  memory_.check_invariants();
  const std::vector<const Taint*> carriers = memory_.carriers();
  check_refcounts(graph_, carriers);
  streams_.order().check_invariants();
}

} // namespace taintpool
