#include <taintpool/model/pool_model.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace taintpool::model {

namespace {
[[noreturn]] void violated(const std::string& what) {
  throw std::logic_error("pool model: " + what);
}
} // namespace

PoolModel::PoolModel(MemoryConfig config, AllocationId first)
    : config_(std::move(config))
    , first_(first) {
}

void PoolModel::restart(const MemoryConfig& config, AllocationId first) {
  config_ = config; // Copy-assigned: the sliced list keeps its capacity.
  first_ = first;
  engine_.restart(); // No allocation, the next failure id 1; maps kept as spares.
  records_.clear();
  blocks_.clear();
  released_.clear();
  kept_.clear();
  peak_in_use_ = 0;
  peak_reserved_ = 0;
  never_written_ = 0;
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

// ------------------------------------------------------------ storage mirror

void PoolModel::page_allocated(std::uint64_t address, std::uint64_t size) {
  forget_released(address, address + size); // fresh memory: nobody released it
  blocks_.push_back(Block{address, size, false, {}});
  track_peaks();
}

void PoolModel::page_freed(std::uint64_t address) {
  for (auto block = blocks_.begin(); block != blocks_.end(); ++block) {
    if (!block->reservation && block->address == address) {
      forget_released(block->address, block->address + block->size);
      blocks_.erase(block);
      return;
    }
  }
  violated("a page went back that the storage never gave");
}

void PoolModel::space_reserved(std::uint64_t address, std::uint64_t size) {
  blocks_.push_back(Block{address, size, true, {}});
}

void PoolModel::space_unreserved(std::uint64_t address) {
  for (auto block = blocks_.begin(); block != blocks_.end(); ++block) {
    if (block->reservation && block->address == address) {
      if (!block->chunks.empty()) {
        violated("a reservation went back with memory still mapped in it");
      }
      blocks_.erase(block);
      return;
    }
  }
  violated("a reservation went back that the storage never made");
}

void PoolModel::chunk_mapped(std::uint64_t address, std::uint64_t size) {
  for (Block& block : blocks_) {
    if (block.reservation && block.address <= address &&
        address + size <= block.address + block.size) {
      for (const auto& [begin, bytes] : block.chunks) {
        if (address < begin + bytes && begin < address + size) {
          violated("a chunk was mapped over one already mapped");
        }
      }
      forget_released(address, address + size);
      block.chunks.emplace_back(address, size);
      track_peaks();
      return;
    }
  }
  violated("a chunk was mapped outside every reservation");
}

void PoolModel::chunk_unmapped(std::uint64_t address) {
  for (Block& block : blocks_) {
    for (auto chunk = block.chunks.begin(); chunk != block.chunks.end(); ++chunk) {
      if (chunk->first == address) {
        for (const Record& record : records_) {
          if (record.state != State::Ended && record.placed &&
              record.address < address + chunk->second &&
              address < record.address + record.extent) {
            violated("P1/P2: a chunk went back under " + to_string(record.id) +
                     ", which still occupies it");
          }
        }
        forget_released(address, address + chunk->second);
        block.chunks.erase(chunk);
        return;
      }
    }
  }
  violated("a chunk went back that was never mapped");
}

void PoolModel::forget_released(std::uint64_t begin, std::uint64_t end) {
  const auto overlaps = [&](const Released& range) {
    return range.begin < end && begin < range.end;
  };
  // Nothing to forget (the common case): released_ would be rebuilt as it
  // is, range for range, so leave it. The rebuild allocated a fresh vector
  // per call: 6.5% of pool_fuzzer's allocations (issue 13, eighteenth round).
  if (std::none_of(released_.begin(), released_.end(), overlaps)) {
    return;
  }
  kept_.clear();
  for (const Released& range : released_) {
    if (!overlaps(range)) {
      kept_.push_back(range);
      continue;
    }
    if (range.begin < begin) {
      kept_.push_back(Released{range.begin, begin, range.lane});
    }
    if (end < range.end) {
      kept_.push_back(Released{end, range.end, range.lane});
    }
  }
  released_.swap(kept_); // Same ranges, same order as a fresh rebuild.
  kept_.clear();
}

bool PoolModel::in_memory(std::uint64_t begin, std::uint64_t end) const {
  // Walk the memory runs that cover `begin` onwards, chunk by chunk.
  std::uint64_t at = begin;
  bool progressed = true;
  while (at < end && progressed) {
    progressed = false;
    for (const Block& block : blocks_) {
      if (!block.reservation) {
        if (block.address <= at && at < block.address + block.size) {
          at = block.address + block.size;
          progressed = true;
        }
        continue;
      }
      for (const auto& [chunk, bytes] : block.chunks) {
        if (chunk <= at && at < chunk + bytes) {
          at = chunk + bytes;
          progressed = true;
        }
      }
    }
  }
  return at >= end;
}

void PoolModel::track_peaks() {
  peak_reserved_ = std::max(peak_reserved_, reserved());
  peak_in_use_ = std::max(peak_in_use_, in_use());
}

// ------------------------------------------------------------ lifecycle

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
                          std::uint64_t extent, std::uint32_t pool, std::uint32_t lane) {
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
  if (extent != aligned_extent(size)) {
    violated("P2: " + to_string(id) + " of " + std::to_string(size) + " bytes occupies " +
             std::to_string(extent) + " bytes; expected exactly " +
             std::to_string(aligned_extent(size)));
  }
  if (address > UINT64_MAX - extent) {
    violated("P2: an allocation's address + extent overflows");
  }
  if (!in_memory(address, address + extent)) {
    violated("P2: " + to_string(id) + " at [" + std::to_string(address) + ", +" +
             std::to_string(extent) + ") lies outside the memory the storage gave");
  }
  for (const Record& other : records_) {
    if (other.state == State::Ended || !other.placed) {
      continue;
    }
    if (address < other.address + other.extent && other.address < address + extent) {
      violated("P2: " + to_string(id) + " overlaps live " + to_string(other.id));
    }
  }
  for (const Released& range : released_) {
    if (range.lane != lane && address < range.end && range.begin < address + extent) {
      violated("P4: " + to_string(id) + " of lane " + std::to_string(lane) +
               " was given bytes an allocation of lane " + std::to_string(range.lane) +
               " released, before they went back to storage");
    }
  }
  forget_released(address, address + extent);
  records_.push_back(
      Record{id, size, address, extent, 1, State::Live, engine_.add_allocation(), true, lane});
  claim_never_written(records_.back());
  track_peaks();
}

void PoolModel::claim_never_written(const Record& record) {
  // N1: under NeverWritten every byte of a new allocation belongs to the one
  // NeverWritten failure, minted now if none lives.
  if (config_.fresh_bytes != FreshBytes::NeverWritten || record.size == 0) {
    return;
  }
  if (!never_written_failure()) {
    never_written_ = engine_.insert(Error::never_written()).raw();
  }
  engine_.taint(record.carrier, ByteRange::of(0, record.size), FailureId::from_raw(never_written_));
}

std::optional<FailureId> PoolModel::never_written_failure() const {
  if (never_written_ != 0 && engine_.live(FailureId::from_raw(never_written_))) {
    return FailureId::from_raw(never_written_);
  }
  return std::nullopt;
}

void PoolModel::allocated_unplaced(AllocationId id, std::uint64_t size, std::uint32_t lane) {
  if (!(id == next_id())) {
    violated("allocation ids must count up by one; got " + to_string(id) + ", expected " +
             to_string(next_id()));
  }
  records_.push_back(Record{id, size, 0, aligned_extent(size), 1, State::Live,
                            engine_.add_allocation(), false, lane});
  claim_never_written(records_.back());
  track_peaks();
}

AllocationId PoolModel::next_id() const {
  return records_.empty() ? first_ : AllocationId::from_raw(records_.back().id.raw() + 1);
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
  if (record.placed) {
    // P4: these bytes were released on this lane; until the storage takes
    // them back, only this lane may be handed them.
    released_.push_back(Released{record.address, record.address + record.extent, record.lane});
  }
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

// ------------------------------------------------------------ taint

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

std::span<const OwnedRun> PoolModel::runs(AllocationId id) const {
  const Record* record = find(id);
  if (record == nullptr || record->state == State::Ended) {
    return {};
  }
  return engine_.runs(record->carrier);
}

// ------------------------------------------------------------ figures

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

std::uint32_t PoolModel::lane_of(AllocationId id) const {
  const Record* record = find(id);
  return record != nullptr ? record->lane : 0;
}

std::uint64_t PoolModel::reserved() const {
  std::uint64_t total = 0;
  for (const Block& block : blocks_) {
    if (!block.reservation) {
      total += block.size;
    }
    for (const auto& chunk : block.chunks) {
      total += chunk.second;
    }
  }
  return total;
}

std::uint64_t PoolModel::pages() const {
  std::uint64_t count = 0;
  for (const Block& block : blocks_) {
    count += block.reservation ? block.chunks.size() : 1;
  }
  return count;
}

std::uint64_t PoolModel::largest_free_block() const {
  // Both lists are members kept across calls (emptied per block, never
  // freed): a fuzzer asks on every `stats` op, and three fresh vectors per
  // block per call were a fifth of pool_fuzzer's mallocs (issue 13).
  std::vector<Span>& runs = free_runs_;
  std::vector<Span>& used = used_runs_;
  std::uint64_t largest = 0;
  for (const Block& block : blocks_) {
    // The block's memory as sorted, merged runs.
    runs.clear();
    if (!block.reservation) {
      runs.emplace_back(block.address, block.address + block.size);
    } else {
      for (const auto& [chunk, bytes] : block.chunks) {
        runs.emplace_back(chunk, chunk + bytes);
      }
      std::sort(runs.begin(), runs.end());
      // Merged in place: run `merged` - 1 is the last one kept.
      std::size_t merged = 0;
      for (const Span& run : runs) {
        if (merged != 0 && runs[merged - 1].second == run.first) {
          runs[merged - 1].second = run.second;
        } else {
          runs[merged++] = run;
        }
      }
      runs.resize(merged);
    }
    // Occupied extents in this block, sorted.
    used.clear();
    for (const Record& record : records_) {
      if (record.state != State::Ended && record.placed && block.address <= record.address &&
          record.address < block.address + block.size) {
        used.emplace_back(record.address, record.address + record.extent);
      }
    }
    std::sort(used.begin(), used.end());
    for (const auto& [begin, end] : runs) {
      std::uint64_t at = begin;
      for (const auto& [used_begin, used_end] : used) {
        if (used_end <= at || used_begin >= end) {
          continue;
        }
        largest = std::max(largest, used_begin > at ? used_begin - at : 0);
        at = std::max(at, used_end);
      }
      largest = std::max(largest, end > at ? end - at : 0);
    }
  }
  return largest;
}

} // namespace taintpool::model
