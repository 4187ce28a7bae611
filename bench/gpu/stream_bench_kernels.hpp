// Kernels for the multi-stream GPU benchmark (stream_bench.cpp), handed to
// C++ by address so the benchmark launches them through cuda::launch and
// cudaLaunchKernelExC alike, and through <<<>>> where the launcher says so.
#pragma once

#include <taintpool/cuda/cuda_storage.hpp>

#include <cstdint>

namespace taintpool::cuda::bench {

/// An empty kernel (launch one block of one thread).
using EmptyKernel = void (*)();
[[nodiscard]] EmptyKernel empty_kernel();

/// The same empty kernel launched with <<<1, 1, 0, stream>>>.
void launch_empty_chevrons(Stream stream);

/// out[i] = in[i] * scale + float(step): the pipeline's compute.
using ScaleKernel = void (*)(const float* in, float* out, std::uint64_t n, float scale,
                             std::uint32_t step);
[[nodiscard]] ScaleKernel scale_kernel();

/// out[i] = in[i]: the pipeline's copy stream's work.
using CopyKernel = void (*)(const float* in, float* out, std::uint64_t n);
[[nodiscard]] CopyKernel copy_kernel();

/// Grid for n elements: blocks of 256 threads, at most 4 per SM's worth
/// (1056 on an H200); the kernels stride over the rest.
[[nodiscard]] std::uint32_t grid_for(std::uint64_t n);

/// The launchers the c10 baseline uses (it is compiled without nvcc).
void launch_scale(Stream stream, const float* in, float* out, std::uint64_t n, float scale,
                  std::uint32_t step);
void launch_copy(Stream stream, const float* in, float* out, std::uint64_t n);

} // namespace taintpool::cuda::bench
