// A kernel built for sm_100 only, with no PTX (tests/cuda/CMakeLists.txt
// gives this file's target CUDA_ARCHITECTURES 100-real): an H200 (sm_90)
// has no image to run it, so its launch fails with
// cudaErrorNoKernelImageForDevice — the "no kernel image" launch error, for
// real rather than simulated.
#include <cuda_runtime.h>

#include "gpu_kernels.hpp"

namespace taintpool::cuda::testing {

namespace {
__global__ void sm100_kernel(float* out) {
  out[threadIdx.x] = 1.0f;
}
} // namespace

void sm100_only(Stream stream, float* out) {
  sm100_kernel<<<1, 32, 0, stream>>>(out);
}

} // namespace taintpool::cuda::testing
