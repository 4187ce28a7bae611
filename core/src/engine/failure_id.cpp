#include <taintpool/failure_id.hpp>

#include <ostream>
#include <stdexcept>

namespace taintpool {

namespace detail {
void throw_zero_id(const char* what) {
  throw std::invalid_argument(std::string(what) + " id 0 is never minted; ids start at 1");
}
} // namespace detail

std::string to_string(FailureId id) {
  return "failure " + std::to_string(id.raw());
}
std::string to_string(AllocationId id) {
  std::string text = "allocation " + std::to_string(allocation_number(id));
  if (allocation_space(id) != 0) {
    text += " (memory " + std::to_string(allocation_space(id)) + ")";
  }
  return text;
}
std::ostream& operator<<(std::ostream& out, FailureId id) {
  return out << to_string(id);
}
std::ostream& operator<<(std::ostream& out, AllocationId id) {
  return out << to_string(id);
}

} // namespace taintpool
