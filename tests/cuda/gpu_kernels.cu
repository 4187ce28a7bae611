// Kernels for the GPU tests (see gpu_kernels.hpp).
#include <taintpool/cuda/kernel_status.cuh>

#include <cuda_runtime.h>

#include "gpu_kernels.hpp"

namespace taintpool::cuda::testing {

namespace {

__global__ void fill_kernel(float* out, std::size_t n, float value, KernelStatus status,
                            std::uint32_t tile, std::uint32_t fail_tile) {
  const std::uint32_t index = blockIdx.x;
  if (index == fail_tile) {
    if (threadIdx.x == 0) {
      report_failure(status, 7);
    }
    return; // The whole block returns: its tile is neither written nor marked.
  }
  const std::size_t begin = std::size_t{index} * tile;
  const std::size_t end = begin + tile < n ? begin + tile : n;
  for (std::size_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    out[i] = value;
  }
  block_finished_tile(status, 0, index);
}

__global__ void axpy_kernel(const float* a, const float* b, float* out, std::size_t n, float scale,
                            KernelStatus status, std::uint32_t tile, std::uint32_t fail_tile) {
  const std::uint32_t index = blockIdx.x;
  if (index == fail_tile) {
    if (threadIdx.x == 0) {
      report_failure(status, 7);
    }
    return;
  }
  const std::size_t begin = std::size_t{index} * tile;
  const std::size_t end = begin + tile < n ? begin + tile : n;
  for (std::size_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    out[i] = fmaf(a[i], scale, b[i]);
  }
  block_finished_tile(status, 0, index);
}

// One block per row of C, one thread per column.
__global__ void matmul_kernel(const float* a, const float* b, float* c, std::uint32_t n,
                              KernelStatus status, std::uint32_t fail_row) {
  const std::uint32_t row = blockIdx.x;
  if (row == fail_row) {
    if (threadIdx.x == 0) {
      report_failure(status, 9);
    }
    return;
  }
  for (std::uint32_t column = threadIdx.x; column < n; column += blockDim.x) {
    float sum = 0.0f;
    for (std::uint32_t k = 0; k < n; ++k) {
      sum = fmaf(a[row * n + k], b[k * n + column], sum);
    }
    c[row * n + column] = sum;
  }
  block_finished_tile(status, 0, row);
}

// 96 live values per thread through a dependent chain: ptxas needs well over
// the 64 registers a 1024-thread block may have per thread.
__global__ void register_hungry_kernel(const float* in, float* out) {
  float v[96];
#pragma unroll
  for (int i = 0; i < 96; ++i) {
    v[i] = in[(threadIdx.x * 97 + static_cast<unsigned>(i) * 31) & 1023];
  }
#pragma unroll
  for (int round = 0; round < 4; ++round) {
#pragma unroll
    for (int i = 0; i < 96; ++i) {
      v[i] = fmaf(v[i], v[(i + round + 1) % 96], v[(i + 7) % 96]);
    }
  }
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < 96; ++i) {
    sum += v[i] * static_cast<float>(i + 1);
  }
  out[threadIdx.x] = sum;
}

__global__ void mark_out_of_range_kernel(float* out, std::size_t n, float value,
                                         KernelStatus status, std::uint32_t tile) {
  const std::uint32_t index = blockIdx.x;
  const std::size_t begin = std::size_t{index} * tile;
  const std::size_t end = begin + tile < n ? begin + tile : n;
  for (std::size_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    out[i] = value;
  }
  // Off by one: names the tile after its own.
  block_finished_tile(status, 0, index + 1);
}

__global__ void illegal_address_kernel(float* nowhere) {
  nowhere[threadIdx.x] = 1.0f;
}

__global__ void empty_kernel() {
}

std::uint32_t tiles_of(std::size_t n, std::uint32_t tile) {
  return static_cast<std::uint32_t>((n + tile - 1) / tile);
}

} // namespace

void fill(Stream stream, float* out, std::size_t n, float value, KernelStatus status,
          std::uint32_t tile, std::uint32_t fail_tile) {
  if (n == 0) {
    return;
  }
  fill_kernel<<<tiles_of(n, tile), 256, 0, stream>>>(out, n, value, status, tile, fail_tile);
}

void axpy(Stream stream, const float* a, const float* b, float* out, std::size_t n, float scale,
          KernelStatus status, std::uint32_t tile, std::uint32_t fail_tile) {
  if (n == 0) {
    return;
  }
  axpy_kernel<<<tiles_of(n, tile), 256, 0, stream>>>(a, b, out, n, scale, status, tile, fail_tile);
}

void matmul(Stream stream, const float* a, const float* b, float* c, std::uint32_t n,
            KernelStatus status, std::uint32_t fail_row) {
  const std::uint32_t threads = n < 1024 ? n : 1024;
  matmul_kernel<<<n, threads, 0, stream>>>(a, b, c, n, status, fail_row);
}

void fill_with_block(Stream stream, float* out, std::size_t n, float value, std::uint32_t threads) {
  fill_kernel<<<tiles_of(n, threads), threads, 0, stream>>>(out, n, value, KernelStatus{}, threads,
                                                            kNoFailure);
}

void register_hungry(Stream stream, const float* in, float* out) {
  register_hungry_kernel<<<1, 1024, 0, stream>>>(in, out);
}

int register_hungry_registers() {
  cudaFuncAttributes attributes{};
  if (cudaFuncGetAttributes(&attributes, register_hungry_kernel) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return -1;
  }
  return attributes.numRegs;
}

void fill_with_staging(Stream stream, float* out, std::size_t n, float value,
                       std::size_t staging_bytes) {
  void* staging = nullptr;
  if (cudaMallocAsync(&staging, staging_bytes, stream) != cudaSuccess) {
    return; // The runtime's last error holds the failure; the backend reads it.
  }
  fill(stream, out, n, value);
  static_cast<void>(cudaFreeAsync(staging, stream));
}

void fill_marking_out_of_range(Stream stream, float* out, std::size_t n, float value,
                               KernelStatus status, std::uint32_t tile) {
  mark_out_of_range_kernel<<<tiles_of(n, tile), 256, 0, stream>>>(out, n, value, status, tile);
}

void illegal_address(Stream stream) {
  // Far outside any allocation, and 4-byte aligned: an illegal address, not
  // a misaligned one.
  auto* nowhere = reinterpret_cast<float*>(std::uintptr_t{0x10} << 40);
  illegal_address_kernel<<<1, 32, 0, stream>>>(nowhere);
}

void empty(Stream stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
}

} // namespace taintpool::cuda::testing
