#include <taintpool/failure_id.hpp>

#include <ostream>
#include <stdexcept>

#include "words.hpp"

namespace taintpool {

namespace detail {
void throw_zero_id(const char* what) {
  throw std::invalid_argument(std::string(what) + " id 0 is never minted; ids start at 1");
}
void throw_bad_allocation_id(std::uint32_t space, std::uint64_t number) {
  throw std::invalid_argument("no allocation id is number " + std::to_string(number) +
                              " in space " + std::to_string(space) +
                              ": numbers run from 1 to 2^52 - 1, spaces below 2^12");
}
} // namespace detail

std::string to_string(FailureId id) {
  std::string text;
  words::append(text, id);
  return text;
}
std::string to_string(AllocationId id) {
  std::string text;
  words::append(text, id);
  return text;
}
std::ostream& operator<<(std::ostream& out, FailureId id) {
  return out << to_string(id);
}
std::ostream& operator<<(std::ostream& out, AllocationId id) {
  return out << to_string(id);
}

} // namespace taintpool
