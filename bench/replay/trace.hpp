// Allocation traces of real workloads (../shared/traces/README.md,
// bench/traces/): reading one into the form every replay uses. Header-only,
// no dependency beyond the standard library: a .gz trace is read through
// `gzip -dc`, which every machine we run on has.
//
// Format: `# key value` facts, then one event per line in program order:
//   a <id> <size> <stream>   allocate <size> bytes (as requested)
//   f <id> <size>            free allocation <id>
// Ids are turned into dense slots (a slot is reused once its allocation is
// freed), so a replay holds its live buffers in a plain vector.
//
// "After the first step": a trace carries no step markers, so every replay
// counts storage calls made while replaying the second half of the trace's
// events (steady_from()). Every training trace here runs three steps after
// building its model, so the second half starts inside the second step, after
// the first has allocated what training needs; an inference trace's second
// half serves requests of shapes the first half already served or smaller,
// or says so by showing calls there. A generate trace has no step that
// repeats: its second half is later requests of other batch and prompt
// sizes, and pool_replay says how many of its calls there came at an event
// that took in use above every earlier moment (a request larger than any
// before it; bench/RESULTS.md, pool12).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace taintpool::replay {

/// One trace event: allocate `size` bytes into `slot`, or free `slot`.
struct Event {
  bool allocate = false;
  std::uint32_t slot = 0;
  std::uint64_t size = 0; ///< Requested bytes (the freed allocation's, for a free).
};

struct Trace {
  std::string name; ///< The file name without directory and .trace[.gz].
  std::vector<Event> events;
  std::uint32_t slots = 0;           ///< Live buffers a replay must hold at once, at most.
  std::uint64_t allocations = 0;     ///< Allocate events.
  std::uint64_t peak_in_use = 0;     ///< Highest sum of live requested bytes.
  std::vector<std::uint64_t> in_use; ///< Live requested bytes after each event.
  /// Per event: whether it took in use above every earlier moment (a new
  /// high: the work asks for more than it ever held, which no allocator
  /// serves without memory held ahead). Both replays count the storage
  /// calls made at such events among those after the first step.
  std::vector<bool> new_high;
  std::map<std::string, std::string> facts; ///< The `# key value` lines.

  /// The first event of the second half: storage calls from here on are
  /// "after the first step" (see above).
  [[nodiscard]] std::size_t steady_from() const noexcept { return events.size() / 2; }
};

namespace detail {
struct PipeCloser {
  void operator()(std::FILE* file) const noexcept { pclose(file); }
};
struct FileCloser {
  void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};
} // namespace detail

/// Reads a trace (plain or .gz). Throws std::runtime_error naming the file
/// and line of anything malformed: an unknown event, a free of an id that
/// is not live, an id allocated twice.
inline Trace load_trace(const std::string& path) {
  Trace trace;
  std::string base = path.substr(path.find_last_of('/') + 1);
  for (const char* suffix : {".gz", ".trace"}) {
    const std::string tail(suffix);
    if (base.size() > tail.size() &&
        base.compare(base.size() - tail.size(), tail.size(), tail) == 0) {
      base.resize(base.size() - tail.size());
    }
  }
  trace.name = base;

  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  std::unique_ptr<std::FILE, detail::PipeCloser> pipe;
  std::unique_ptr<std::FILE, detail::FileCloser> file;
  std::FILE* in = nullptr;
  if (gz) {
    for (const char c : path) {
      if (c == '\'') {
        throw std::runtime_error("trace path with a quote: " + path);
      }
    }
    pipe.reset(popen(("gzip -dc '" + path + "'").c_str(), "r"));
    in = pipe.get();
  } else {
    file.reset(std::fopen(path.c_str(), "r"));
    in = file.get();
  }
  if (in == nullptr) {
    throw std::runtime_error("cannot open trace " + path);
  }

  std::unordered_map<std::uint64_t, std::pair<std::uint32_t, std::uint64_t>>
      live; // id -> slot, size
  std::vector<std::uint32_t> free_slots;
  std::uint64_t in_use = 0;
  std::uint64_t earlier_high = 0; ///< The highest in use before the current event.
  std::string line;
  std::size_t number = 0;
  char buffer[512];
  auto fail = [&](const std::string& why) {
    throw std::runtime_error(path + ":" + std::to_string(number) + ": " + why);
  };
  while (std::fgets(buffer, sizeof buffer, in) != nullptr) {
    ++number;
    line = buffer;
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
      line.pop_back();
    }
    if (line.empty()) {
      continue;
    }
    if (line[0] == '#') {
      const std::size_t key_end = line.find(' ', 2);
      if (key_end != std::string::npos && line.size() > 2) {
        trace.facts[line.substr(2, key_end - 2)] = line.substr(key_end + 1);
      }
      continue;
    }
    char kind = 0;
    unsigned long long id = 0;
    unsigned long long size = 0;
    if (std::sscanf(line.c_str(), "%c %llu %llu", &kind, &id, &size) != 3) {
      fail("cannot read the event '" + line + "'");
    }
    Event event;
    event.size = size;
    if (kind == 'a') {
      if (live.count(id) != 0) {
        fail("id " + std::to_string(id) + " allocated twice");
      }
      std::uint32_t slot = trace.slots;
      if (!free_slots.empty()) {
        slot = free_slots.back();
        free_slots.pop_back();
      } else {
        ++trace.slots;
      }
      live.emplace(id, std::make_pair(slot, event.size));
      event.allocate = true;
      event.slot = slot;
      ++trace.allocations;
      in_use += event.size;
      trace.peak_in_use = in_use > trace.peak_in_use ? in_use : trace.peak_in_use;
    } else if (kind == 'f') {
      const auto found = live.find(id);
      if (found == live.end()) {
        fail("free of id " + std::to_string(id) + ", which is not live");
      }
      event.slot = found->second.first;
      event.size = found->second.second;
      free_slots.push_back(event.slot);
      live.erase(found);
      in_use -= event.size;
    } else {
      fail(std::string("unknown event '") + kind + "'");
    }
    trace.events.push_back(event);
    trace.new_high.push_back(in_use > earlier_high);
    earlier_high = std::max(earlier_high, in_use);
    trace.in_use.push_back(in_use);
  }
  if (trace.events.empty()) {
    throw std::runtime_error("trace " + path + " has no events (is gzip installed?)");
  }
  return trace;
}

} // namespace taintpool::replay
