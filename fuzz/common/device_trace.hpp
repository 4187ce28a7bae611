// DeviceTrace: a Device's run written as a ScopesTrace module
// (proofs/TRACES.md, "Device traces"), for TLC to check that what the C++
// did is a behaviour of Scopes.tla and that every read agrees with its
// oracle.
//
// Why it is shaped so: the harness that drives the Device (device_fuzzer,
// proofs/driver/scopes_trace_driver.cpp) already knows each call's inputs
// and how it ended, so it hands them over after the call, one line per op,
// and this class does the rest: it infers what the pool did on the way by
// comparing the Device's allocations with the last look (an allocation that
// vanished was discovered dropped inside that call, before its own work, so
// its `drop` goes first; a new one is a `create`), reads the provisional id
// the graph was about to mint, and records the graph and every claim after
// each event that changes them. A run that leaves the format (asynchronous
// late failures) is abandoned and never written. Costs nothing when the
// harness does not trace (it holds no DeviceTrace then).
//
// Offsets are compressed per allocation (fuzz/common/tla_trace.hpp: each
// allocation is its own space, claims never move between them), so a buffer
// is as many "bytes" as distinct offsets the run uses in it: Scopes' oracle
// is per byte, and TLC checks a 255-byte buffer byte by byte on every state.
// A partial failure's reported ranges, relative to their binding, are
// written as differences of ranks, so the spec's binding + range lands on
// the compressed offset; a range with no such binding (an output index out
// of range) is written raw, and the spec ignores it as the device does.
#pragma once

#include <taintpool/device/device.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tla_trace.hpp"

namespace taintpool::fuzz::tla {

class DeviceTrace {
 public:
  /// A disabled trace records nothing: a harness can hold one always and
  /// call it unconditionally.
  explicit DeviceTrace(bool enabled = true) noexcept
      : abandoned_(!enabled) {}

  /// How a launch (or host write) call ended.
  enum class Ending : std::uint8_t {
    returned,  ///< With a LaunchResult.
    refused,   ///< A binding error before anything was claimed (P3).
    body_threw ///< The body's exception, rethrown after S3.
  };

  /// After create_buffer(size), or create_buffer(bytes) (`with_bytes`: a
  /// host write of the whole buffer follows the create, a launch of its own).
  void created(Device& device, AllocationId id, bool with_bytes) {
    if (abandoned_) {
      return;
    }
    const std::uint64_t provisional = next_id_;
    look(device);
    if (with_bytes) {
      launch_entered(device, {}, {whole(id)}, provisional, "ok", std::nullopt, {});
    }
    settle(device);
  }

  /// After launch(reads, writes, body) ended as `ending`; `result` when it
  /// returned; `written` the ranges a failing body reported (S2), or with
  /// `wrote_only` the ranges a succeeding body named as all it wrote (S6).
  /// `late`: the body planned a late failure, which the format cannot say:
  /// abandon.
  void launched(Device& device, const std::vector<Binding>& reads,
                const std::vector<Binding>& writes, Ending ending, const LaunchResult& result,
                const std::vector<WrittenRange>& written, bool late = false,
                bool wrote_only = false) {
    if (late) {
      abandon();
    }
    if (abandoned_) {
      return;
    }
    const std::uint64_t provisional = next_id_;
    look(device);
    if (ending == Ending::refused) {
      Value e = launch_event(reads, writes, "refused");
      observe(device, e);
      trace_.add(std::move(e));
    } else if (ending == Ending::returned && result.status == LaunchStatus::Skipped) {
      Value e = launch_event(reads, writes, "skipped");
      e.set("root", Value::number(result.failure ? result.failure->raw() : 0));
      if (result.needed) {
        e.set("needed", Value::number(result.needed->raw()));
      }
      observe(device, e);
      trace_.add(std::move(e));
      ++launches_;
    } else {
      const bool failed = ending == Ending::returned && result.status == LaunchStatus::Failed;
      const bool threw = ending == Ending::body_threw;
      const bool named = !threw && !failed && wrote_only;
      const char* outcome = threw ? "throw" : failed ? "fail" : named ? "ok_only" : "ok";
      std::optional<ErrorKind> error;
      if (failed && result.error) {
        error = result.error->kind();
      }
      launch_entered(device, reads, writes, provisional, outcome, error,
                     failed || named ? written : std::vector<WrittenRange>());
    }
    settle(device);
  }

  /// After write(into, bytes) ended as `ending` (a host write: a launch with
  /// no reads and one write binding). `mismatch`: the bytes were not the
  /// binding's size, refused before any launch (not in the format).
  void host_written(Device& device, const Binding& into, Ending ending, const LaunchResult& result,
                    bool mismatch = false) {
    if (mismatch) {
      called(device);
    } else {
      launched(device, {}, {into}, ending, result, {});
    }
  }

  /// After read(from) or stale_reports(from): `returned` with `reports`, or
  /// threw (a bad binding or buffer: not in the format, but the call may
  /// have discovered drops).
  void read(Device& device, const Binding& from, bool returned,
            const std::vector<Report>& reports) {
    if (abandoned_) {
      return;
    }
    if (!returned) {
      called(device);
      return;
    }
    look(device);
    std::vector<Report> sorted = reports;
    std::sort(sorted.begin(), sorted.end(),
              [](const Report& a, const Report& b) { return a.failure < b.failure; });
    std::vector<Value> failures;
    std::vector<Value> described;
    for (const Report& report : sorted) {
      failures.push_back(Value::number(report.failure.raw()));
      Value r = Value::record({{"f", Value::number(report.failure.raw())},
                               {"kind", Value::string(kind_name(report.root.kind()))}});
      if (!report.path_may_be_incomplete) {
        // G7: past the cap the walk may stop early; the spec walks them all.
        std::vector<Value> path;
        for (const SkipRecord& record : report.path) {
          path.push_back(Value::number(record.needed.raw()));
        }
        r.set("origin", Value::number(report.origin.raw()));
        r.set("path", Value::tuple(std::move(path)));
      }
      described.push_back(std::move(r));
    }
    trace_.add(Value::record({{"op", Value::string("read")},
                              {"alloc", Value::number(from.allocation.raw())},
                              {"lo", Value::offset(from.range.begin(), from.allocation.raw())},
                              {"hi", Value::offset(from.range.end(), from.allocation.raw())},
                              {"ok", Value::boolean(reports.empty())},
                              {"failures", Value::tuple(std::move(failures))},
                              {"reports", Value::tuple(std::move(described))}}));
    settle(device);
  }

  /// After any other call that may discover drops (sweep, cleanup,
  /// synchronize with nothing late, a read or write refused).
  void called(Device& device) {
    if (abandoned_) {
      return;
    }
    look(device);
    settle(device);
  }

  /// The run left the format (a late failure was planned): nothing more is
  /// recorded and write() refuses.
  void abandon() noexcept { abandoned_ = true; }
  [[nodiscard]] bool abandoned() const noexcept { return abandoned_; }
  [[nodiscard]] std::size_t events() const noexcept { return trace_.size(); }

  /// Writes the module, with its TraceSizes and TraceLaunches. False if the
  /// run was abandoned or the file cannot be written.
  bool write(const std::filesystem::path& path, const std::vector<std::string>& comments) const {
    if (abandoned_) {
      return false;
    }
    Trace trace = trace_;
    std::vector<Value> sizes;
    for (std::uint64_t id = 1; id <= sizes_.size(); ++id) {
      const auto found = sizes_.find(id);
      if (found == sizes_.end()) {
        return false; // Ids are dense from 1; a gap means an allocation was missed.
      }
      sizes.push_back(Value::offset(found->second, id));
    }
    trace.define("TraceSizes", Value::tuple(std::move(sizes)));
    trace.define("TraceLaunches", Value::number(std::max<std::uint64_t>(launches_, 1)));
    return trace.write(path, comments);
  }

  /// The name Scopes.tla gives an error kind.
  static const char* kind_name(ErrorKind kind) noexcept {
    switch (kind) {
    case ErrorKind::Generic:
      return "Generic";
    case ErrorKind::Launch:
      return "Launch";
    case ErrorKind::OutOfMemory:
      return "OutOfMemory";
    case ErrorKind::BufferTooBig:
      return "BufferTooBig";
    case ErrorKind::TornDown:
      return "TornDown";
    case ErrorKind::Unwritten:
      return "Unwritten";
    case ErrorKind::Skipped:
      return "Skipped";
    case ErrorKind::NotFound:
      return "NotFound";
    case ErrorKind::InvalidBinding:
      return "InvalidBinding";
    // Kinds a one-stream, one-rank device_fuzzer run never mints; named so
    // that a trace that had one would fail validation by name.
    case ErrorKind::Race:
      return "Race";
    case ErrorKind::Remote:
      return "Remote";
    case ErrorKind::Communicator:
      return "Communicator";
    case ErrorKind::NeverWritten:
      return "NeverWritten";
    }
    return "Generic";
  }

 private:
  Binding whole(AllocationId id) const {
    const auto found = sizes_.find(id.raw());
    return Binding{id, ByteRange::of(0, found == sizes_.end() ? 0 : found->second)};
  }

  static Value binding(const Binding& b) {
    const std::uint64_t space = b.allocation.raw();
    return Value::tuple({Value::number(space), Value::offset(b.range.begin(), space),
                         Value::offset(b.range.end(), space)});
  }
  static Value bindings(const std::vector<Binding>& list) {
    std::vector<Value> items;
    for (const Binding& b : list) {
      items.push_back(binding(b));
    }
    return Value::tuple(std::move(items));
  }
  static Value launch_event(const std::vector<Binding>& reads, const std::vector<Binding>& writes,
                            const char* status) {
    return Value::record({{"op", Value::string("launch")},
                          {"reads", bindings(reads)},
                          {"writes", bindings(writes)},
                          {"status", Value::string(status)}});
  }

  void launch_entered(Device& device, const std::vector<Binding>& reads,
                      const std::vector<Binding>& writes, std::uint64_t provisional,
                      const char* outcome, std::optional<ErrorKind> error,
                      const std::vector<WrittenRange>& written) {
    Value e = launch_event(reads, writes, "entered");
    if (!writes.empty()) {
      e.set("p", Value::number(provisional));
    }
    trace_.add(std::move(e));
    ++launches_;
    Value close =
        Value::record({{"op", Value::string("close")}, {"outcome", Value::string(outcome)}});
    if (error) {
      close.set("error", Value::string(kind_name(*error)));
    }
    if (!written.empty()) {
      std::vector<Value> parts;
      for (const WrittenRange& part : written) {
        const Value index = Value::number(std::uint64_t{part.output} + 1);
        if (part.output >= writes.size()) {
          parts.push_back(Value::tuple(
              {index, Value::number(part.range.begin()), Value::number(part.range.end())}));
          continue;
        }
        const Binding& out = writes[part.output];
        const std::uint64_t space = out.allocation.raw();
        const std::uint64_t base = out.range.begin();
        parts.push_back(
            Value::tuple({index, Value::offset_delta(base, base + part.range.begin(), space),
                          Value::offset_delta(base, base + part.range.end(), space)}));
      }
      close.set("written", Value::tuple(std::move(parts)));
    }
    observe(device, close);
    trace_.add(std::move(close));
  }

  /// Drops (discovered inside the call just made, before its own work) and
  /// creates since the last look, in that order.
  void look(Device& device) {
    std::map<std::uint64_t, std::uint64_t> now;
    device.memory().for_each_allocation(
        [&](const AllocationInfo& info) { now.emplace(info.id.raw(), info.size); });
    for (const auto& [id, size] : live_) {
      if (now.count(id) == 0) {
        trace_.add(Value::record({{"op", Value::string("drop")}, {"alloc", Value::number(id)}}));
      }
    }
    for (const auto& [id, size] : now) {
      if (live_.count(id) == 0) {
        sizes_.emplace(id, size);
        trace_.add(Value::record({{"op", Value::string("create")},
                                  {"alloc", Value::number(id)},
                                  {"size", Value::offset(size, id)}}));
      }
    }
    live_ = std::move(now);
  }

  /// The id the next provisional will take (nothing mints between calls).
  void settle(Device& device) { next_id_ = device.graph().next_id().raw(); }

  /// The graph and every claim after the event.
  static void observe(Device& device, Value& e) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> nodes;
    device.graph().for_each(
        [&](FailureId f, const Error&, std::uint64_t tags) { nodes.emplace_back(f.raw(), tags); });
    std::sort(nodes.begin(), nodes.end());
    std::vector<Value> graph;
    for (const auto& [f, tags] : nodes) {
      graph.push_back(Value::tuple({Value::number(f), Value::number(tags)}));
    }
    // By allocation id, each allocation's claims in its taint's order: the
    // manager visits allocations in its table's order, which depends on
    // the table's capacity, and a reset Device (Device::reset, as
    // device_fuzzer uses it) keeps its table's slots where a fresh one has
    // few. Sorted, the same run writes the same trace (replay_order.cmake);
    // ScopesTrace reads the claims as a set.
    std::vector<std::pair<std::uint64_t, std::pair<FailureId, ByteRange>>> found;
    device.memory().for_each_allocation([&](const AllocationInfo& info) {
      info.taint->for_each_claim(
          [&](FailureId f, ByteRange r) { found.emplace_back(info.id.raw(), std::pair(f, r)); });
    });
    std::stable_sort(found.begin(), found.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Value> claims;
    for (const auto& [space, claim] : found) {
      const auto& [f, r] = claim;
      claims.push_back(
          Value::tuple({Value::number(space), Value::number(f.raw()),
                        Value::offset(r.begin(), space), Value::offset(r.end(), space)}));
    }
    e.set("graph", Value::tuple(std::move(graph)));
    e.set("claims", Value::tuple(std::move(claims)));
  }

  Trace trace_;
  std::map<std::uint64_t, std::uint64_t> live_;  ///< Allocation id -> size, at the last look.
  std::map<std::uint64_t, std::uint64_t> sizes_; ///< Every allocation ever seen.
  std::uint64_t next_id_ = 1;
  std::uint64_t launches_ = 0; ///< Launch numbers used (refused launches use none, P3).
  bool abandoned_ = false;
};

} // namespace taintpool::fuzz::tla
