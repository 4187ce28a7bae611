// The kernels sanitizer_probe runs, behind plain C++ launchers (the probe
// compiles with g++ and the project's warnings; the .cu file with nvcc).
// Each launches on the legacy default stream and waits for it, returning
// the runtime's error code (0: cudaSuccess).
#pragma once

#include <cstddef>

namespace taintpool::cuda::testing {

/// bytes[i] = value for i < n.
int probe_fill(unsigned char* bytes, std::size_t n, unsigned char value);
/// out[i] = in[i] for i < n: reads every byte of `in`.
int probe_copy(const unsigned char* in, unsigned char* out, std::size_t n);
/// bytes[offset] = 1, one thread.
int probe_poke(unsigned char* bytes, std::size_t offset);

} // namespace taintpool::cuda::testing
