// NvtxRegions: the pool described to compute-sanitizer through NVTX memory
// regions (issue 15), an AllocationObserver (allocation_observer.hpp).
//
// Why: a pool hides its buffers from the sanitizers. memcheck sees the pages
// the pool took with cudaMalloc (or mapped with cuMemMap), so an access one
// byte past a pool allocation lands in the same page and passes; initcheck
// sees a recycled slice as written, because its previous owner wrote it.
// NVIDIA's NVTX memory API (nvToolsExtMem.h, the "NVTX API for Compute
// Sanitizer" guide) lets an allocator say which parts of its memory are
// allocations: each page becomes a heap (nvtxMemHeapRegister,
// NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR, NVTX_MEM_TYPE_VIRTUAL_ADDRESS),
// each live allocation a region in it (nvtxMemRegionsRegister), named
// "taintpool allocation N" as taintpool's reports name it, and unregistered
// when the allocation ends (nvtxMemRegionsUnregister); a heap is
// unregistered when its page goes back (nvtxMemHeapUnregister). memcheck
// then reports an access outside every live region of a heap as an invalid
// access, and initcheck treats a region as new memory.
//
// An allocation in the arena may span adjacent mapped chunks, each its own
// heap: it is registered as one region per chunk it covers, so its bytes
// are exactly covered and its end is still its end.
//
// When it is on: CudaBackend installs one as its MemoryConfig::observer when
// CudaBackendOptions::sanitizer_regions says so — On, or Auto (the default)
// and the process runs under compute-sanitizer (running_under_sanitizer()),
// or TAINTPOOL_SANITIZER_REGIONS=1 is set. A program can also build one and
// put it in the MemoryConfig it gives a Device.
//
// Costs: off, nothing (the manager's observer pointer is null). On, each
// page, bind and release makes one or two NVTX calls; without a tool
// attached an NVTX call is an indirect call to an empty function, and the
// bookkeeping is a std::map of live pages (one node per page, not per
// allocation). Under compute-sanitizer the tool's own costs dominate.
//
// Requirements: the NVTX headers of the CUDA toolkit (nvtx3, header-only,
// no library to link), and the CUDA runtime initialised before the first
// NVTX call (true here: a page exists only after cudaMalloc or cuMemMap).
//
// Threading: like every observer, called from the manager's one thread.
//
// Running the sanitizers over a program that uses taintpool:
//
//   compute-sanitizer --tool memcheck  ./program   # out-of-bounds, per allocation
//   compute-sanitizer --tool initcheck ./program   # reads of never-written bytes
//
// Nothing else is needed: CudaBackend sees compute-sanitizer and describes
// its pools (SanitizerRegions::Auto), so memcheck reports an access past a
// pool allocation ("Invalid __global__ write of size 1 bytes") and
// initcheck a read of a recycled buffer before its new owner wrote it
// ("Uninitialized __global__ memory read"), each naming the address; the
// region's name, "taintpool allocation N", is the id taintpool's own
// reports use. --nvtx yes is the default since CUDA 12 (say it for older
// tools). TAINTPOOL_SANITIZER_REGIONS=0 gives the old, page-level view
// (to compare); =1 turns regions on without a sanitizer (for another NVTX
// tool). A program that builds its own MemoryManager or gives a Device a
// MemoryConfig of its own sets MemoryConfig::observer to an NvtxRegions
// itself. Observed on an H200 (compute-sanitizer 2025.3, CUDA 13.0) with a
// 2 MiB page holding a 200-byte region: initcheck without regions 0
// errors, with them 200 (one per byte read); memcheck one byte past the
// region without regions 0 errors, with them the invalid write.
#pragma once

#include <taintpool/pool/allocation_observer.hpp>

#include <cstddef>
#include <cstdint>
#include <map>

namespace taintpool::cuda {

/// Whether this process runs under compute-sanitizer: it sets
/// NV_SANITIZER_INJECTION_PORT_RANGE_BEGIN for the processes it starts, and
/// NVTX_INJECTION64_PATH to its own NVTX tool (libsanitizer-collection.so;
/// both seen with compute-sanitizer 2025.3, CUDA 13.0). Reads the
/// environment; never throws.
[[nodiscard]] bool running_under_sanitizer() noexcept;

/// Pages as NVTX heaps, allocations as NVTX regions (see above).
class NvtxRegions final : public AllocationObserver {
 public:
  /// Creates the NVTX domain "taintpool" (no CUDA call).
  NvtxRegions();
  /// Unregisters every heap still registered.
  ~NvtxRegions() override;
  NvtxRegions(const NvtxRegions&) = delete;
  NvtxRegions& operator=(const NvtxRegions&) = delete;
  NvtxRegions(NvtxRegions&&) = delete;
  NvtxRegions& operator=(NvtxRegions&&) = delete;

  /// nvtxMemHeapRegister over the page. Throws std::bad_alloc if the page
  /// cannot be recorded (then nothing is registered).
  void on_page_added(const std::byte* base, std::uint64_t size) override;
  /// nvtxMemHeapUnregister, which ends any region still in it.
  void on_page_removed(const std::byte* base, std::uint64_t size) noexcept override;
  /// nvtxMemRegionsRegister of [data, data + size), one region per heap it
  /// covers, each named after the allocation. A size-0 allocation has no
  /// bytes and gets no region (any access to it is outside every region).
  void on_bound(AllocationId allocation, const std::byte* data,
                std::uint64_t size) noexcept override;
  /// nvtxMemRegionsUnregister of the regions on_bound registered.
  void on_released(AllocationId allocation, const std::byte* data,
                   std::uint64_t size) noexcept override;

  /// Heaps registered now (pages and mapped chunks held by the pool).
  [[nodiscard]] std::size_t heaps() const noexcept { return heaps_.size(); }
  /// Regions registered now (at least one per live allocation of size > 0).
  [[nodiscard]] std::uint64_t regions() const noexcept { return regions_; }

 private:
  struct Heap {
    std::uint64_t size;
    void* handle; ///< nvtxMemHeapHandle_t.
  };
  /// Calls fn(heap handle, piece base, piece size) for each heap piece of
  /// [data, data + size), in address order.
  template <class Fn>
  void for_each_piece(const std::byte* data, std::uint64_t size, Fn&& fn) const noexcept;

  void* domain_ = nullptr;               ///< nvtxDomainHandle_t.
  std::map<std::uintptr_t, Heap> heaps_; ///< By base address.
  std::uint64_t regions_ = 0;
};

} // namespace taintpool::cuda
