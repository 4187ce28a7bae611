#include <taintpool/detail/failure_table.hpp>

#include <memory>
#include <utility>

namespace taintpool::detail {

namespace {

// Puts TornDown into `error` in place: the old message (if it has a buffer)
// is freed here, and the new value is built where it lives. What an
// assignment of Error::torn_down() gives, without its temporary and
// std::string's move-assignment (which weighs heap against inline buffers
// on each side): a node's error is reset on every move and vacate, and the
// failure table moves every node each time it grows (issue 13: these moves
// were about 3% of taint_fuzzer's time under AddressSanitizer).
void reset_to_torn_down(Error& error) noexcept {
  std::destroy_at(&error);
  std::construct_at(&error, Error::torn_down());
}

} // namespace

FailureNode::FailureNode(FailureNode&& other) noexcept
    : id(std::exchange(other.id, 0))
    , tags(std::exchange(other.tags, 0))
    , error(std::move(other.error))
    , skips(std::exchange(other.skips, nullptr)) {
  reset_to_torn_down(other.error);
}

// R4 for memory too: a failure's message leaves with its node. A plain
// `error = ...` would not free it: std::string's move-assignment may hand
// this node's old buffer to the source, and assigning an empty message
// keeps a buffer's capacity, so a vacant slot would hold a dead failure's
// message until some later node moved in (and a fuzzer that counts the
// mallocs and frees of each run would take every such run for a leak).
// Destroying the old error frees it now; the source's is then moved in
// (its buffer, if any, changes hands: no copy) and the source reset to
// TornDown in place (pinned by
// SteadyState.R4_APrunedFailureFreesItsMessageThenNotWhenItsSlotIsNextUsed).
FailureNode& FailureNode::operator=(FailureNode&& other) noexcept {
  if (this != &other) {
    delete skips;
    id = std::exchange(other.id, 0);
    tags = std::exchange(other.tags, 0);
    std::destroy_at(&error);
    std::construct_at(&error, std::move(other.error));
    skips = std::exchange(other.skips, nullptr);
    reset_to_torn_down(other.error);
  }
  return *this;
}

void FailureNode::vacate() noexcept {
  id = 0;
  tags = 0;
  reset_to_torn_down(error);
  delete skips;
  skips = nullptr;
}

} // namespace taintpool::detail
