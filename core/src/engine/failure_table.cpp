#include <bit>
#include <stdexcept>
#include <string>
#include <utility>

#include <taintpool/detail/failure_table.hpp>

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

void FailureTable::insert(FailureNode&& node) {
  if ((size_ + 1) * 2 > slots_.size()) {
    grow();
  }
  std::size_t at = home(node.id);
  while (slots_[at].id != 0) {
    at = (at + 1) & mask();
  }
  slots_[at] = std::move(node);
  ++size_;
}

void FailureTable::erase(FailureNode* slot) noexcept {
  // Backward-shift deletion: walk the cluster after the hole and pull back
  // every node whose home is not cyclically between the hole and where it
  // sits, so a probe from any home still meets no vacant slot before its node.
  std::size_t hole = static_cast<std::size_t>(slot - slots_.data());
  slots_[hole].vacate();
  --size_;
  for (std::size_t next = (hole + 1) & mask(); slots_[next].id != 0; next = (next + 1) & mask()) {
    const std::size_t want = home(slots_[next].id);
    const bool stays = hole <= next ? (hole < want && want <= next) : (hole < want || want <= next);
    if (!stays) {
      slots_[hole] = std::move(slots_[next]);
      hole = next;
    }
  }
}

void FailureTable::grow() {
  const std::size_t capacity = slots_.empty() ? 8 : slots_.size() * 2;
  std::vector<FailureNode> old(capacity);
  old.swap(slots_);
  shift_ = 64u - static_cast<unsigned>(std::countr_zero(capacity));
  for (FailureNode& node : old) {
    if (node.id != 0) {
      std::size_t at = home(node.id);
      while (slots_[at].id != 0) {
        at = (at + 1) & mask();
      }
      slots_[at] = std::move(node);
    }
  }
}

void FailureTable::check_invariants() const {
  std::size_t live = 0;
  for (std::size_t at = 0; at < slots_.size(); ++at) {
    const std::uint64_t id = slots_[at].id;
    if (id == 0) {
      continue;
    }
    ++live;
    for (std::size_t probe = home(id); probe != at; probe = (probe + 1) & mask()) {
      if (slots_[probe].id == 0) {
        throw std::logic_error("failure table: failure " + std::to_string(id) +
                               " is unreachable from its home slot");
      }
    }
  }
  if (live != size_) {
    throw std::logic_error("failure table: counts " + std::to_string(size_) + " nodes, holds " +
                           std::to_string(live));
  }
  if (size_ * 2 > slots_.size()) {
    throw std::logic_error("failure table: load above one half");
  }
}

} // namespace taintpool::detail
