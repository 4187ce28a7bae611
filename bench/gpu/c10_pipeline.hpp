// The two-stream pipeline on PyTorch's caching allocator (c10), for the
// comparison in stream_bench.cpp. Compiled only where CMake found torch
// (TAINTPOOL_TORCH), in its own library with torch's C++ ABI setting: the
// interface below carries no standard-library type, so the two ABIs never
// meet.
#pragma once

#include <cstdint>

struct CUstream_st;

namespace taintpool::cuda::bench::c10_baseline {

/// What one run of the pipeline measured.
struct PipelineTimes {
  double enqueue_ns_per_step = 0; ///< Host time queueing a step (allocate, 2 launches, free).
  double wall_ns_per_step = 0;    ///< The same, until the GPU finished everything.
  std::uint32_t check = 0;        ///< Bits of the last output's first element (a sanity check).
  int ok = 0;                     ///< 1 when the run completed; 0 with `why` set.
  char why[256] = {};
};

/// Runs `steps` steps: allocate `bytes` with c10's caching allocator on the
/// compute stream, compute into it from `input` on that stream, make the
/// copy stream wait for it (an event), copy it on the copy stream into one
/// of two `outputs` (a ring, each `bytes`), record_stream it on the copy
/// stream, and drop it — PyTorch's idiom for a buffer handed across. The
/// streams are the caller's (cudaStream_t). Never throws.
PipelineTimes run_pipeline(CUstream_st* compute, CUstream_st* copy, const float* input,
                           float* const outputs[2], std::uint64_t bytes, std::uint32_t steps);

/// "c10 x.y (libc10_cuda.so)"-style text of what was linked, for the report.
const char* description();

} // namespace taintpool::cuda::bench::c10_baseline
