// sanitizer_probe: one pool mistake, made on purpose, for compute-sanitizer
// to find — or to miss — depending on whether the pool is described to it
// through NVTX regions (cuda/nvtx_regions.hpp, issue 15).
//
//   sanitizer_probe recycled-read|one-past-write|arena-one-past-write|
//                   heap-on-page|heap-on-mapped-chunk on|off|auto
//
//   recycled-read   an allocation is written by a kernel and dropped; the
//                   next allocation of its size gets the same slice (the
//                   probe checks it does) and a kernel reads it before
//                   anyone wrote it. initcheck without regions sees bytes
//                   the previous owner wrote: silent. With regions the new
//                   allocation is a new region: "Uninitialized __global__
//                   memory read".
//   one-past-write  a kernel writes the byte just past a 1000-byte
//                   allocation, inside the same 2 MiB page. memcheck
//                   without regions sees a write inside a cudaMalloc'd page:
//                   silent. With regions the byte is in the heap but in no
//                   region: "Invalid __global__ write of size 1".
//   arena-one-past-write   the same past a 256 KiB + 1000-byte allocation,
//                   which lives in the arena: with regions on the arena
//                   grows by cudaMalloc pages (the only memory the tool
//                   takes as a heap), so memcheck reports it too.
//   heap-on-page, heap-on-mapped-chunk   no pool: one NVTX heap (through
//                   cuda::nvtx_memory_api()) over a whole cudaMalloc page,
//                   or over a chunk CudaStorage mapped into a reserved range
//                   (cuMemCreate + cuMemMap), with one region in it. What
//                   the tool accepts as a heap (nvtx_regions.hpp): the
//                   page, silently; the chunk it was seen to refuse.
//
// The second argument is CudaBackendOptions::sanitizer_regions (auto: on
// exactly when run under compute-sanitizer). The pool is the one a Device on
// the backend gets: a MemoryManager over backend.storage() with
// backend.memory_config().
//
// Exit codes: 0 when every check of its own held and every kernel
// succeeded (run natively, both mistakes are harmless: the bytes are the
// pool's); 1 a check failed (the message says which); 2 usage; 4 a kernel
// returned an error (a sanitizer may make a faulting kernel fail); 77 no
// GPU (ctest: skipped). The last line, "sanitizer_probe: done", says it ran
// to the end; tests/cuda/sanitizer_expect.sh asserts on the sanitizer's
// report around it.
#include <taintpool/cuda/cuda_backend.hpp>
#include <taintpool/cuda/nvtx_memory_calls.hpp>
#include <taintpool/cuda/nvtx_regions.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/pool/memory_manager.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <string>

#include "sanitizer_probe_kernels.hpp"

namespace {

using taintpool::Allocation;
using taintpool::ErrorGraph;
using taintpool::MemoryManager;
using taintpool::cuda::CudaBackend;
using taintpool::cuda::CudaBackendOptions;
using taintpool::cuda::SanitizerRegions;

int fail(const std::string& why) {
  std::printf("sanitizer_probe: FAILED: %s\n", why.c_str());
  return 1;
}

unsigned char* bytes_of(MemoryManager& memory, const Allocation& allocation) {
  return reinterpret_cast<unsigned char*>(memory.resolve(allocation.whole()).data);
}

const char* env_or(const char* name, const char* otherwise) {
  const char* value = std::getenv(name); // NOLINT(concurrency-mt-unsafe): single-threaded.
  return value != nullptr ? value : otherwise;
}

/// The regions' own bookkeeping, checked whichever way the run goes.
int check_regions(const CudaBackend& backend, bool want, std::uint64_t live) {
  const taintpool::cuda::NvtxRegions* regions = backend.sanitizer_regions();
  if ((regions != nullptr) != want) {
    return fail(std::string("NVTX regions are ") + (regions != nullptr ? "on" : "off") +
                " but should be " + (want ? "on" : "off"));
  }
  if (regions != nullptr && (regions->heaps() == 0 || regions->regions() != live)) {
    return fail("NvtxRegions holds " + std::to_string(regions->heaps()) + " heaps and " +
                std::to_string(regions->regions()) + " regions; expected at least one heap and " +
                std::to_string(live) + " regions");
  }
  return 0;
}

int recycled_read(const CudaBackend& backend, MemoryManager& memory, bool want) {
  constexpr std::size_t size = 4096;
  unsigned char* out = nullptr;
  if (cudaMalloc(&out, size) != cudaSuccess) {
    return fail("cudaMalloc of the output");
  }
  int kernels = 0;
  unsigned char* first = nullptr;
  {
    const Allocation previous = memory.allocate(size);
    first = bytes_of(memory, previous);
    kernels |= taintpool::cuda::testing::probe_fill(first, size, 0x5a);
  } // Dropped: its slice goes back to the pool at the next call.
  memory.sweep();
  const Allocation fresh = memory.allocate(size);
  unsigned char* second = bytes_of(memory, fresh);
  if (second != first) {
    return fail("the pool did not recycle the slice (the premise of this probe)");
  }
  if (const int status = check_regions(backend, want, 1); status != 0) {
    return status;
  }
  // The mistake: read `fresh` before anything wrote it.
  kernels |= taintpool::cuda::testing::probe_copy(second, out, size);
  static_cast<void>(cudaFree(out));
  return kernels != 0 ? 4 : 0;
}

int one_past_write(const CudaBackend& backend, MemoryManager& memory, bool want, std::size_t size) {
  // size % 256 == 1000 % 256: the slice ends 24 bytes later, so the byte
  // just past the allocation is padding inside the same page.
  const Allocation buffer = memory.allocate(size);
  if (const int status = check_regions(backend, want, 1); status != 0) {
    return status;
  }
  unsigned char* data = bytes_of(memory, buffer);
  int kernels = taintpool::cuda::testing::probe_fill(data, size, 0x11);
  // The mistake: one byte past the end.
  kernels |= taintpool::cuda::testing::probe_poke(data, size);
  return kernels != 0 ? 4 : 0;
}

/// One NVTX heap over a whole cudaMalloc page or a mapped chunk, one region
/// in it, both unregistered before the memory goes (see the top).
int heap_probe(CudaBackend& backend, bool mapped_chunk) {
  constexpr std::uint64_t size = std::uint64_t{2} << 20;
  taintpool::cuda::NvtxMemoryCalls& nvtx = taintpool::cuda::nvtx_memory_api();
  taintpool::Storage& storage = backend.storage();
  taintpool::VirtualMemory* memory = storage.virtual_memory();
  if (mapped_chunk && memory == nullptr) {
    std::printf("sanitizer_probe: heap-on-mapped-chunk: no virtual memory here: skipped\n");
    return 77;
  }
  const std::uint64_t granule = mapped_chunk ? memory->granularity() : 1;
  const std::uint64_t chunk_size = (size + granule - 1) / granule * granule;
  taintpool::StorageHandle reservation;
  taintpool::StorageHandle chunk;
  std::byte* base = nullptr;
  if (mapped_chunk) {
    reservation = memory->reserve(4 * chunk_size);
    chunk = memory->map(reservation, chunk_size, chunk_size); // The reservation's second chunk.
    base = static_cast<std::byte*>(storage.resolve(reservation)) + chunk_size;
  } else {
    chunk = storage.allocate(chunk_size);
    base = static_cast<std::byte*>(storage.resolve(chunk));
  }
  std::printf("sanitizer_probe: heap over %s [%p, +%llu)\n",
              mapped_chunk ? "a mapped chunk" : "a cudaMalloc page", static_cast<void*>(base),
              static_cast<unsigned long long>(chunk_size));
  void* heap = nvtx.register_heap(base, chunk_size, "taintpool probe heap");
  nvtx.register_region(heap, base + 256, 1000, "taintpool probe region");
  const int kernels =
      taintpool::cuda::testing::probe_fill(reinterpret_cast<unsigned char*>(base) + 256, 1000, 1);
  nvtx.unregister_region(base + 256);
  nvtx.unregister_heap(heap);
  if (mapped_chunk) {
    memory->unmap(reservation, chunk_size, chunk_size, chunk);
    memory->unreserve(reservation, 4 * chunk_size);
  } else {
    storage.deallocate(chunk, chunk_size);
  }
  return kernels != 0 ? 4 : 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::printf("usage: sanitizer_probe recycled-read|one-past-write|arena-one-past-write|"
                "heap-on-page|heap-on-mapped-chunk on|off|auto\n");
    return 2;
  }
  const std::string scenario = argv[1];
  const std::string mode = argv[2];
  CudaBackendOptions options;
  if (mode == "on") {
    options.sanitizer_regions = SanitizerRegions::On;
  } else if (mode == "off") {
    options.sanitizer_regions = SanitizerRegions::Off;
  } else if (mode != "auto") {
    std::printf("sanitizer_probe: regions must be on, off or auto, not %s\n", mode.c_str());
    return 2;
  }
  std::string why;
  if (taintpool::cuda::device_count(&why) == 0) {
    std::printf("sanitizer_probe: no CUDA GPU (%s): skipped\n", why.c_str());
    return 77;
  }
  const bool under_sanitizer = taintpool::cuda::running_under_sanitizer();
  const bool want = mode == "on" || (mode == "auto" && under_sanitizer);
  std::printf("sanitizer_probe: %s, regions %s; running_under_sanitizer %s "
              "(NV_SANITIZER_INJECTION_PORT_RANGE_BEGIN=%s, NVTX_INJECTION64_PATH=%s)\n",
              scenario.c_str(), mode.c_str(), under_sanitizer ? "yes" : "no",
              env_or("NV_SANITIZER_INJECTION_PORT_RANGE_BEGIN", "(unset)"),
              env_or("NVTX_INJECTION64_PATH", "(unset)"));
  int status = 0;
  {
    CudaBackend backend(options);
    ErrorGraph graph;
    MemoryManager memory(backend.storage(), graph, backend.memory_config());
    if (scenario == "recycled-read") {
      status = recycled_read(backend, memory, want);
    } else if (scenario == "one-past-write") {
      status = one_past_write(backend, memory, want, 1000);
    } else if (scenario == "arena-one-past-write") {
      status = one_past_write(backend, memory, want, (std::size_t{256} << 10) + 1000);
    } else if (scenario == "heap-on-page" || scenario == "heap-on-mapped-chunk") {
      status = heap_probe(backend, scenario == "heap-on-mapped-chunk");
      if (status == 77) {
        return 77;
      }
    } else {
      std::printf("sanitizer_probe: no scenario %s\n", scenario.c_str());
      return 2;
    }
  }
  std::printf("sanitizer_probe: done (status %d)\n", status);
  return status;
}
