#include <taintpool/model/pool_model.hpp>

#include <stdexcept>
#include <string>

namespace taintpool::model {

namespace {
[[noreturn]] void violated(const std::string& what) {
  throw std::logic_error("pool model: " + what);
}
} // namespace

PoolModel::PoolModel(MemoryConfig config)
    : config_(std::move(config)) {
}

bool PoolModel::too_big(std::uint64_t size) const {
  return size > config_.max_allocation;
}

std::uint32_t PoolModel::pool_for(std::uint64_t size) const {
  std::uint32_t index = 0;
  for (const SlicedPoolConfig& pool : config_.sliced) {
    if (size <= pool.max_slice) {
      return index;
    }
    ++index;
  }
  return index;
}

std::uint64_t PoolModel::aligned_extent(std::uint64_t size) const {
  const std::uint64_t unit = config_.alignment;
  if (size == 0) {
    return unit;
  }
  return (size / unit + (size % unit != 0 ? 1 : 0)) * unit;
}

PoolModel::Record* PoolModel::find(AllocationId id) {
  for (Record& record : records_) {
    if (record.id == id) {
      return &record;
    }
  }
  return nullptr;
}

const PoolModel::Record* PoolModel::find(AllocationId id) const {
  return const_cast<PoolModel*>(this)->find(id);
}

void PoolModel::allocated(AllocationId id, std::uint64_t size, std::uint64_t address,
                          std::uint64_t extent, std::uint32_t pool) {
  if (!records_.empty() && !(records_.back().id < id)) {
    violated("allocation ids must count up and never repeat; got " + to_string(id) + " after " +
             to_string(records_.back().id));
  }
  if (too_big(size)) {
    violated("P3: a size above max_allocation was allocated");
  }
  if (address % config_.alignment != 0) {
    violated("P2: " + to_string(id) + " at address " + std::to_string(address) +
             " is not aligned to " + std::to_string(config_.alignment));
  }
  if (pool != pool_for(size)) {
    violated("routing: a " + std::to_string(size) + "-byte allocation went to pool " +
             std::to_string(pool) + ", not " + std::to_string(pool_for(size)));
  }
  const std::uint64_t least = aligned_extent(size);
  const bool exclusive = pool == config_.sliced.size();
  const std::uint64_t most =
      exclusive ? least + least / 8 * config_.exclusive_reuse_slack_eighths : least;
  if (extent < least || extent > most) {
    violated("P2: " + to_string(id) + " of " + std::to_string(size) + " bytes occupies " +
             std::to_string(extent) + " bytes; expected " + std::to_string(least) +
             (exclusive ? " to " + std::to_string(most) : std::string()));
  }
  if (address > UINT64_MAX - extent) {
    violated("P2: an allocation's address + extent overflows");
  }
  for (const Record& other : records_) {
    if (other.state == State::Ended || !other.placed) {
      continue;
    }
    if (address < other.address + other.extent && other.address < address + extent) {
      violated("P2: " + to_string(id) + " overlaps live " + to_string(other.id));
    }
  }
  records_.push_back(
      Record{id, size, address, extent, 1, State::Live, engine_.add_allocation(), true});
}

void PoolModel::allocated_unplaced(AllocationId id, std::uint64_t size) {
  if (!(id == next_id())) {
    violated("allocation ids must count up by one; got " + to_string(id) + ", expected " +
             to_string(next_id()));
  }
  records_.push_back(
      Record{id, size, 0, aligned_extent(size), 1, State::Live, engine_.add_allocation(), false});
}

AllocationId PoolModel::next_id() const {
  return AllocationId::from_raw(records_.empty() ? 1 : records_.back().id.raw() + 1);
}

void PoolModel::handle_copied(AllocationId id) {
  Record* record = find(id);
  if (record == nullptr || record->handles == 0) {
    violated("copy of a handle nobody holds");
  }
  ++record->handles;
}

void PoolModel::handle_dropped(AllocationId id) {
  Record* record = find(id);
  if (record == nullptr || record->handles == 0) {
    violated("drop of a handle nobody holds");
  }
  if (--record->handles == 0 && record->state == State::Live) {
    record->state = State::Pending;
  }
}

void PoolModel::end(Record& record) {
  record.state = State::Ended;
  engine_.clear(record.carrier); // P1: its tags go with it.
}

void PoolModel::manager_called() {
  for (Record& record : records_) {
    if (record.state == State::Pending) {
      end(record);
    }
  }
}

void PoolModel::reset() {
  manager_called();
  for (Record& record : records_) {
    if (record.state == State::Live) {
      end(record);
    }
  }
}

PoolModel::BindingCheck PoolModel::check(const Binding& binding) const {
  const Record* record = find(binding.allocation);
  if (record == nullptr || record->state != State::Live) {
    return BindingCheck::NotFound;
  }
  if (binding.range.end() > record->size) {
    return BindingCheck::InvalidBinding;
  }
  return BindingCheck::Ok;
}

void PoolModel::taint(const Binding& binding, FailureId failure) {
  engine_.taint(find(binding.allocation)->carrier, binding.range, failure);
}

void PoolModel::written(const Binding& binding) {
  engine_.written(find(binding.allocation)->carrier, binding.range);
}

std::vector<FailureId> PoolModel::failures(const Binding& binding) const {
  return engine_.failures(find(binding.allocation)->carrier, binding.range);
}

std::vector<std::pair<FailureId, ByteRange>> PoolModel::claims(AllocationId id) const {
  const Record* record = find(id);
  if (record == nullptr || record->state == State::Ended) {
    return {};
  }
  return engine_.claims(record->carrier);
}

bool PoolModel::live(AllocationId id) const {
  const Record* record = find(id);
  return record != nullptr && record->state == State::Live;
}

std::vector<AllocationId> PoolModel::live_allocations() const {
  std::vector<AllocationId> found;
  for (const Record& record : records_) {
    if (record.state == State::Live) {
      found.push_back(record.id);
    }
  }
  return found;
}

std::uint64_t PoolModel::allocations() const {
  std::uint64_t count = 0;
  for (const Record& record : records_) {
    count += record.state != State::Ended ? 1 : 0;
  }
  return count;
}

std::uint64_t PoolModel::in_use() const {
  std::uint64_t total = 0;
  for (const Record& record : records_) {
    total += record.state != State::Ended ? record.size : 0;
  }
  return total;
}

std::uint64_t PoolModel::padding() const {
  std::uint64_t total = 0;
  for (const Record& record : records_) {
    total += record.state != State::Ended ? record.extent - record.size : 0;
  }
  return total;
}

std::uint64_t PoolModel::handles(AllocationId id) const {
  const Record* record = find(id);
  return record != nullptr ? record->handles : 0;
}

} // namespace taintpool::model
