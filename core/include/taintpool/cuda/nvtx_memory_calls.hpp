// NvtxMemoryCalls: the four NVTX memory calls cuda::NvtxRegions makes, as
// an interface (nvtx_regions.hpp).
//
// Why an interface: what compute-sanitizer accepts is a set of rules about
// the order and shape of these calls (a heap lies in one cudaMalloc
// allocation, never on cuMemMap'd memory; a region lies inside one live
// heap and goes before it; ...: the "NVTX API for Compute Sanitizer"
// guide, and what the tool did on the H200). A tool rejects a
// call that breaks them with "one or more of the parameters is invalid",
// and only on a GPU, under the tool. With the calls behind this interface,
// a host test puts a recording implementation that enforces those rules
// behind NvtxRegions and drives whole pools through it, with no GPU and no
// tool (tests/cuda/nvtx_rules_test.cpp). The real one (nvtx_memory_api())
// forwards to nvToolsExtMem.h.
//
// Costs: one virtual call per NVTX call, paid only when regions are on.
//
// Contract: register_heap may be called from where the caller can still
// fail (a page being added); every other call is noexcept. The handle a
// heap gets is opaque (nvtxMemHeapHandle_t for the real calls, null when
// no tool is attached) and is passed back as it was.
#pragma once

#include <cstddef>
#include <cstdint>

namespace taintpool::cuda {

/// The NVTX memory calls of a pool's description (see above).
class NvtxMemoryCalls {
 public:
  virtual ~NvtxMemoryCalls() = default;

  /// nvtxMemHeapRegister of [base, base + size) as a sub-allocator heap of
  /// virtual addresses, named `name`; the heap's handle.
  [[nodiscard]] virtual void* register_heap(const std::byte* base, std::uint64_t size,
                                            const char* name) noexcept = 0;
  /// nvtxMemHeapUnregister of a handle register_heap returned.
  virtual void unregister_heap(void* heap) noexcept = 0;
  /// nvtxMemRegionsRegister of [base, base + size) in `heap`, then
  /// nvtxMemRegionsName of it as `name` (ASCII, printable, 1 to 49
  /// characters: the tool's limit).
  virtual void register_region(void* heap, const std::byte* base, std::uint64_t size,
                               const char* name) noexcept = 0;
  /// nvtxMemRegionsUnregister of the region that starts at `base`.
  virtual void unregister_region(const std::byte* base) noexcept = 0;

 protected:
  NvtxMemoryCalls() = default;
  NvtxMemoryCalls(const NvtxMemoryCalls&) = default;
  NvtxMemoryCalls& operator=(const NvtxMemoryCalls&) = default;
  NvtxMemoryCalls(NvtxMemoryCalls&&) = default;
  NvtxMemoryCalls& operator=(NvtxMemoryCalls&&) = default;
};

/// The real calls, in the process-wide NVTX domain "taintpool" (created on
/// first use and never destroyed: every NvtxRegions shares it, so one
/// going cannot end another's domain). Without an NVTX tool attached
/// each call is an empty function. Thread-safe (NVTX is). The first call
/// may throw std::bad_alloc (the object is made then); later ones cannot.
[[nodiscard]] NvtxMemoryCalls& nvtx_memory_api();

} // namespace taintpool::cuda
