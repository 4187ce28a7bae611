#include "hole_blame.hpp"

namespace taintpool::detail {

void HoleBlame::reset() noexcept {
  previous_ = {};
  forget_vacated();
  isolated_ = {};
  sets_apart_ = false;
}

} // namespace taintpool::detail
