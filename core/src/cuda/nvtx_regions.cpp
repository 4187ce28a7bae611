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

/// The real NVTX memory calls (nvtx_memory_calls.hpp).
class NvtxMemoryApi final : public NvtxMemoryCalls {
 public:
  // One domain for the process, never destroyed: a domain per
  // NvtxRegions, destroyed with it, could end the domain of another live
  // one where a tool keeps one domain per name; with one, the question
  // does not arise, and nothing is left to tear down at exit.
  NvtxMemoryApi() noexcept
      : domain_(nvtxDomainCreateA("taintpool")) {}

  void* register_heap(const std::byte* base, std::uint64_t size,
                      const char* name) noexcept override {
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
    desc.message.ascii = name;
    return nvtxMemHeapRegister(domain_, &desc);
  }

  void unregister_heap(void* heap) noexcept override {
    nvtxMemHeapUnregister(domain_, static_cast<nvtxMemHeapHandle_t>(heap));
  }

  void register_region(void* heap, const std::byte* base, std::uint64_t size,
                       const char* name) noexcept override {
    nvtxMemVirtualRangeDesc_t range{};
    range.ptr = base;
    range.size = size;
    nvtxMemRegionsRegisterBatch_t batch{};
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof(batch);
    batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    batch.heap = static_cast<nvtxMemHeapHandle_t>(heap);
    batch.regionCount = 1;
    batch.regionDescElementSize = sizeof(range);
    batch.regionDescElements = &range;
    nvtxMemRegionsRegister(domain_, &batch);

    nvtxMemRegionNameDesc_t label{};
    label.regionRefType = NVTX_MEM_REGION_REF_TYPE_POINTER;
    label.nameType = NVTX_MESSAGE_TYPE_ASCII;
    label.region.pointer = base;
    label.name.ascii = name;
    nvtxMemRegionsNameBatch_t names{};
    names.extCompatID = NVTX_EXT_COMPATID_MEM;
    names.structSize = sizeof(names);
    names.regionCount = 1;
    names.regionElementSize = sizeof(label);
    names.regionElements = &label;
    nvtxMemRegionsName(domain_, &names);
  }

  void unregister_region(const std::byte* base) noexcept override {
    nvtxMemRegionRef_t ref{};
    ref.pointer = base;
    nvtxMemRegionsUnregisterBatch_t batch{};
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof(batch);
    batch.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
    batch.refCount = 1;
    batch.refElementSize = sizeof(ref);
    batch.refElements = &ref;
    nvtxMemRegionsUnregister(domain_, &batch);
  }

 private:
  nvtxDomainHandle_t domain_;
};

} // namespace

NvtxMemoryCalls& nvtx_memory_api() {
  // Never destroyed (see NvtxMemoryApi): an NvtxRegions destroyed during
  // static destruction still finds it. Leaked on purpose; its calls are
  // thread-safe (NVTX's).
  // NOLINTNEXTLINE(cppcoreguidelines-owning-memory,cppcoreguidelines-avoid-non-const-global-variables)
  static NvtxMemoryApi& api = *new NvtxMemoryApi();
  return api;
}

NvtxRegions::NvtxRegions()
    : calls_(nvtx_memory_api()) {
}

NvtxRegions::NvtxRegions(NvtxMemoryCalls& calls) noexcept
    : calls_(calls) {
}

NvtxRegions::~NvtxRegions() {
  for (const auto& [base, heap] : heaps_) {
    calls_.unregister_heap(heap.handle);
  }
}

void NvtxRegions::on_page_added(const std::byte* base, std::uint64_t size) {
  // Record first: if that throws, nothing was registered.
  auto [where, inserted] =
      heaps_.emplace(reinterpret_cast<std::uintptr_t>(base), Heap{size, nullptr});
  if (!inserted) {
    // A page the tool never saw go (the observer contract rules it out):
    // end the old heap before the new one, so no two ever overlap.
    calls_.unregister_heap(where->second.handle);
    where->second.size = size;
  }
  where->second.handle = calls_.register_heap(base, size, "taintpool page");
}

void NvtxRegions::on_page_removed(const std::byte* base, std::uint64_t /*size*/) noexcept {
  const auto where = heaps_.find(reinterpret_cast<std::uintptr_t>(base));
  if (where == heaps_.end()) {
    return;
  }
  calls_.unregister_heap(where->second.handle);
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
    ++heap; // An adjacent page may hold the rest.
  }
}

std::array<char, NvtxRegions::name_capacity>
NvtxRegions::region_name(AllocationId allocation) noexcept {
  // Written into room for the longest ("taintpool allocation " and 16
  // digits and " (memory 4095)": 51 characters), then cut to the tool's
  // 49 by dropping the prefix's first word when it does not fit.
  std::array<char, 64> full{};
  char* const end = &full.back();
  char* at = append(full.data(), end, "taintpool allocation ");
  at = std::to_chars(at, end, allocation_number(allocation)).ptr;
  if (allocation_space(allocation) != 0) {
    at = append(at, end, " (memory ");
    at = std::to_chars(at, end, allocation_space(allocation)).ptr;
    at = append(at, end, ")");
  }
  const auto length = static_cast<std::size_t>(at - full.data());
  constexpr std::string_view dropped = "taintpool ";
  const std::size_t skip = length < name_capacity ? 0 : dropped.size();
  std::array<char, name_capacity> name{};
  std::copy_n(full.data() + skip, length - skip, name.data());
  return name;
}

void NvtxRegions::on_bound(AllocationId allocation, const std::byte* data,
                           std::uint64_t size) noexcept {
  if (size == 0) {
    return;
  }
  const std::array<char, name_capacity> name = region_name(allocation);
  for_each_piece(data, size, [&](void* heap, std::uintptr_t base, std::uint64_t bytes) {
    calls_.register_region(heap, reinterpret_cast<const std::byte*>(base), bytes, name.data());
    ++regions_;
  });
}

void NvtxRegions::on_released(AllocationId /*allocation*/, const std::byte* data,
                              std::uint64_t size) noexcept {
  if (size == 0) {
    return;
  }
  for_each_piece(data, size, [&](void* /*heap*/, std::uintptr_t base, std::uint64_t /*bytes*/) {
    calls_.unregister_region(reinterpret_cast<const std::byte*>(base));
    --regions_;
  });
}

} // namespace taintpool::cuda
