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
#include <string>
#include <utility>

namespace taintpool {

/// An Error thrown for bad input or an unmet request (P3); whatever threw it
/// left its state as it was, so the caller may recover and retry.
class Exception : public std::runtime_error {
 public:
  /// what() is to_string(error), built here, so this allocates: it is only
  /// ever the failure path. The text is kept in the Exception itself, sized
  /// once; std::runtime_error is given none (its empty message is the
  /// library's shared empty string, no allocation) — handing it the text
  /// copied it into a second, reference-counted buffer. A refusal costs the
  /// exception object, its Error's message and this text: the pool fuzzer
  /// refuses on purpose several times an input (issue 13).
  explicit Exception(Error error)
      : std::runtime_error("")
      , text_(to_string(error))
      , error_(std::move(error)) {}

  /// to_string(error()): "invalid binding: bytes [0, 9) reach past ...".
  [[nodiscard]] const char* what() const noexcept override { return text_.c_str(); }
  /// The Error itself, message and kind.
  [[nodiscard]] const Error& error() const noexcept { return error_; }
  /// error().kind(), for catch sites that branch on it (retry an OutOfMemory).
  [[nodiscard]] ErrorKind kind() const noexcept { return error_.kind(); }

 private:
  std::string text_; ///< Before error_: built from the Error before it is moved in.
  Error error_;
};

} // namespace taintpool
