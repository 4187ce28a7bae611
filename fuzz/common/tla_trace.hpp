// TlaTrace: a fuzzer run written as a TLA+ trace module, for TLC to check
// that what the C++ did is a behaviour of the specs (proofs/TRACES.md).
//
// A trace is a sequence of event records holding only literals. Two things
// make a fuzzer's values fit TLC, whose integers are 32-bit:
//   * byte offsets are recorded raw (Value::offset) and compressed when the
//     module is written: every distinct offset of the trace is replaced by its
//     rank. One map for the whole trace is strictly increasing on every
//     allocation, as TRACES.md requires, and stays consistent when claims move
//     between allocations. The top 64-bit window becomes small numbers;
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
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taintpool::fuzz::tla {

class Value {
 public:
  [[nodiscard]] static Value number(std::uint64_t value) { return Value(Kind::number, value); }
  /// A byte offset: compressed to its rank among the trace's offsets.
  [[nodiscard]] static Value offset(std::uint64_t value) { return Value(Kind::offset, value); }
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

  /// Every raw offset in this value.
  void collect_offsets(std::vector<std::uint64_t>& out) const {
    if (kind_ == Kind::offset) {
      out.push_back(raw_);
    }
    for (const Value& item : items_) {
      item.collect_offsets(out);
    }
  }

  /// TLA+ text, offsets replaced by their rank in `ranks` (sorted, unique).
  /// False if a number does not fit TLC's integers.
  bool render(const std::vector<std::uint64_t>& ranks, std::string& out) const {
    constexpr std::uint64_t tlc_max = 2147483647;
    switch (kind_) {
    case Kind::number:
      if (raw_ > tlc_max) {
        return false;
      }
      out += std::to_string(raw_);
      return true;
    case Kind::offset: {
      const auto at = std::lower_bound(ranks.begin(), ranks.end(), raw_);
      out += std::to_string(at - ranks.begin());
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
      out += "<<";
      for (std::size_t at = 0; at < items_.size(); ++at) {
        out += at == 0 ? " " : ", ";
        if (!items_[at].render(ranks, out)) {
          return false;
        }
      }
      out += " >>";
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
  enum class Kind : std::uint8_t { number, offset, boolean, string, tuple, record };

  Value(Kind kind, std::uint64_t raw)
      : kind_(kind)
      , raw_(raw) {}

  Kind kind_;
  std::uint64_t raw_;
  std::string text_;
  std::vector<std::string> names_; ///< record: one per item.
  std::vector<Value> items_;
};

class Trace {
 public:
  void add(Value event) { events_.push_back(std::move(event)); }
  [[nodiscard]] std::size_t size() const noexcept { return events_.size(); }

  /// Writes the module `path` (its stem is the module name) with `comments`
  /// as header lines after "\* expect: accepted". False, with a message on
  /// stderr, if it cannot.
  bool write(const std::filesystem::path& path, const std::vector<std::string>& comments) const {
    std::vector<std::uint64_t> ranks;
    for (const Value& event : events_) {
      event.collect_offsets(ranks);
    }
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    const std::string module = path.stem().string();
    std::string text = "---- MODULE " + module + " ----\n\\* expect: accepted\n";
    for (const std::string& comment : comments) {
      text += "\\* " + comment + "\n";
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
