// Allocation traces of real workloads (../shared/traces/README.md,
// bench/traces/): reading one into the form every replay uses. Header-only,
// no dependency beyond the standard library: a .gz trace is read through
// `gzip -dc`, which every machine we run on has.
//
// Format: `# key value` facts, then one event per line in program order:
//   a <id> <size> <stream>   allocate <size> bytes (as requested); older
//                            traces have no <stream>
//   f <id> <size>            free allocation <id> (<size>: as allocated)
// Fields are decimal numbers below 2^64, separated by blanks; a line is
// read whole and must hold nothing else (load_trace says what it refuses).
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
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
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

/// The longest line load_trace reads: an event is a few dozen bytes, a
/// fact a few hundred.
inline constexpr std::size_t max_line_bytes = std::size_t{1} << 16;

/// One blank-separated field of `line` from `at` (spaces and tabs), empty
/// at the end; `at` moves past it.
inline std::string_view next_field(std::string_view line, std::size_t& at) noexcept {
  while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) {
    ++at;
  }
  const std::size_t begin = at;
  while (at < line.size() && line[at] != ' ' && line[at] != '\t') {
    ++at;
  }
  return line.substr(begin, at - begin);
}

/// `field` as a decimal number if it is one exactly: digits only (no sign,
/// no blank, no unit, no NUL) and below 2^64.
inline std::optional<std::uint64_t> decimal(std::string_view field) noexcept {
  std::uint64_t value = 0;
  const char* end = field.data() + field.size();
  const auto [stop, error] = std::from_chars(field.data(), end, value);
  if (field.empty() || error != std::errc() || stop != end) {
    return std::nullopt;
  }
  return value;
}
} // namespace detail

/// Reads a trace (plain or .gz). Throws std::runtime_error naming the file
/// and line of anything malformed: an unknown event, a field that is not a
/// decimal below 2^64 (a sign, a unit, a NUL, an overflow), a field too
/// many, a free of an id that is not live or of another size than it was
/// allocated with, an id allocated twice, live bytes past 2^64; and a .gz
/// that gzip cannot decode whole (corrupt, truncated, not gzip).
///
/// Strict on purpose: the replays' figures stand for the workload only if
/// the trace is read exactly as written, and a file users hand us may be
/// anything. sscanf("%llu") took "-5" as 2^64 - 5, ignored what followed
/// the last field, and a fixed 512-byte buffer cut long lines in two, the
/// second half read as a line of its own; a truncated .gz was replayed as
/// far as gzip got (review1). Lines are read whole, up to
/// detail::max_line_bytes (a longer one is refused, not cut); a trace is
/// read once per replay, so the parse's cost is beside the point.
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
    // "--": a path that starts with '-' is a file, not an option.
    pipe.reset(popen(("gzip -dc -- '" + path + "'").c_str(), "r"));
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
  std::size_t number = 0;
  // gzip writes what it decoded before it finds the stream corrupt or cut
  // short, so only its exit status says whether what was read is the whole
  // trace; it is asked at the end, and before a malformed line is blamed
  // (a cut stream ends in half a line: the cause is the cut).
  auto check_gzip = [&] {
    if (!gz) {
      return;
    }
    char drain[4096];
    while (std::fread(drain, 1, sizeof drain, in) == sizeof drain) {
    }
    const int status = pclose(pipe.release());
    if (status != 0) {
      throw std::runtime_error("trace " + path + ": gzip -dc failed (status " +
                               std::to_string(status) + "): corrupt, truncated or not gzip");
    }
  };
  auto fail = [&](const std::string& why) {
    check_gzip();
    throw std::runtime_error(path + ":" + std::to_string(number) + ": " + why);
  };
  std::string bytes; // The line being read, kept for its capacity.
  for (;;) {
    int c = getc_unlocked(in);
    if (c == EOF) {
      break;
    }
    ++number;
    bytes.clear();
    // Byte by byte, NULs included (a NUL is then a malformed field), up to
    // a bound: a line is a few dozen bytes, and a file of one endless line
    // must be refused, not read into memory until the host runs out.
    for (; c != EOF && c != '\n'; c = getc_unlocked(in)) {
      if (bytes.size() == detail::max_line_bytes) {
        fail("a line longer than " + std::to_string(detail::max_line_bytes) + " bytes");
      }
      bytes.push_back(static_cast<char>(c));
    }
    std::string_view line(bytes);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
      line.remove_suffix(1);
    }
    if (line.empty()) {
      continue;
    }
    if (line[0] == '#') {
      // A fact is "# key value"; any other '#' line is a comment.
      const std::size_t key_end = line.find(' ', 2);
      if (line.size() > 2 && line[1] == ' ' && key_end != std::string_view::npos) {
        trace.facts[std::string(line.substr(2, key_end - 2))] = line.substr(key_end + 1);
      }
      continue;
    }
    std::size_t at = 0;
    const std::string_view kind = detail::next_field(line, at);
    if (line[0] == ' ' || line[0] == '\t' || (kind != "a" && kind != "f")) {
      fail("unknown event '" + std::string(line.substr(0, 64)) + "'");
    }
    const auto field = [&](const char* what, bool required) -> std::optional<std::uint64_t> {
      const std::string_view text = detail::next_field(line, at);
      if (text.empty() && !required) {
        return std::nullopt;
      }
      const std::optional<std::uint64_t> value = detail::decimal(text);
      if (!value) {
        fail(std::string("the ") + what + " '" + std::string(text.substr(0, 32)) +
             "' is not a decimal number below 2^64");
      }
      return value;
    };
    const std::uint64_t id = *field("id", true);
    const std::uint64_t size = *field("size", true);
    if (kind == "a") {
      static_cast<void>(field("stream", false)); // Optional: older traces have none.
    }
    if (!detail::next_field(line, at).empty()) {
      fail("a field after the last in '" + std::string(line.substr(0, 64)) + "'");
    }
    Event event;
    event.size = size;
    if (kind == "a") {
      if (live.count(id) != 0) {
        fail("id " + std::to_string(id) + " allocated twice");
      }
      if (size > UINT64_MAX - in_use) {
        fail("live bytes overflow 64 bits");
      }
      std::uint32_t slot = trace.slots;
      if (!free_slots.empty()) {
        slot = free_slots.back();
        free_slots.pop_back();
      } else if (trace.slots == UINT32_MAX) {
        fail("more than 2^32 - 1 buffers live at once");
      } else {
        ++trace.slots;
      }
      live.emplace(id, std::make_pair(slot, event.size));
      event.allocate = true;
      event.slot = slot;
      ++trace.allocations;
      in_use += event.size;
      trace.peak_in_use = in_use > trace.peak_in_use ? in_use : trace.peak_in_use;
    } else {
      const auto found = live.find(id);
      if (found == live.end()) {
        fail("free of id " + std::to_string(id) + ", which is not live");
      }
      if (found->second.second != size) {
        fail("free of id " + std::to_string(id) + " as " + std::to_string(size) +
             " bytes, allocated as " + std::to_string(found->second.second));
      }
      event.slot = found->second.first;
      free_slots.push_back(event.slot);
      live.erase(found);
      in_use -= event.size;
    }
    trace.events.push_back(event);
    trace.new_high.push_back(in_use > earlier_high);
    earlier_high = std::max(earlier_high, in_use);
    trace.in_use.push_back(in_use);
  }
  if (std::ferror(in) != 0) {
    throw std::runtime_error("cannot read trace " + path);
  }
  check_gzip();
  if (trace.events.empty()) {
    throw std::runtime_error("trace " + path + " has no events");
  }
  return trace;
}

/// The three parts a simulation over a trace counts calls in
/// (physical_units, unit_placement): the cold replay's first half, its
/// second half ("after the first step", steady_from), and a warm replay on
/// the state the cold one left.
enum Phase : int { cold_first_half = 0, after_first_step = 1, warm = 2 };

/// Runs `on_event(phase, event)` over every event of `trace`, cold and then
/// warm, calling `end_round()` after each pass (where a simulation drops
/// whatever the trace left live, as pool_replay does between replays).
template <class OnEvent, class EndRound>
void replay_cold_then_warm(const Trace& trace, OnEvent&& on_event, EndRound&& end_round) {
  for (int round = 0; round < 2; ++round) {
    for (std::size_t event = 0; event < trace.events.size(); ++event) {
      const Phase phase =
          round == 1 ? warm : (event >= trace.steady_from() ? after_first_step : cold_first_half);
      on_event(phase, trace.events[event]);
    }
    end_round();
  }
}

} // namespace taintpool::replay
