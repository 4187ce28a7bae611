// The kernels the GPU benchmark launches: empty ones, so what is timed is
// the cost of launching (and of the scope around the launch), not work.
#include <taintpool/cuda/kernel_status.cuh>

#include "bench_kernels.hpp"

namespace taintpool::cuda::bench {

namespace {
__global__ void empty_kernel() {
}

__global__ void empty_checked_kernel(KernelStatus status) {
  mark_tile_done(status, 0, 0);
}
} // namespace

void launch_empty(Stream stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
}

void launch_empty_checked(Stream stream, const KernelStatus& status) {
  empty_checked_kernel<<<1, 1, 0, stream>>>(status);
}

} // namespace taintpool::cuda::bench
