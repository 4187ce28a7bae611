// DataType and ReduceOp: what the elements of a collective's buffers are and
// how a reduction combines them — the few every engine (MPI, NCCL, the
// in-process loopback) supports alike.
//
// A collective works on whole elements: a binding's size must be a multiple
// of the element size, and the taint summary cuts contributions into pieces
// of whole elements (summary.hpp), so a piece boundary never splits a value
// that a reduction combines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace taintpool {

/// The element type of a collective's buffers.
enum class DataType : std::uint8_t {
  u8,  ///< uint8_t (sums wrap)
  i32, ///< int32_t
  i64, ///< int64_t
  f32, ///< float
  f64, ///< double
};

/// How a reduction (all-reduce, reduce-scatter) combines the ranks' elements.
enum class ReduceOp : std::uint8_t { sum, prod, min, max };

/// Bytes per element: 1, 4, 8, 4, 8.
[[nodiscard]] constexpr std::size_t size_of(DataType type) noexcept {
  switch (type) {
  case DataType::u8:
    return 1;
  case DataType::i32:
  case DataType::f32:
    return 4;
  case DataType::i64:
  case DataType::f64:
    return 8;
  }
  return 1;
}

/// "u8", "i32", ... for messages.
[[nodiscard]] std::string_view name(DataType type) noexcept;
/// "sum", "prod", "min", "max".
[[nodiscard]] std::string_view name(ReduceOp op) noexcept;

} // namespace taintpool
