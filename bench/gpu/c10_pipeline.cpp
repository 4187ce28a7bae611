// The two-stream pipeline on PyTorch's caching allocator (see
// c10_pipeline.hpp). Compiled against torch's headers with its ABI setting;
// nothing of taintpool is included here.
#include "c10_pipeline.hpp"

#include <c10/core/Allocator.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <exception>

namespace taintpool::cuda::bench {
// Defined in stream_bench_kernels.cu (Stream is CUstream_st*).
void launch_scale(CUstream_st* stream, const float* in, float* out, std::uint64_t n, float scale,
                  std::uint32_t step);
void launch_copy(CUstream_st* stream, const float* in, float* out, std::uint64_t n);
} // namespace taintpool::cuda::bench

#ifndef TAINTPOOL_TORCH_VERSION
#define TAINTPOOL_TORCH_VERSION "unknown"
#endif

namespace taintpool::cuda::bench::c10_baseline {

namespace {
// c10 asks "has this device a primary context?" through a hook that
// libtorch_cuda installs when it loads; with libc10_cuda alone the hook is a
// dummy that throws ("Should never been called"). Install one, found by name
// at run time so that a torch without it still builds: by the time c10 asks,
// the CUDA runtime has made the context, so the answer is yes.
bool assume_primary_context(signed char /*device*/) { return true; }
void install_primary_context_hook() {
  using Hook = bool (*)(signed char);
  using Setter = void (*)(Hook);
  void* found = dlsym(RTLD_DEFAULT, "_ZN3c104cuda9_internal20setHasPrimaryContextEPFbaE");
  if (found != nullptr) {
    reinterpret_cast<Setter>(found)(&assume_primary_context);
  }
}


using Clock = std::chrono::steady_clock;

void fail(PipelineTimes& times, const char* what) {
  times.ok = 0;
  std::snprintf(times.why, sizeof times.why, "%s", what);
}

} // namespace

const char* description() {
  return "PyTorch " TAINTPOOL_TORCH_VERSION
         " c10::cuda::CUDACachingAllocator (libc10_cuda.so), record_stream";
}

PipelineTimes run_pipeline(CUstream_st* compute, CUstream_st* copy, const float* input,
                           float* const outputs[2], std::uint64_t bytes, std::uint32_t steps) {
  PipelineTimes times;
  cudaEvent_t ready[8] = {};
  cudaEvent_t throttle[16] = {};
  try {
    c10::cuda::CUDACachingAllocator::CUDAAllocator* allocator =
        c10::cuda::CUDACachingAllocator::get();
    if (allocator == nullptr) {
      fail(times, "c10::cuda::CUDACachingAllocator::get() returned null");
      return times;
    }
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      fail(times, "no CUDA device");
      return times;
    }
    install_primary_context_hook();
    // What torch's own CUDA initialisation does; a no-op when done already.
    c10::cuda::CUDACachingAllocator::init(devices);
    const c10::cuda::CUDAStream compute_stream = c10::cuda::getStreamFromExternal(compute, 0);
    const c10::cuda::CUDAStream copy_stream = c10::cuda::getStreamFromExternal(copy, 0);
    c10::cuda::setCurrentCUDAStream(compute_stream); // allocate() takes the current stream.
    for (cudaEvent_t& event : throttle) {
      if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess) {
        fail(times, "cudaEventCreateWithFlags failed");
        return times;
      }
    }
    for (cudaEvent_t& event : ready) {
      if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess) {
        fail(times, "cudaEventCreateWithFlags failed");
        return times;
      }
    }
    const std::uint64_t n = bytes / sizeof(float);
    // At most 16 steps ahead of the GPU, as in the other variants.
    std::uint64_t marked = 0;
    const auto run = [&](std::uint32_t count) {
      for (std::uint32_t step = 0; step < count; ++step) {
        if (marked >= 16) {
          cudaEventSynchronize(throttle[marked % 16]);
        }
        c10::DataPtr buffer = allocator->allocate(bytes);
        auto* activation = static_cast<float*>(buffer.get());
        launch_scale(compute, input, activation, n, 2.0f, step);
        cudaEvent_t event = ready[step % 8];
        cudaEventRecord(event, compute);
        cudaStreamWaitEvent(copy, event, 0);
        launch_copy(copy, activation, outputs[step % 2], n);
        // The buffer is used on another stream: without this, its memory
        // could be handed out again while the copy still reads it.
        c10::cuda::CUDACachingAllocator::recordStream(buffer, copy_stream);
        cudaEventRecord(throttle[marked % 16], copy);
        ++marked;
      } // Dropped here: freed on the compute stream, held for the copy stream.
    };
    run(steps / 10 + 1); // Warm-up: the allocator's blocks exist afterwards.
    cudaStreamSynchronize(copy);
    cudaStreamSynchronize(compute);
    const Clock::time_point start = Clock::now();
    run(steps);
    const double enqueue = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    cudaStreamSynchronize(copy);
    cudaStreamSynchronize(compute);
    const double wall = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    times.enqueue_ns_per_step = enqueue / steps;
    times.wall_ns_per_step = wall / steps;
    float first = 0;
    cudaMemcpy(&first, outputs[(steps - 1) % 2], sizeof first, cudaMemcpyDeviceToHost);
    std::memcpy(&times.check, &first, sizeof first);
    if (cudaGetLastError() != cudaSuccess) {
      fail(times, "a CUDA call failed during the run");
    } else {
      times.ok = 1;
    }
  } catch (const std::exception& error) {
    fail(times, error.what());
  } catch (...) {
    fail(times, "a non-standard exception");
  }
  for (cudaEvent_t event : ready) {
    if (event != nullptr) {
      cudaEventDestroy(event);
    }
  }
  for (cudaEvent_t event : throttle) {
    if (event != nullptr) {
      cudaEventDestroy(event);
    }
  }
  try {
    c10::cuda::CUDACachingAllocator::emptyCache(); // Its memory back for the next variant.
  } catch (...) {
  }
  return times;
}

} // namespace taintpool::cuda::bench::c10_baseline
