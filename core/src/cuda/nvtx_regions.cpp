#include <taintpool/cuda/nvtx_regions.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <nvtx3/nvToolsExtMem.h>
#include <string_view>

namespace taintpool::cuda {

bool running_under_sanitizer() noexcept {
  // What compute-sanitizer 2025.3 (CUDA 13.0) sets for the program it runs,
  // seen on an H200: NV_SANITIZER_INJECTION_PORT_RANGE_BEGIN (and _END,
  // _PORT_BASE, _TRANSPORT_TYPE), and NVTX_INJECTION64_PATH naming its
  // libsanitizer-collection.so, the NVTX tool these regions go to.
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read once per backend, never written here.
  if (std::getenv("NV_SANITIZER_INJECTION_PORT_RANGE_BEGIN") != nullptr) {
    return true;
  }
  // NOLINTNEXTLINE(concurrency-mt-unsafe)
  const char* nvtx_tool = std::getenv("NVTX_INJECTION64_PATH");
  return nvtx_tool != nullptr && std::strstr(nvtx_tool, "sanitizer") != nullptr;
}

namespace {

/// Copies what of `text` fits before `end` to `at`; the end of the copy.
char* append(char* at, const char* end, std::string_view text) noexcept {
  const auto room = static_cast<std::size_t>(end - at);
  const std::size_t count = text.size() < room ? text.size() : room;
  return std::copy_n(text.data(), count, at);
}

nvtxDomainHandle_t domain_of(void* domain) noexcept {
  return static_cast<nvtxDomainHandle_t>(domain);
}

} // namespace

NvtxRegions::NvtxRegions()
    : domain_(nvtxDomainCreateA("taintpool")) {
}

NvtxRegions::~NvtxRegions() {
  for (const auto& [base, heap] : heaps_) {
    nvtxMemHeapUnregister(domain_of(domain_), static_cast<nvtxMemHeapHandle_t>(heap.handle));
  }
  nvtxDomainDestroy(domain_of(domain_));
}

void NvtxRegions::on_page_added(const std::byte* base, std::uint64_t size) {
  // Record first: if that throws, nothing was registered.
  auto [where, inserted] =
      heaps_.emplace(reinterpret_cast<std::uintptr_t>(base), Heap{size, nullptr});
  if (!inserted) {
    where->second.size = size; // A page the tool never saw go (cannot happen): re-register.
  }
  nvtxMemVirtualRangeDesc_t range{};
  range.ptr = base;
  range.size = size;
  nvtxMemHeapDesc_t desc{};
  desc.extCompatID = NVTX_EXT_COMPATID_MEM;
  desc.structSize = sizeof(desc);
  desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
  desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  desc.typeSpecificDescSize = sizeof(range);
  desc.typeSpecificDesc = &range;
  desc.messageType = NVTX_MESSAGE_TYPE_ASCII;
  desc.message.ascii = "taintpool page";
  where->second.handle = nvtxMemHeapRegister(domain_of(domain_), &desc);
}

void NvtxRegions::on_page_removed(const std::byte* base, std::uint64_t /*size*/) noexcept {
  const auto where = heaps_.find(reinterpret_cast<std::uintptr_t>(base));
  if (where == heaps_.end()) {
    return;
  }
  nvtxMemHeapUnregister(domain_of(domain_), static_cast<nvtxMemHeapHandle_t>(where->second.handle));
  heaps_.erase(where);
}

template <class Fn>
void NvtxRegions::for_each_piece(const std::byte* data, std::uint64_t size,
                                 Fn&& fn) const noexcept {
  auto address = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t end = address + size;
  // The heap holding the first byte: the last one starting at or before it.
  auto heap = heaps_.upper_bound(address);
  if (heap == heaps_.begin()) {
    return; // Not in any page the pool reported: nothing to describe.
  }
  --heap;
  while (address < end && heap != heaps_.end() && heap->first <= address &&
         address < heap->first + heap->second.size) {
    const std::uintptr_t heap_end = heap->first + heap->second.size;
    const std::uintptr_t piece_end = end < heap_end ? end : heap_end;
    fn(heap->second.handle, address, piece_end - address);
    address = piece_end;
    ++heap; // The next chunk of a reservation starts where this one ends.
  }
}

void NvtxRegions::on_bound(AllocationId allocation, const std::byte* data,
                           std::uint64_t size) noexcept {
  if (size == 0) {
    return;
  }
  // Named as taintpool's reports name it (to_string(AllocationId)), without
  // allocating: this runs where nothing may fail. 80 bytes hold the longest.
  std::array<char, 80> name{};
  char* const end = &name.back(); // The last byte stays the terminating zero.
  char* at = append(name.data(), end, "taintpool allocation ");
  at = std::to_chars(at, end, allocation_number(allocation)).ptr;
  if (allocation_space(allocation) != 0) {
    at = append(at, end, " (memory ");
    at = std::to_chars(at, end, allocation_space(allocation)).ptr;
    append(at, end, ")");
  }
  for_each_piece(data, size, [&](void* heap, std::uintptr_t base, std::uint64_t bytes) {
    nvtxMemVirtualRangeDesc_t range{};
    range.ptr = reinterpret_cast<const void*>(base);
    range.size = bytes;
    nvtxMemRegionsRegisterBatch_t batch{};
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof(batch);
    batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    batch.heap = static_cast<nvtxMemHeapHandle_t>(heap);
    batch.regionCount = 1;
    batch.regionDescElementSize = sizeof(range);
    batch.regionDescElements = &range;
    nvtxMemRegionsRegister(domain_of(domain_), &batch);

    nvtxMemRegionNameDesc_t label{};
    label.regionRefType = NVTX_MEM_REGION_REF_TYPE_POINTER;
    label.nameType = NVTX_MESSAGE_TYPE_ASCII;
    label.region.pointer = range.ptr;
    label.name.ascii = name.data();
    nvtxMemRegionsNameBatch_t names{};
    names.extCompatID = NVTX_EXT_COMPATID_MEM;
    names.structSize = sizeof(names);
    names.regionCount = 1;
    names.regionElementSize = sizeof(label);
    names.regionElements = &label;
    nvtxMemRegionsName(domain_of(domain_), &names);
    ++regions_;
  });
}

void NvtxRegions::on_released(AllocationId /*allocation*/, const std::byte* data,
                              std::uint64_t size) noexcept {
  if (size == 0) {
    return;
  }
  for_each_piece(data, size, [&](void* /*heap*/, std::uintptr_t base, std::uint64_t /*bytes*/) {
    nvtxMemRegionRef_t ref{};
    ref.pointer = reinterpret_cast<const void*>(base);
    nvtxMemRegionsUnregisterBatch_t batch{};
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof(batch);
    batch.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
    batch.refCount = 1;
    batch.refElementSize = sizeof(ref);
    batch.refElements = &ref;
    nvtxMemRegionsUnregister(domain_of(domain_), &batch);
    --regions_;
  });
}

} // namespace taintpool::cuda
