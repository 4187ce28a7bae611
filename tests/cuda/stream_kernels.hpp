// Kernels for the multi-stream GPU tests (cuda_streams_test.cpp), handed to
// the C++ test sources by address so the tests launch them through
// cuda::launch (kernel_launch.hpp), as a user's body would.
//
// Every kernel works on 32-bit words with integer arithmetic, so the host
// computes the exact expected bytes. The gated kernel is what makes the
// ordering tests deterministic: its blocks wait until the host opens a gate
// in mapped host memory, so "the producer has not written yet" is a state
// the test holds for as long as it likes, not a race it hopes to win.
#pragma once

#include <cstddef>
#include <cstdint>

namespace taintpool::cuda::testing {

/// out[i] = value for i < n, once *gate != 0 (each block's first thread
/// polls it; gives up after about ten seconds, writing value ^ 0xFFFFFFFF,
/// so a test that forgot to open the gate fails instead of hanging).
using GateFillKernel = void (*)(const volatile std::uint32_t* gate, std::uint32_t* out,
                                std::uint64_t n, std::uint32_t value);
[[nodiscard]] GateFillKernel gate_fill_kernel();

/// Waits `spin_ns` nanoseconds on the GPU's global timer, then out[i] =
/// value + i: a slow producer.
using SlowFillKernel = void (*)(std::uint32_t* out, std::uint64_t n, std::uint32_t value,
                                std::uint64_t spin_ns);
[[nodiscard]] SlowFillKernel slow_fill_kernel();

/// out[i] = in[i] * multiply + add + i.
using TransformKernel = void (*)(const std::uint32_t* in, std::uint32_t* out, std::uint64_t n,
                                 std::uint32_t multiply, std::uint32_t add);
[[nodiscard]] TransformKernel transform_kernel();

/// out[i] = a[i] ^ (b[i] * 3).
using CombineKernel = void (*)(const std::uint32_t* a, const std::uint32_t* b, std::uint32_t* out,
                               std::uint64_t n);
[[nodiscard]] CombineKernel combine_kernel();

/// out[i] = value.
using FillWordsKernel = void (*)(std::uint32_t* out, std::uint64_t n, std::uint32_t value);
[[nodiscard]] FillWordsKernel fill_words_kernel();

/// Does nothing (one block of one thread): for counting events and waits.
using NothingKernel = void (*)();
[[nodiscard]] NothingKernel nothing_kernel();

/// Blocks of 256 threads enough to cover n words, capped at 1024 blocks
/// (the kernels stride over the rest).
[[nodiscard]] std::uint32_t blocks_for(std::uint64_t n);

} // namespace taintpool::cuda::testing
