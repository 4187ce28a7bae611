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

// R4 for memory too: a failure's message leaves with its node. A plain
// `error = ...` would not free it: std::string's move-assignment may hand
// this node's old buffer to the source, and assigning an empty message
// keeps a buffer's capacity, so a vacant slot would hold a dead failure's
// message until some later node moved in (and a fuzzer that counts the
// mallocs and frees of each run would take every such run for a leak).
// Moving the old message out into a local that dies here frees it now.
FailureNode& FailureNode::operator=(FailureNode&& other) noexcept {
  if (this != &other) {
    delete skips;
    id = std::exchange(other.id, 0);
    tags = std::exchange(other.tags, 0);
    const Error dropped = std::exchange(error, std::move(other.error));
    skips = std::exchange(other.skips, nullptr);
    other.error = Error::torn_down();
  }
  return *this;
}

void FailureNode::vacate() noexcept {
  id = 0;
  tags = 0;
  const Error dropped = std::exchange(error, Error::torn_down());
  delete skips;
  skips = nullptr;
}

} // namespace taintpool::detail
