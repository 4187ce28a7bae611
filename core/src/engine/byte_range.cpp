#include <taintpool/byte_range.hpp>

#include <ostream>
#include <stdexcept>

#include "words.hpp"

namespace taintpool {

void ByteRange::throw_inverted(std::uint64_t begin, std::uint64_t end) {
  throw std::invalid_argument("byte range begins after it ends: begin " + std::to_string(begin) +
                              " > end " + std::to_string(end));
}

void ByteRange::throw_overflow(std::uint64_t offset, std::uint64_t size) {
  throw std::overflow_error("byte range overflows 64 bits: offset " + std::to_string(offset) +
                            " + size " + std::to_string(size) + " > 2^64 - 1");
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
