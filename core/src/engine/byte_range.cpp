#include <taintpool/byte_range.hpp>

#include <ostream>
#include <stdexcept>

#include "words.hpp"

namespace taintpool {

// Both refusals write their words into one string reserved once (two
// 20-digit numbers fit in 96 bytes): the operator+ chains they replace built
// a temporary per piece, and taint_fuzzer builds bad ranges on purpose
// (issue 13, twenty-ninth round). The exception then copies the text once.
// tests/engine/refusal_text_test.cpp pins the words.
void ByteRange::throw_inverted(std::uint64_t begin, std::uint64_t end) {
  std::string text;
  text.reserve(96);
  text += "byte range begins after it ends: begin ";
  words::append_number(text, begin);
  text += " > end ";
  words::append_number(text, end);
  throw std::invalid_argument(text);
}

void ByteRange::throw_overflow(std::uint64_t offset, std::uint64_t size) {
  std::string text;
  text.reserve(96);
  text += "byte range overflows 64 bits: offset ";
  words::append_number(text, offset);
  text += " + size ";
  words::append_number(text, size);
  text += " > 2^64 - 1";
  throw std::overflow_error(text);
}

std::string to_string(ByteRange range) {
  std::string text;
  words::append(text, range);
  return text;
}

std::ostream& operator<<(std::ostream& out, ByteRange range) {
  return out << to_string(range);
}

} // namespace taintpool
