// What compute-sanitizer demands of NvtxRegions' NVTX calls, checked on the
// host (issue 15). On the H200, cuda_streams_test under memcheck with
// regions on drew 154 errors, every one "one or more of the parameters is
// invalid" from nvtxMemHeapRegister / nvtxMemRegionsRegister, and none
// from a kernel: the pools' description broke the tool's rules, not the
// program its memory rules. Those rules (the "NVTX API for Compute
// Sanitizer" guide, and what the tool was seen to refuse) are enforced
// here by an NvtxMemoryCalls that records every call:
//
//   H1  a heap lies inside one allocation of the storage (cudaMalloc's;
//       the guide names cudaMalloc and cuMemAlloc) — never on a chunk
//       mapped into a reserved range (cuMemMap). Seen on the H200
//       (compute-sanitizer 2025.3.1, memcheck): a heap over a whole 4 MiB
//       cudaMalloc allocation or its first half, accepted; over one 2 MiB
//       cuMemMap chunk or two adjacent ones, "Call to nvtxMemHeapRegister
//       failed: One or more of the parameters is invalid", a null handle,
//       and the same for its nvtxMemHeapUnregister — one error each;
//   H2  heaps never overlap, and a heap is unregistered only once, and
//       before its memory goes back to the storage;
//   R1  a region lies inside one live heap and overlaps no live region;
//   R2  a region is unregistered once, before its heap;
//   R3  a region's name is 1 to 49 printable ASCII characters.
//
// The scenarios are the ones that drew the errors: several streams, each
// with its own lane of pools, buffers small (sliced pages) and large (the
// arena), dropped while other streams still use them (pins, stream-ordered
// reuse), memory given back, a Device torn down. Host backends stand in for
// the GPU: HostStorage with virtual memory maps arena chunks exactly as
// CudaStorage does with cuMemMap. No GPU, no NVTX tool.
#include <taintpool/cuda/nvtx_memory_calls.hpp>
#include <taintpool/cuda/nvtx_regions.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_config.hpp>
#include <taintpool/pool/storage.hpp>
#include <taintpool/pool/virtual_memory.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "deferred_work.hpp"

namespace taintpool::cuda {
namespace {

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = kKiB * kKiB;

/// The storage's allocations as the tool sees them: whole allocations
/// (Storage::allocate, cudaMalloc) and mapped chunks (VirtualMemory::map,
/// cuMemMap), by base address. Shared by the storage adaptor that fills it
/// and the rules that consult it.
struct DeviceMemoryLedger {
  std::map<std::uintptr_t, std::uint64_t> allocations; ///< Whole allocations, live.
  std::map<std::uintptr_t, std::uint64_t> chunks;      ///< Mapped chunks, live.
  std::vector<std::string> violations;
};

/// The rules above, as a recording NvtxMemoryCalls.
class SanitizerRules final : public NvtxMemoryCalls {
 public:
  explicit SanitizerRules(DeviceMemoryLedger& ledger)
      : ledger_(ledger) {}

  void* register_heap(const std::byte* base, std::uint64_t size,
                      const char* /*name*/) noexcept override {
    const auto at = reinterpret_cast<std::uintptr_t>(base);
    if (!inside(ledger_.allocations, at, size)) {
      violate(inside(ledger_.chunks, at, size)
                  ? "H1: a heap on a chunk mapped into a reserved range (cuMemMap), not inside "
                    "an allocation"
                  : "H1: a heap that is not inside one allocation of the storage");
    }
    if (overlaps(heaps_, at, size)) {
      violate("H2: a heap overlapping a live heap");
    }
    heaps_[at] = size;
    ++heaps_registered_;
    return reinterpret_cast<void*>(at); // The tool's handle is the heap's address.
  }

  void unregister_heap(void* heap) noexcept override {
    const auto at = reinterpret_cast<std::uintptr_t>(heap);
    const auto found = heaps_.find(at);
    if (found == heaps_.end()) {
      violate("H2: a heap unregistered that is not live");
      return;
    }
    if (overlaps(regions_, at, found->second)) {
      violate("R2: a heap unregistered while a region in it is live");
    }
    heaps_.erase(found);
  }

  void register_region(void* heap, const std::byte* base, std::uint64_t size,
                       const char* name) noexcept override {
    const auto at = reinterpret_cast<std::uintptr_t>(base);
    const auto found = heaps_.find(reinterpret_cast<std::uintptr_t>(heap));
    if (found == heaps_.end()) {
      violate("R1: a region in a heap that is not live");
    } else if (at < found->first || at + size > found->first + found->second || size == 0) {
      violate("R1: a region not inside its heap");
    }
    if (overlaps(regions_, at, size)) {
      violate("R1: a region overlapping a live region");
    }
    const std::size_t length = std::strlen(name);
    if (length == 0 || length > 49 ||
        !std::all_of(name, name + length, [](char c) { return std::isprint(c) != 0; })) {
      violate("R3: a region name that is not 1 to 49 printable characters: " + std::string(name));
    }
    regions_[at] = size;
    ++regions_registered_;
  }

  void unregister_region(const std::byte* base) noexcept override {
    if (regions_.erase(reinterpret_cast<std::uintptr_t>(base)) == 0) {
      violate("R2: a region unregistered that is not live");
    }
  }

  /// H2: the storage is giving [base, base + size) back; no heap may lie on it.
  void check_freed(std::uintptr_t base, std::uint64_t size) {
    if (overlaps(heaps_, base, size)) {
      violate("H2: memory went back to the storage under a live heap");
    }
  }

  [[nodiscard]] std::size_t live_heaps() const { return heaps_.size(); }
  [[nodiscard]] std::size_t live_regions() const { return regions_.size(); }
  [[nodiscard]] std::uint64_t heaps_registered() const { return heaps_registered_; }
  [[nodiscard]] std::uint64_t regions_registered() const { return regions_registered_; }

 private:
  /// Whether [at, at + size) lies inside one of `ranges`.
  static bool inside(const std::map<std::uintptr_t, std::uint64_t>& ranges, std::uintptr_t at,
                     std::uint64_t size) {
    auto next = ranges.upper_bound(at);
    if (next == ranges.begin()) {
      return false;
    }
    --next;
    return at + size <= next->first + next->second;
  }

  static bool overlaps(const std::map<std::uintptr_t, std::uint64_t>& ranges, std::uintptr_t at,
                       std::uint64_t size) {
    auto next = ranges.lower_bound(at);
    if (next != ranges.end() && next->first < at + size) {
      return true;
    }
    return next != ranges.begin() && std::prev(next)->first + std::prev(next)->second > at;
  }

  void violate(const std::string& what) noexcept {
    try {
      ledger_.violations.push_back(what);
    } catch (...) {
    }
  }

  DeviceMemoryLedger& ledger_;
  std::map<std::uintptr_t, std::uint64_t> heaps_;
  std::map<std::uintptr_t, std::uint64_t> regions_;
  std::uint64_t heaps_registered_ = 0;
  std::uint64_t regions_registered_ = 0;
};

/// HostStorage standing in for CudaStorage, with its allocations and
/// chunks written into the ledger (and each give-back checked against the
/// live heaps, H2).
class LedgerStorage final : public Storage, public VirtualMemory {
 public:
  LedgerStorage(HostStorage& inner, DeviceMemoryLedger& ledger, SanitizerRules& rules)
      : inner_(inner)
      , ledger_(ledger)
      , rules_(rules) {}

  [[nodiscard]] std::uint64_t alignment() const noexcept override { return inner_.alignment(); }
  [[nodiscard]] StorageHandle allocate(std::uint64_t size) override {
    const StorageHandle handle = inner_.allocate(size);
    ledger_.allocations[address(inner_.resolve(handle))] = size;
    return handle;
  }
  void deallocate(StorageHandle handle, std::uint64_t size) noexcept override {
    const std::uintptr_t at = address(inner_.resolve(handle));
    rules_.check_freed(at, size);
    ledger_.allocations.erase(at);
    inner_.deallocate(handle, size);
  }
  [[nodiscard]] void* resolve(StorageHandle handle) const noexcept override {
    return inner_.resolve(handle);
  }
  [[nodiscard]] std::string name() const override { return inner_.name(); }
  [[nodiscard]] VirtualMemory* virtual_memory() noexcept override {
    return inner_.virtual_memory() != nullptr ? this : nullptr;
  }

  [[nodiscard]] std::uint64_t granularity() const noexcept override {
    return inner_.virtual_memory()->granularity();
  }
  [[nodiscard]] StorageHandle reserve(std::uint64_t size) override {
    return inner_.virtual_memory()->reserve(size);
  }
  void unreserve(StorageHandle reservation, std::uint64_t size) noexcept override {
    inner_.virtual_memory()->unreserve(reservation, size);
  }
  [[nodiscard]] StorageHandle map(StorageHandle reservation, std::uint64_t offset,
                                  std::uint64_t size) override {
    const StorageHandle chunk = inner_.virtual_memory()->map(reservation, offset, size);
    ledger_.chunks[address(inner_.resolve(reservation)) + offset] = size;
    return chunk;
  }
  void unmap(StorageHandle reservation, std::uint64_t offset, std::uint64_t size,
             StorageHandle chunk) noexcept override {
    const std::uintptr_t at = address(inner_.resolve(reservation)) + offset;
    rules_.check_freed(at, size);
    ledger_.chunks.erase(at);
    inner_.virtual_memory()->unmap(reservation, offset, size, chunk);
  }

 private:
  static std::uintptr_t address(const void* pointer) {
    return reinterpret_cast<std::uintptr_t>(pointer);
  }

  HostStorage& inner_;
  DeviceMemoryLedger& ledger_;
  SanitizerRules& rules_;
};

/// Storage, ledger, rules and regions for one scenario; the MemoryConfig a
/// Device over them uses (the defaults, observed by the regions).
struct DescribedPools {
  explicit DescribedPools(bool virtual_memory)
      : host(HostStorageOptions{256, virtual_memory, 2 * kMiB})
      , rules(ledger)
      , storage(host, ledger, rules)
      , regions(rules) {
    config.observer = &regions;
  }

  HostStorage host;
  DeviceMemoryLedger ledger;
  SanitizerRules rules;
  LedgerStorage storage;
  NvtxRegions regions;
  MemoryConfig config;
};

std::string listed(const std::vector<std::string>& violations) {
  std::string text;
  for (std::size_t at = 0; at < violations.size() && at < 8; ++at) {
    text += "\n  " + violations[at];
  }
  if (violations.size() > 8) {
    text += "\n  ... and " + std::to_string(violations.size() - 8) + " more";
  }
  return text;
}

/// Fills every output with `value` at once (a synchronous host launch).
LaunchOutcome fill_now(const KernelContext& context, std::uint8_t value) {
  for (std::size_t index = 0; index < context.writes(); ++index) {
    const std::span<std::byte> out = context.write(index);
    std::fill(out.begin(), out.end(), static_cast<std::byte>(value));
  }
  return LaunchOutcome::success();
}

class NvtxRules : public ::testing::TestWithParam<bool> {};

TEST_P(NvtxRules, H1_R1_SeveralStreamsLanesSmallAndArenaBuffersAreDescribedAsTheToolDemands) {
  // The shape of cuda_streams_test: three streams and the default one, each
  // its own lane, 256 KiB buffers (the arena) and 4 KiB ones (a sliced
  // page), rounds that drop and reuse, memory given back, then teardown.
  DescribedPools pools(GetParam());
  {
    HostBackend backend(pools.storage, pools.config);
    Device device(backend);
    std::vector<StreamId> streams{device.default_stream(), device.create_stream(),
                                  device.create_stream(), device.create_stream()};
    std::vector<Allocation> kept;
    for (std::uint32_t round = 0; round < 6; ++round) {
      for (std::size_t s = 0; s < streams.size(); ++s) {
        const Allocation large = device.create_buffer(256 * kKiB, streams[s]);
        const Allocation small = device.create_buffer(4 * kKiB, streams[s]);
        ASSERT_TRUE(device
                        .launch(streams[s], "fill", {}, {large.whole(), small.whole()},
                                [&](const KernelContext& context) {
                                  return fill_now(context, static_cast<std::uint8_t>(round));
                                })
                        .ran());
        if (round % 2 == 0) {
          kept.push_back(large); // Held across rounds: its lane's arena grows.
        }
      }
      // An allocation larger than the arena's first growth: a second chunk
      // (with virtual memory) or a second arena page.
      const Allocation big = device.create_buffer(3 * kMiB + 100, streams[round % streams.size()]);
      ASSERT_TRUE(device
                      .launch(streams[round % streams.size()], "fill big", {}, {big.whole()},
                              [&](const KernelContext& context) { return fill_now(context, 7); })
                      .ran());
    }
    EXPECT_GT(pools.rules.live_regions(), 0u);
    kept.resize(kept.size() / 2);
    device.cleanup(); // Free pages and chunks go back: heaps end before them (H2).
    EXPECT_EQ(pools.rules.live_regions(), pools.regions.regions());
    device.check_invariants();
  }
  EXPECT_EQ(pools.rules.live_regions(), 0u) << "R2: every region ends with its allocation";
  EXPECT_EQ(pools.rules.live_heaps(), 0u) << "H2: every heap ends with its page";
  EXPECT_GT(pools.rules.heaps_registered(), 4u);
  EXPECT_GT(pools.rules.regions_registered(), 48u);
  EXPECT_TRUE(pools.ledger.violations.empty()) << listed(pools.ledger.violations);
}

TEST(NvtxRules, R2_BuffersDroppedWhileAnotherStreamStillUsesThemEndTheirRegionsOnceBeforeReuse) {
  // Stream-ordered reuse with pins (O3): a buffer dropped while another
  // stream's queued work still reads it lives on until that work is done;
  // only then does its region end, and the memory it had is a new region
  // for its next owner — never two regions over the same bytes. (The
  // deferred backend's storage offers no virtual memory: pages only.)
  DescribedPools pools(false);
  {
    DeferredHostBackend backend(pools.storage, pools.config);
    Device device(backend);
    const StreamId a = device.default_stream();
    const StreamId b = device.create_stream();
    const StreamId c = device.create_stream();
    for (std::uint32_t round = 0; round < 8; ++round) {
      for (const std::uint64_t size : {4 * kKiB, 256 * kKiB}) {
        Allocation x = device.create_buffer(size, a);
        ASSERT_TRUE(
            device.launch(a, "fill x", {}, {x.whole()}, test::fill_later(backend, 3)).ran());
        Allocation y = device.create_buffer(size, b);
        ASSERT_TRUE(
            device.launch(b, "y = x + 1", {x.whole()}, {y.whole()}, test::add_later(backend, 1))
                .ran());
        Allocation z = device.create_buffer(size, c);
        ASSERT_TRUE(
            device.launch(c, "z = x + 2", {x.whole()}, {z.whole()}, test::add_later(backend, 2))
                .ran());
        x.reset(); // Pinned by b's and c's queued reads.
        const Allocation again = device.create_buffer(size, a); // Not x's memory while pinned.
        ASSERT_TRUE(
            device.launch(a, "fill again", {}, {again.whole()}, test::fill_later(backend, 9))
                .ran());
        if (round % 3 == 2) {
          static_cast<void>(backend.step());
        }
      }
    }
    device.synchronize();
    device.cleanup();
    device.check_invariants();
  }
  EXPECT_EQ(pools.rules.live_regions(), 0u);
  EXPECT_EQ(pools.rules.live_heaps(), 0u);
  EXPECT_EQ(pools.rules.regions_registered(), 64u); // 8 rounds, 2 sizes, 4 buffers.
  EXPECT_TRUE(pools.ledger.violations.empty()) << listed(pools.ledger.violations);
}

INSTANTIATE_TEST_SUITE_P(HostStorage, NvtxRules, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "VirtualMemory" : "Pages";
                         });

TEST(NvtxRules, H1_TwoManagersOnOneObserverNeitherMapsChunks) {
  // accepts_mapped_chunks() is the observer's, so every manager it watches
  // grows its arena by whole allocations (H1), whatever the storage offers.
  DescribedPools pools(true);
  {
    HostBackend backend(pools.storage, pools.config);
    Device first(backend);
    Device second(backend);
    const Allocation a = first.create_buffer(5 * kMiB);
    const Allocation b = second.create_buffer(5 * kMiB, second.create_stream());
    EXPECT_TRUE(pools.ledger.chunks.empty()) << "an observed arena mapped a chunk";
  }
  EXPECT_TRUE(pools.ledger.violations.empty()) << listed(pools.ledger.violations);
}

TEST(NvtxRules, R3_EveryRegionNameFitsTheToolsFortyNineCharacters) {
  // taintpool's own name where it fits; the longest ids (16 digits, a
  // manager past the first thousand) drop the "taintpool " prefix.
  const auto name = [](std::uint32_t space, std::uint64_t number) {
    return std::string(NvtxRegions::region_name(allocation_id(space, number)).data());
  };
  EXPECT_EQ(name(0, 7), "taintpool allocation 7");
  EXPECT_EQ(name(2, 7), "taintpool allocation 7 (memory 2)");
  EXPECT_EQ(name(allocation_spaces - 1, allocation_number_mask),
            "allocation 4503599627370495 (memory 4095)");
  EXPECT_EQ(name(99, allocation_number_mask), "taintpool allocation 4503599627370495 (memory 99)");
  for (const std::uint32_t space : {0u, 1u, 9u, 10u, 99u, 100u, 999u, 1000u, 4095u}) {
    for (const std::uint64_t number :
         {std::uint64_t{1}, std::uint64_t{999'999'999'999}, allocation_number_mask}) {
      const std::string text = name(space, number);
      EXPECT_GE(text.size(), 1u);
      EXPECT_LE(text.size(), 49u) << text;
      EXPECT_NE(text.find(std::to_string(number)), std::string::npos) << text;
    }
  }
}

} // namespace
} // namespace taintpool::cuda
