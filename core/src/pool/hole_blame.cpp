#include "hole_blame.hpp"

namespace taintpool::detail {

std::uint32_t HoleBlame::key_for(std::uint64_t extent) const noexcept {
  // Three independent multiplies (they overlap: a few cycles on the hot
  // path), folded to 32 bits. Collisions only merge two contexts' fates.
  std::uint64_t hash = extent * 0x9E3779B97F4A7C15ULL + previous_[0] * 0xC2B2AE3D27D4EB4FULL +
                       previous_[1] * 0x165667B19E3779F9ULL;
  hash ^= hash >> 32;
  return static_cast<std::uint32_t>(hash) | 1U; // Never 0: 0 means "no context".
}

void HoleBlame::vacated(std::uint32_t key, const Page* page, std::uint64_t offset,
                        std::uint64_t extent) noexcept {
  vacated_[next_] = Vacated{key, page, offset, extent};
  next_ = (next_ + 1) % window;
  count_ = count_ < window ? count_ + 1 : window;
}

void HoleBlame::reset() noexcept {
  previous_ = {};
  forget_vacated();
  isolated_ = {};
}

} // namespace taintpool::detail
