// Kernels for the multi-stream GPU tests (see stream_kernels.hpp).
#include <cuda_runtime.h>

#include "stream_kernels.hpp"

namespace taintpool::cuda::testing {

namespace {

__device__ std::uint64_t global_ns() {
  std::uint64_t now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__global__ void gate_fill(const volatile std::uint32_t* gate, std::uint32_t* out, std::uint64_t n,
                          std::uint32_t value) {
  __shared__ std::uint32_t word;
  if (threadIdx.x == 0) {
    const std::uint64_t give_up = global_ns() + 10'000'000'000ull;
    word = value;
    while (*gate == 0) {
      if (global_ns() > give_up) {
        word = value ^ 0xFFFF'FFFFu;
        break;
      }
      __nanosleep(2000);
    }
  }
  __syncthreads();
  const std::uint32_t fill = word;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    out[i] = fill;
  }
}

__global__ void slow_fill(std::uint32_t* out, std::uint64_t n, std::uint32_t value,
                          std::uint64_t spin_ns) {
  const std::uint64_t until = global_ns() + spin_ns;
  while (global_ns() < until) {
    __nanosleep(1000);
  }
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    out[i] = value + static_cast<std::uint32_t>(i);
  }
}

__global__ void transform(const std::uint32_t* in, std::uint32_t* out, std::uint64_t n,
                          std::uint32_t multiply, std::uint32_t add) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    out[i] = in[i] * multiply + add + static_cast<std::uint32_t>(i);
  }
}

__global__ void combine(const std::uint32_t* a, const std::uint32_t* b, std::uint32_t* out,
                        std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    out[i] = a[i] ^ (b[i] * 3u);
  }
}

__global__ void fill_words(std::uint32_t* out, std::uint64_t n, std::uint32_t value) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    out[i] = value;
  }
}

__global__ void nothing() {
}

} // namespace

GateFillKernel gate_fill_kernel() {
  return gate_fill;
}
SlowFillKernel slow_fill_kernel() {
  return slow_fill;
}
TransformKernel transform_kernel() {
  return transform;
}
CombineKernel combine_kernel() {
  return combine;
}
FillWordsKernel fill_words_kernel() {
  return fill_words;
}
NothingKernel nothing_kernel() {
  return nothing;
}

std::uint32_t blocks_for(std::uint64_t n) {
  const std::uint64_t blocks = (n + 255) / 256;
  return static_cast<std::uint32_t>(blocks == 0 ? 1 : (blocks > 1024 ? 1024 : blocks));
}

} // namespace taintpool::cuda::testing
