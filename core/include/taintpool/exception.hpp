// Exception: an Error thrown to the caller.
//
// taintpool reports two kinds of trouble differently:
//   * bad input and unmet requests — a size no pool can hold, memory that ran
//     out, a binding past its allocation or to one that is gone — throw
//     taintpool::Exception carrying an Error whose kind says which (P3). The
//     state is unchanged and the caller can recover (free memory, retry).
//   * contract violations inside the library's own bookkeeping — tagging a
//     failure that has no node, untagging below zero — throw
//     std::logic_error. They mean a bug, here or in code that bypassed the
//     public API, and are never silently absorbed.
// Failures of the *work* (a kernel that failed, a launch that was skipped)
// are neither: they become taint and surface as Reports at the read (D1).
#pragma once

#include <taintpool/error.hpp>

#include <stdexcept>

namespace taintpool {

class Exception : public std::runtime_error {
 public:
  explicit Exception(Error error)
      : std::runtime_error(to_string(error))
      , error_(std::move(error)) {}

  [[nodiscard]] const Error& error() const noexcept { return error_; }
  [[nodiscard]] ErrorKind kind() const noexcept { return error_.kind(); }

 private:
  Error error_;
};

} // namespace taintpool
