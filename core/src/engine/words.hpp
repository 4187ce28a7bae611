// The words ids, ranges and errors are written in, appended to a string in
// place. Internal to core: to_string(FailureId), to_string(AllocationId),
// to_string(ByteRange) and to_string(Error) are these appends into a fresh
// string, and to_string(Report) makes them into one string sized once
// (report.cpp: a chain of temporaries was most of taint_fuzzer's allocations
// in its report op, issue 13). One spelling for both, so a report's words
// cannot drift from the ids' own (tests/engine/report_text_test.cpp pins them).
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/failure_id.hpp>

#include <charconv>
#include <cstdint>
#include <string>

namespace taintpool::words {

inline void append_number(std::string& text, std::uint64_t value) {
  char digits[20]; // 2^64 - 1 has 20 digits.
  const auto written = std::to_chars(digits, digits + sizeof digits, value);
  text.append(digits, written.ptr);
}

/// "failure 12".
inline void append(std::string& text, FailureId id) {
  text += "failure ";
  append_number(text, id.raw());
}

/// "allocation 7", or "allocation 7 (memory 2)" outside the first space.
inline void append(std::string& text, AllocationId id) {
  text += "allocation ";
  append_number(text, allocation_number(id));
  if (allocation_space(id) != 0) {
    text += " (memory ";
    append_number(text, allocation_space(id));
    text += ')';
  }
}

/// "[begin, end)".
inline void append(std::string& text, ByteRange range) {
  text += '[';
  append_number(text, range.begin());
  text += ", ";
  append_number(text, range.end());
  text += ')';
}

/// "launch failed: message", or the kind's name alone.
inline void append(std::string& text, const Error& error) {
  text += name(error.kind());
  if (!error.message().empty()) {
    text += ": ";
    text += error.message();
  }
}

} // namespace taintpool::words
