#include <taintpool/pool/memory_config.hpp>

#include <bit>
#include <stdexcept>
#include <string>

namespace taintpool {

void MemoryConfig::validate(std::uint64_t storage_alignment) const {
  auto reject = [](const std::string& why) { throw std::invalid_argument("MemoryConfig: " + why); };
  if (alignment == 0 || !std::has_single_bit(alignment)) {
    reject("alignment " + std::to_string(alignment) + " is not a power of two");
  }
  if (alignment > storage_alignment) {
    reject("alignment " + std::to_string(alignment) + " exceeds the storage's page alignment " +
           std::to_string(storage_alignment));
  }
  const SlicedPoolConfig* previous = nullptr;
  for (const SlicedPoolConfig& pool : sliced) {
    if (pool.page_size == 0 || pool.page_size % alignment != 0) {
      reject("page size " + std::to_string(pool.page_size) +
             " is not a positive multiple of the alignment");
    }
    if (pool.max_slice > pool.page_size) {
      reject("max slice " + std::to_string(pool.max_slice) + " exceeds its page size " +
             std::to_string(pool.page_size));
    }
    // Strictly: a pool whose max slice equals its predecessor's would never
    // be routed to (issue 13, defect 4).
    if (previous != nullptr && pool.max_slice <= previous->max_slice) {
      reject("the sliced pools are not in strictly ascending order of max slice (" +
             std::to_string(pool.max_slice) + " after " + std::to_string(previous->max_slice) +
             ")");
    }
    previous = &pool;
  }
  if (previous != nullptr && max_allocation < previous->max_slice) {
    reject("max allocation is below the largest sliced pool's max slice");
  }
  if (max_allocation > (UINT64_MAX >> 1)) {
    reject("max allocation " + std::to_string(max_allocation) +
           " is not below 2^63, so it cannot be aligned without overflow");
  }
  if (arena_address_space == 0 || arena_address_space > (UINT64_MAX >> 1)) {
    reject("arena address space " + std::to_string(arena_address_space) +
           " is not positive and below 2^63");
  }
  if (arena_min_growth == 0 || arena_min_growth % alignment != 0 ||
      arena_min_growth > (UINT64_MAX >> 1)) {
    reject("arena min growth " + std::to_string(arena_min_growth) +
           " is not a positive multiple of the alignment, below 2^63");
  }
  if (arena_ramp_growth % alignment != 0 || arena_ramp_growth > (UINT64_MAX >> 1)) {
    reject("arena ramp growth " + std::to_string(arena_ramp_growth) +
           " is not a multiple of the alignment, below 2^63");
  }
}

} // namespace taintpool
