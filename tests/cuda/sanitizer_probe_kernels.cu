#include <cuda_runtime.h>

#include "sanitizer_probe_kernels.hpp"

namespace taintpool::cuda::testing {
namespace {

__global__ void fill_kernel(unsigned char* bytes, std::size_t n, unsigned char value) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    bytes[i] = value;
  }
}

__global__ void copy_kernel(const unsigned char* in, unsigned char* out, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    out[i] = in[i];
  }
}

__global__ void poke_kernel(unsigned char* bytes, std::size_t offset) {
  bytes[offset] = 1;
}

unsigned blocks(std::size_t n) {
  return static_cast<unsigned>((n + 255) / 256);
}

int finish() {
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) {
    return launched;
  }
  return cudaDeviceSynchronize();
}

} // namespace

int probe_fill(unsigned char* bytes, std::size_t n, unsigned char value) {
  fill_kernel<<<blocks(n), 256>>>(bytes, n, value);
  return finish();
}

int probe_copy(const unsigned char* in, unsigned char* out, std::size_t n) {
  copy_kernel<<<blocks(n), 256>>>(in, out, n);
  return finish();
}

int probe_poke(unsigned char* bytes, std::size_t offset) {
  poke_kernel<<<1, 1>>>(bytes, offset);
  return finish();
}

} // namespace taintpool::cuda::testing
