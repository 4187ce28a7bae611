// Launchers for the GPU benchmark's empty kernels (bench_kernels.cu), callable
// from plain C++.
#pragma once

#include <taintpool/cuda/cuda_storage.hpp>
#include <taintpool/cuda/kernel_status.hpp>

namespace taintpool::cuda::bench {

/// An empty kernel, one block of one thread.
void launch_empty(Stream stream);
/// The same, checked: its one thread marks tile 0 of output 0 done.
void launch_empty_checked(Stream stream, const KernelStatus& status);

} // namespace taintpool::cuda::bench
