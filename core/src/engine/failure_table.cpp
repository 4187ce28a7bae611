#include <taintpool/detail/failure_table.hpp>

#include <utility>

namespace taintpool::detail {

FailureNode::FailureNode(FailureNode&& other) noexcept
    : id(std::exchange(other.id, 0))
    , tags(std::exchange(other.tags, 0))
    , error(std::move(other.error))
    , skips(std::exchange(other.skips, nullptr)) {
  other.error = Error::torn_down();
}

FailureNode& FailureNode::operator=(FailureNode&& other) noexcept {
  if (this != &other) {
    delete skips;
    id = std::exchange(other.id, 0);
    tags = std::exchange(other.tags, 0);
    error = std::move(other.error);
    skips = std::exchange(other.skips, nullptr);
    other.error = Error::torn_down();
  }
  return *this;
}

void FailureNode::vacate() noexcept {
  id = 0;
  tags = 0;
  error = Error::torn_down();
  delete skips;
  skips = nullptr;
}

} // namespace taintpool::detail
