#include "hole_blame.hpp"

namespace taintpool::detail {

void HoleBlame::reset() noexcept {
  previous_ = {};
  forget_vacated();
  isolated_ = {};
}

} // namespace taintpool::detail
