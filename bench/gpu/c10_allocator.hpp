// PyTorch's CUDA caching allocator (c10::cuda::CUDACachingAllocator), called
// from C++ through torch's libc10_cuda.so, behind a plain interface so the
// replay (trace_replay.cpp) compiles without torch's headers and with the
// project's warnings. Built only where CMake found torch (TAINTPOOL_TORCH).
//
// c10 reads PYTORCH_CUDA_ALLOC_CONF when it first initialises, so a replay
// of "c10 with expandable segments" is a process started with
// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
#pragma once

#include <cstdint>

namespace taintpool::replay::c10 {

/// Initialises the allocator for every device (idempotent).
void init();
/// raw_alloc on the current stream; throws what c10 throws on failure.
[[nodiscard]] void* allocate(std::uint64_t size);
/// raw_delete.
void free(void* pointer);
/// Device 0's reserved bytes now and at their peak (c10's own statistics,
/// what torch.cuda.memory_reserved / max_memory_reserved report).
[[nodiscard]] std::uint64_t reserved();
[[nodiscard]] std::uint64_t peak_reserved();
/// Device memory allocations (cudaMalloc or cuMemCreate) c10 made so far.
[[nodiscard]] std::uint64_t segments();
/// emptyCache() and resetPeakStats(0).
void reset();
/// "c10" or "c10, expandable segments", from PYTORCH_CUDA_ALLOC_CONF.
[[nodiscard]] const char* label();

} // namespace taintpool::replay::c10
