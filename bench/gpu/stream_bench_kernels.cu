// Kernels for the multi-stream GPU benchmark (see stream_bench_kernels.hpp).
#include <cuda_runtime.h>

#include "stream_bench_kernels.hpp"

namespace taintpool::cuda::bench {

namespace {

__global__ void empty() {
}

__global__ void scale(const float* in, float* out, std::uint64_t n, float factor,
                      std::uint32_t step) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    out[i] = in[i] * factor + static_cast<float>(step);
  }
}

__global__ void copy(const float* in, float* out, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    out[i] = in[i];
  }
}

} // namespace

EmptyKernel empty_kernel() {
  return empty;
}

void launch_empty_chevrons(Stream stream) {
  empty<<<1, 1, 0, stream>>>();
}

ScaleKernel scale_kernel() {
  return scale;
}

CopyKernel copy_kernel() {
  return copy;
}

std::uint32_t grid_for(std::uint64_t n) {
  const std::uint64_t blocks = (n + 255) / 256;
  return static_cast<std::uint32_t>(blocks == 0 ? 1 : (blocks > 1056 ? 1056 : blocks));
}

void launch_scale(Stream stream, const float* in, float* out, std::uint64_t n, float factor,
                  std::uint32_t step) {
  scale<<<grid_for(n), 256, 0, stream>>>(in, out, n, factor, step);
}

void launch_copy(Stream stream, const float* in, float* out, std::uint64_t n) {
  copy<<<grid_for(n), 256, 0, stream>>>(in, out, n);
}

} // namespace taintpool::cuda::bench
