// TlaTrace: a fuzzer run written as a TLA+ trace module, for TLC to check
// that what the C++ did is a behaviour of the specs (proofs/TRACES.md).
//
// A trace is a sequence of event records holding only literals. Two things
// make a fuzzer's values fit TLC, whose integers are 32-bit:
//   * byte offsets are recorded raw (Value::offset) and compressed when the
//     module is written: every distinct offset of a *space* is replaced by its
//     rank in that space. One space for the whole trace (the taint traces: 0)
//     is strictly increasing on every allocation, as TRACES.md requires, and
//     stays consistent when claims move between allocations; a space per
//     allocation (the device traces, whose claims never move) keeps each
//     buffer as small as the offsets it uses. The top 64-bit window becomes
//     small numbers, and a 255-byte buffer read in two places three bytes. A
//     range given relative to another offset (S2's written ranges, relative
//     to their binding) is written as the difference of the two ranks
//     (Value::offset_delta), so adding it back gives the compressed offset;
//   * every other integer (ids, counts) must already be below 2^31; write()
//     refuses the trace otherwise rather than write a wrong one.
//
// Where a trace goes: the harness asks trace_path() for the file to write,
// from the TAINTPOOL_TRACE_OUT environment variable — unset: no tracing, the
// default; a directory: one <prefix><hash of the input>.tla per input; any
// other path: that file (its name, less .tla, is the module name, so it must
// be a valid one, e.g. taint_repro.tla).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taintpool::fuzz::tla {

class Value {
 public:
  [[nodiscard]] static Value number(std::uint64_t value) { return Value(Kind::number, value); }
  /// A byte offset: compressed to its rank among the offsets of `space`.
  [[nodiscard]] static Value offset(std::uint64_t value, std::uint64_t space = 0) {
    Value v(Kind::offset, value);
    v.space_ = space;
    return v;
  }
  /// rank(value) - rank(base) in `space` (value >= base): an offset relative
  /// to `base` that stays consistent with the compressed `base`.
  [[nodiscard]] static Value offset_delta(std::uint64_t base, std::uint64_t value,
                                          std::uint64_t space = 0) {
    Value v(Kind::offset_delta, value);
    v.base_ = base;
    v.space_ = space;
    return v;
  }
  [[nodiscard]] static Value boolean(bool value) { return Value(Kind::boolean, value ? 1 : 0); }
  [[nodiscard]] static Value string(std::string text) {
    Value value(Kind::string, 0);
    value.text_ = std::move(text);
    return value;
  }
  [[nodiscard]] static Value tuple(std::vector<Value> items) {
    Value value(Kind::tuple, 0);
    value.items_ = std::move(items);
    return value;
  }
  /// A set literal; the items are written in the order given.
  [[nodiscard]] static Value set(std::vector<Value> items) {
    Value value(Kind::set, 0);
    value.items_ = std::move(items);
    return value;
  }
  /// A record; fields keep the order given.
  [[nodiscard]] static Value record(std::vector<std::pair<std::string, Value>> fields) {
    Value value(Kind::record, 0);
    for (auto& [name, item] : fields) {
      value.names_.push_back(std::move(name));
      value.items_.push_back(std::move(item));
    }
    return value;
  }

  /// Adds a field to a record.
  void set(std::string name, Value item) {
    names_.push_back(std::move(name));
    items_.push_back(std::move(item));
  }

  /// Every raw offset in this value, by space.
  void collect_offsets(std::map<std::uint64_t, std::vector<std::uint64_t>>& out) const {
    if (kind_ == Kind::offset) {
      out[space_].push_back(raw_);
    }
    if (kind_ == Kind::offset_delta) {
      out[space_].push_back(base_);
      out[space_].push_back(raw_);
    }
    for (const Value& item : items_) {
      item.collect_offsets(out);
    }
  }

  /// TLA+ text, offsets replaced by their rank in `ranks` (per space: sorted,
  /// unique). False if a number does not fit TLC's integers.
  bool render(const std::map<std::uint64_t, std::vector<std::uint64_t>>& ranks,
              std::string& out) const {
    constexpr std::uint64_t tlc_max = 2147483647;
    switch (kind_) {
    case Kind::number:
      if (raw_ > tlc_max) {
        return false;
      }
      out += std::to_string(raw_);
      return true;
    case Kind::offset:
      out += std::to_string(rank(ranks, raw_));
      return true;
    case Kind::offset_delta: {
      const std::uint64_t to = rank(ranks, raw_);
      const std::uint64_t from = rank(ranks, base_);
      if (to < from) {
        return false;
      }
      out += std::to_string(to - from);
      return true;
    }
    case Kind::boolean:
      out += raw_ != 0 ? "TRUE" : "FALSE";
      return true;
    case Kind::string:
      out += '"';
      for (const char c : text_) {
        if (c == '"' || c == '\\') {
          out += '\\';
        }
        out += c;
      }
      out += '"';
      return true;
    case Kind::tuple:
    case Kind::set:
      out += kind_ == Kind::tuple ? "<<" : "{";
      for (std::size_t at = 0; at < items_.size(); ++at) {
        out += at == 0 ? " " : ", ";
        if (!items_[at].render(ranks, out)) {
          return false;
        }
      }
      out += kind_ == Kind::tuple ? " >>" : " }";
      return true;
    case Kind::record:
      out += "[";
      for (std::size_t at = 0; at < items_.size(); ++at) {
        out += (at == 0 ? "" : ", ") + names_[at] + " |-> ";
        if (!items_[at].render(ranks, out)) {
          return false;
        }
      }
      out += "]";
      return true;
    }
    return false;
  }

 private:
  enum class Kind : std::uint8_t {
    number,
    offset,
    offset_delta,
    boolean,
    string,
    tuple,
    set,
    record
  };

  Value(Kind kind, std::uint64_t raw)
      : kind_(kind)
      , raw_(raw) {}

  std::uint64_t rank(const std::map<std::uint64_t, std::vector<std::uint64_t>>& ranks,
                     std::uint64_t value) const {
    const std::vector<std::uint64_t>& space = ranks.at(space_);
    return static_cast<std::uint64_t>(std::lower_bound(space.begin(), space.end(), value) -
                                      space.begin());
  }

  Kind kind_;
  std::uint64_t raw_;
  std::uint64_t base_ = 0;  ///< offset_delta: the offset it is relative to.
  std::uint64_t space_ = 0; ///< offset, offset_delta: whose offsets rank together.
  std::string text_;
  std::vector<std::string> names_; ///< record: one per item.
  std::vector<Value> items_;
};

/// A trace module: the events, and the constants its trace spec needs,
/// written as literals (TLC would take minutes to compute them from a long
/// trace): TraceOffsets, always (the largest offset after compression, in
/// any space, so offsets are 0..TraceOffsets), and whatever define() adds (TaintTrace:
/// TraceAllocs, TraceMaxId; ScopesTrace: TraceSizes, TraceLaunches).
class Trace {
 public:
  void add(Value event) { events_.push_back(std::move(event)); }
  [[nodiscard]] std::size_t size() const noexcept { return events_.size(); }

  /// `name == value` in the module, before the trace. Offsets in `value` are
  /// compressed with the trace's.
  void define(std::string name, Value value) {
    definitions_.emplace_back(std::move(name), std::move(value));
  }

  /// Writes the module `path` (its stem is the module name) with `comments`
  /// as header lines after "\* expect: accepted". False, with a message on
  /// stderr, if it cannot.
  bool write(const std::filesystem::path& path, const std::vector<std::string>& comments) const {
    std::map<std::uint64_t, std::vector<std::uint64_t>> ranks;
    for (const Value& event : events_) {
      event.collect_offsets(ranks);
    }
    for (const auto& definition : definitions_) {
      definition.second.collect_offsets(ranks);
    }
    std::size_t largest = 0;
    for (auto& [space, offsets] : ranks) {
      std::sort(offsets.begin(), offsets.end());
      offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
      largest = std::max(largest, offsets.size() - 1);
    }
    const std::string module = path.stem().string();
    std::string text = "---- MODULE " + module + " ----\n\\* expect: accepted\n";
    for (const std::string& comment : comments) {
      text += "\\* " + comment + "\n";
    }
    text += "TraceOffsets == " + std::to_string(largest) + "\n";
    for (const auto& [name, value] : definitions_) {
      text += name + " == ";
      if (!value.render(ranks, text)) {
        std::fprintf(stderr, "tla trace: %s has a number past TLC's 2^31 - 1; %s not written\n",
                     name.c_str(), path.c_str());
        return false;
      }
      text += "\n";
    }
    text += "Trace == <<";
    for (std::size_t at = 0; at < events_.size(); ++at) {
      text += at == 0 ? "\n  " : ",\n  ";
      if (!events_[at].render(ranks, text)) {
        std::fprintf(stderr,
                     "tla trace: event %zu has a number past TLC's 2^31 - 1; %s not written\n",
                     at + 1, path.c_str());
        return false;
      }
    }
    text += "\n>>\n====\n";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) {
      std::fprintf(stderr, "tla trace: cannot write %s\n", path.c_str());
      return false;
    }
    return true;
  }

 private:
  std::vector<Value> events_;
  std::vector<std::pair<std::string, Value>> definitions_;
};

/// A module name TLC and proofs/check accept: [A-Za-z0-9_]+ starting with
/// `prefix` (taint_ or scopes_).
inline bool valid_module_name(const std::string& name, const std::string& prefix) {
  return name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_';
         });
}

/// Where this input's trace goes (see the file comment), or none when
/// tracing is off or TAINTPOOL_TRACE_OUT names an unusable file.
inline std::optional<std::filesystem::path> trace_path(const std::uint8_t* data, std::size_t size,
                                                       const std::string& prefix) {
  const char* setting = std::getenv("TAINTPOOL_TRACE_OUT");
  if (setting == nullptr || *setting == '\0') {
    return std::nullopt;
  }
  const std::filesystem::path target(setting);
  std::error_code error;
  if (std::filesystem::is_directory(target, error)) {
    std::uint64_t hash = 0xcbf29ce484222325ull; // FNV-1a: a stable name per input.
    for (std::size_t at = 0; at < size; ++at) {
      hash = (hash ^ data[at]) * 0x100000001b3ull;
    }
    char name[17];
    std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(hash));
    return target / (prefix + name + ".tla");
  }
  if (target.extension() != ".tla" || !valid_module_name(target.stem().string(), prefix)) {
    std::fprintf(stderr,
                 "tla trace: TAINTPOOL_TRACE_OUT=%s must be a directory or a file %s<name>.tla "
                 "(letters, digits, _); no trace written\n",
                 setting, prefix.c_str());
    return std::nullopt;
  }
  return target;
}

} // namespace taintpool::fuzz::tla
