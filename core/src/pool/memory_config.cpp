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
  std::uint64_t previous = 0;
  for (const SlicedPoolConfig& pool : sliced) {
    if (pool.page_size == 0 || pool.page_size % alignment != 0) {
      reject("page size " + std::to_string(pool.page_size) +
             " is not a positive multiple of the alignment");
    }
    if (pool.max_slice > pool.page_size) {
      reject("max slice " + std::to_string(pool.max_slice) + " exceeds its page size " +
             std::to_string(pool.page_size));
    }
    if (pool.max_slice <= previous && previous != 0) {
      reject("the sliced pools are not in ascending order of max slice");
    }
    previous = pool.max_slice;
  }
  if (max_allocation < previous) {
    reject("max allocation is below the largest sliced pool's max slice");
  }
  if (max_allocation > (UINT64_MAX >> 1)) {
    reject("max allocation above 2^63 cannot be aligned without overflow");
  }
  if (exclusive_reuse_slack_eighths > 64) {
    reject("exclusive reuse slack above 64 eighths (8x) would waste more than it saves");
  }
}

} // namespace taintpool
