// AllocationObserver: a hook through which something outside the pool
// learns which memory the pool holds and which of it is a live allocation.
//
// Why: tools that check memory accesses (compute-sanitizer's memcheck and
// initcheck, through NVTX memory regions: cuda/nvtx_regions.hpp) see only
// what the storage handed out — whole pages. Inside a page every byte looks
// allocated, and a recycled slice looks written by its previous owner. An
// observer told of every page and every allocation can describe the pool to
// such a tool: pages as heaps, allocations as regions within them.
//
// Shape: four calls, all on the manager's one thread, in the order things
// happen — a page before any allocation in it, an allocation's release
// before its page goes. "Page" here is any range the storage backs with
// memory: a page from Storage::allocate, or a chunk VirtualMemory::map
// backed inside a reservation (address space alone is never reported). An
// allocation may span several adjacent chunks of one reservation; it never
// spans two pages from Storage::allocate.
//
// Where it is called: MemoryManager, when MemoryConfig::observer is set —
// pages through an ObservedStorage adaptor it puts between its pools and the
// storage (observed_storage.hpp), allocations where it binds and ends them.
// With no observer the manager's hot paths test one pointer that is always
// null (a predicted branch) and take no other step: the off state costs
// nothing measurable (bench/RESULTS.md, "Allocation observer").
//
// Contract: on_page_added may throw std::bad_alloc (the page is then given
// back and the manager reports OutOfMemory, P3); every other call is
// noexcept, because the manager calls them where nothing may fail. An
// observer never calls back into the manager.
#pragma once

#include <taintpool/failure_id.hpp>

#include <cstddef>
#include <cstdint>

namespace taintpool {

/// Told of the pool's pages and allocations (see above). Must outlive every
/// manager whose MemoryConfig names it.
class AllocationObserver {
 public:
  virtual ~AllocationObserver() = default;

  /// The storage backed [base, base + size) with memory for the pool.
  /// May throw std::bad_alloc; nothing else.
  virtual void on_page_added(const std::byte* base, std::uint64_t size) = 0;
  /// [base, base + size), reported by on_page_added, goes back to storage.
  /// No live allocation lies in it.
  virtual void on_page_removed(const std::byte* base, std::uint64_t size) noexcept = 0;
  /// A new allocation holds [data, data + size) (size may be 0; data is
  /// then still an address inside a page).
  virtual void on_bound(AllocationId allocation, const std::byte* data,
                        std::uint64_t size) noexcept = 0;
  /// The allocation has ended (its last handle was dropped and the manager
  /// discovered it, or the manager was reset): its bytes are no one's.
  virtual void on_released(AllocationId allocation, const std::byte* data,
                           std::uint64_t size) noexcept = 0;

  /// Whether this observer can describe chunks mapped into a reserved
  /// range (VirtualMemory::map) as pages. Yes by default. An observer that
  /// says no gets pages from Storage::allocate only: the manager's
  /// ObservedStorage then offers no virtual memory, so the arena grows by
  /// whole pages instead (its pre-virtual-memory behaviour; more storage
  /// calls, and free space split across pages). cuda::NvtxRegions says no:
  /// compute-sanitizer accepts only whole cudaMalloc (or cuMemAlloc)
  /// allocations as NVTX heaps, and rejects a cuMemMap chunk. Asked when
  /// a lane's arena first grows: the answer must not change.
  [[nodiscard]] virtual bool accepts_mapped_chunks() const noexcept { return true; }

 protected:
  AllocationObserver() = default;
  AllocationObserver(const AllocationObserver&) = default;
  AllocationObserver& operator=(const AllocationObserver&) = default;
  AllocationObserver(AllocationObserver&&) = default;
  AllocationObserver& operator=(AllocationObserver&&) = default;
};

} // namespace taintpool
