// show(): one-line text for every value a differential fuzzer compares, so a
// mismatch prints both sides in a form a person can diff by eye.
//
// Why not the library's own to_string: those are written for end users (a
// Report prints as a multi-line story, an Error hides an empty message), and
// a fuzz failure needs the opposite — every field, on one line, with strings
// quoted so "" and a missing value look different.
//
// Only public value types (ByteRange, ids, Error, SkipRecord, Report) and
// standard containers: nothing here depends on how core is configured (e.g.
// TAINTPOOL_TAINT_INLINE_CLAIMS), so every fuzz target variant can include it.
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/report.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace taintpool::fuzz {

inline std::string show(bool value) {
  return value ? "true" : "false";
}

template <class T>
requires std::is_integral_v<T> std::string show(T value) {
  return std::to_string(value);
}

inline std::string show(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  return out + "\"";
}
inline std::string show(const std::string& text) {
  return show(std::string_view(text));
}

/// An offset; those within 2^16 of the top print as "2^64-k", so ranges in
/// the high window fuzzers use to test the edges stay readable.
inline std::string show_offset(std::uint64_t offset) {
  if (offset > UINT64_MAX - 0x10000) {
    return "2^64-" + std::to_string(UINT64_MAX - offset + 1);
  }
  return std::to_string(offset);
}

inline std::string show(ByteRange range) {
  return "[" + show_offset(range.begin()) + ", " + show_offset(range.end()) + ")";
}
inline std::string show(FailureId id) {
  return "F" + std::to_string(id.raw());
}
inline std::string show(AllocationId id) {
  return "A" + std::to_string(id.raw());
}
inline std::string show(ErrorKind kind) {
  return std::string(name(kind));
}
inline std::string show(const Error& error) {
  return "{" + show(error.kind()) + " " + show(error.message()) + "}";
}

template <class T>
std::string show(const std::optional<T>& value);
template <class A, class B>
std::string show(const std::pair<A, B>& value);
template <class T>
std::string show(const std::vector<T>& values);

inline std::string show(const SkipRecord& record);
inline std::string show(const Report& report);

template <class T>
std::string show(const std::optional<T>& value) {
  return value ? show(*value) : std::string("none");
}

template <class A, class B>
std::string show(const std::pair<A, B>& value) {
  return "(" + show(value.first) + " " + show(value.second) + ")";
}

template <class T>
std::string show(const std::vector<T>& values) {
  std::string out = "[";
  for (std::size_t at = 0; at < values.size(); ++at) {
    out += (at == 0 ? "" : ", ") + show(values[at]);
  }
  return out + "]";
}

inline std::string show(const SkipRecord& record) {
  return "{skip " + show(record.kernel) + " needed " + show(record.needed) + " produced " +
         show(record.produced) + (record.ran ? " ran" : "") + "}";
}

inline std::string show(const Report& report) {
  return "{report " + show(report.failure) + " root " + show(report.root) + " read " +
         show(report.read) + " stale " + show(report.stale) + " path " + show(report.path) +
         " origin " + show(report.origin) + " skips " + show(report.skips_recorded) +
         " incomplete " + show(report.path_may_be_incomplete) + "}";
}

} // namespace taintpool::fuzz
