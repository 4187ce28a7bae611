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
// Which memory becomes a heap: only pages from Storage::allocate, i.e.
// whole cudaMalloc allocations. The sanitizer's guide names cudaMalloc
// (and cuMemAlloc) allocations as heaps; a chunk that CudaStorage maps
// into a reserved range (cuMemCreate + cuMemMap, the arena's growth when
// the storage has virtual memory) is refused. Seen on the H200
// (compute-sanitizer 2025.3.1, memcheck): a heap over a whole cudaMalloc
// allocation, or over part of one, is accepted; over one cuMemMap chunk
// or two adjacent ones, "Call to nvtxMemHeapRegister failed: One or more
// of the parameters is invalid" with a null handle, and the same for its
// unregister — each counted as an error, as is every region registered
// in the null heap. So NvtxRegions
// accepts no mapped chunks (accepts_mapped_chunks() is false): while it
// observes a manager, the arena grows by cudaMalloc pages, and every
// allocation, small or large, is a region of a heap the tool accepts.
// (Before this, cuda_streams_test — whose 256 KiB buffers live in the
// arena — drew 154 memcheck errors under the sanitizer on the H200, none
// of them from a kernel; with the arena on pages, 0.) Should adjacent pages be reported (a caller
// driving an NvtxRegions by hand), an allocation across them is
// registered as one region per page it covers.
//
// The rules it keeps (the guide's, and the bookkeeping's own): each heap
// one whole page, registered once and never overlapping another; each
// region inside one live heap, registered once, unregistered before its
// heap; names 1 to 49 printable ASCII characters. tests/cuda/
// nvtx_rules_test.cpp checks them through an NvtxMemoryCalls that
// enforces them, over pools driven by several streams' lanes.
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
// allocation). The arena grows by cudaMalloc pages rather than mapped
// chunks while regions are on (see above): more storage calls on a cold
// start, and free space split across pages. Under compute-sanitizer the
// tool's own costs dominate.
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

#include <taintpool/cuda/nvtx_memory_calls.hpp>
#include <taintpool/pool/allocation_observer.hpp>

#include <array>
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
  /// Makes the real NVTX calls (nvtx_memory_api(); no CUDA call). May
  /// throw std::bad_alloc the first time (nvtx_memory_api()).
  NvtxRegions();
  /// Makes its calls through `calls`, which must outlive it (a test's
  /// recording calls, another tool's).
  explicit NvtxRegions(NvtxMemoryCalls& calls) noexcept;
  /// Unregisters every heap still registered.
  ~NvtxRegions() override;
  NvtxRegions(const NvtxRegions&) = delete;
  NvtxRegions& operator=(const NvtxRegions&) = delete;
  NvtxRegions(NvtxRegions&&) = delete;
  NvtxRegions& operator=(NvtxRegions&&) = delete;

  /// No: the sanitizer accepts only whole cudaMalloc allocations as heaps
  /// (see above), so the arena it observes grows by pages.
  [[nodiscard]] bool accepts_mapped_chunks() const noexcept override { return false; }

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

  /// The longest region name the sanitizer takes (its guide: 1 to 49
  /// printable ASCII characters), plus the terminating zero.
  static constexpr std::size_t name_capacity = 50;
  /// The name of `allocation`'s region: taintpool's own name for it
  /// (to_string(AllocationId): "taintpool allocation 7", with
  /// " (memory 2)" for a manager other than the first), shortened to
  /// "allocation 7 (memory 2)" where that would pass 49 characters. Never
  /// allocates: it runs where nothing may fail.
  [[nodiscard]] static std::array<char, name_capacity>
  region_name(AllocationId allocation) noexcept;

 private:
  struct Heap {
    std::uint64_t size;
    void* handle; ///< nvtxMemHeapHandle_t.
  };
  /// Calls fn(heap handle, piece base, piece size) for each heap piece of
  /// [data, data + size), in address order.
  template <class Fn>
  void for_each_piece(const std::byte* data, std::uint64_t size, Fn&& fn) const noexcept;

  NvtxMemoryCalls& calls_;
  std::map<std::uintptr_t, Heap> heaps_; ///< By base address.
  std::uint64_t regions_ = 0;
};

} // namespace taintpool::cuda
