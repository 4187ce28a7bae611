// Real CUDA kernels for the GPU tests, behind plain C++ launchers so the
// test sources compile with g++ and the project's full warnings (the .cu
// files are a separate target with nvcc's).
//
// Every launcher only enqueues on `stream` and returns: errors are left in
// the runtime's last error for CudaBackend::run to find, exactly as a
// user's body would leave them. The arithmetic is fixed (one fmaf per step,
// in index order) so the host backend's std::fma versions give bit-equal
// results and the two backends can be compared with ==.
#pragma once

#include <taintpool/cuda/cuda_storage.hpp>
#include <taintpool/cuda/kernel_status.hpp>

#include <cstddef>
#include <cstdint>

namespace taintpool::cuda::testing {

inline constexpr std::uint32_t kNoFailure = 0xFFFF'FFFFu;

/// out[i] = value. Checked: tiles of `tile` elements; tile `fail_tile`
/// reports failure code 7 and is not written.
void fill(Stream stream, float* out, std::size_t n, float value, KernelStatus status = {},
          std::uint32_t tile = 256, std::uint32_t fail_tile = kNoFailure);

/// out[i] = fmaf(a[i], scale, b[i]). Checked like fill.
void axpy(Stream stream, const float* a, const float* b, float* out, std::size_t n, float scale,
          KernelStatus status = {}, std::uint32_t tile = 256, std::uint32_t fail_tile = kNoFailure);

/// C = A x B, n x n row-major, c[i][j] = fmaf chain over k = 0..n-1 from 0.
/// Checked: one tile per row of C.
void matmul(Stream stream, const float* a, const float* b, float* c, std::uint32_t n,
            KernelStatus status = {}, std::uint32_t fail_row = kNoFailure);

/// fill, launched with `threads` per block (above 1024: an invalid
/// configuration).
void fill_with_block(Stream stream, float* out, std::size_t n, float value, std::uint32_t threads);

/// A kernel that needs more registers than 1024 threads can have; launched
/// with 1024 threads it is refused (too many resources requested).
void register_hungry(Stream stream, const float* in, float* out);

/// A kernel compiled for sm_100 only (no PTX): no image for an H200.
void sm100_only(Stream stream, float* out);

/// fill that first allocates `staging_bytes` of stream-ordered scratch and
/// frees it; with an impossible size the allocation fails (the runtime's
/// last error says so) and no kernel is launched.
void fill_with_staging(Stream stream, float* out, std::size_t n, float value,
                       std::size_t staging_bytes);

/// A checked fill whose kernel marks one tile past its output and then
/// returns (a kernel bug the status slot must catch).
void fill_marking_out_of_range(Stream stream, float* out, std::size_t n, float value,
                               KernelStatus status, std::uint32_t tile);

/// Writes through a pointer no allocation owns: a sticky illegal address.
void illegal_address(Stream stream);

/// An empty kernel, one block of one thread (the bare launch of the bench).
void empty(Stream stream);

/// Register count ptxas gave register_hungry (from cudaFuncGetAttributes),
/// for the test's message.
[[nodiscard]] int register_hungry_registers();

} // namespace taintpool::cuda::testing
