// Pins testing/recycling_storage.hpp, the storage pool_fuzzer (pages and
// reservations) and the device-level fuzzers (pages) keep across inputs:
// what it hands out is what HostStorage would hand out — a page of the
// size asked, a reservation whose chunks sit at their offsets and can be
// written — taken from what was given back when the size matches, with
// every page, reservation and chunk out counted (a harness checks each
// input gives all back), and at most its bound kept.
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/testing/recycling_storage.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace taintpool {
namespace {

using testing::RecyclingStorage;

constexpr std::uint64_t kGranule = std::uint64_t{64} << 10;

TEST(RecyclingStorage, P1_AReservationGivenBackServesTheNextOfItsSizeWithChunksAtTheirOffsets) {
  RecyclingStorage storage(HostStorageOptions{256, true, kGranule});
  VirtualMemory* vm = storage.virtual_memory();
  ASSERT_EQ(vm, static_cast<VirtualMemory*>(&storage)) << "reservations are recycled here";
  EXPECT_EQ(vm->granularity(), kGranule);

  const StorageHandle first = vm->reserve(16 * kGranule);
  auto* base = static_cast<unsigned char*>(storage.resolve(first));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(base) % 256, 0u);
  const StorageHandle chunk = vm->map(first, 2 * kGranule, kGranule);
  EXPECT_EQ(storage.resolve(chunk), base + 2 * kGranule) << "HostStorage's chunk address";
  base[2 * kGranule] = 1; // the chunk is memory
  base[3 * kGranule - 1] = 2;
  EXPECT_EQ(storage.outstanding_reservations(), 1u);
  EXPECT_EQ(storage.outstanding_chunks(), 1u);
  vm->unmap(first, 2 * kGranule, kGranule, chunk);
  EXPECT_EQ(storage.outstanding_chunks(), 0u);
  vm->unreserve(first, 16 * kGranule);
  EXPECT_EQ(storage.outstanding_reservations(), 0u);
  EXPECT_EQ(storage.kept_reservations(), 1u);

  const StorageHandle other = vm->reserve(8 * kGranule); // another size: a fresh one
  EXPECT_NE(storage.resolve(other), static_cast<void*>(base));
  const StorageHandle again = vm->reserve(16 * kGranule); // its size: the kept one
  EXPECT_EQ(storage.resolve(again), static_cast<void*>(base));
  EXPECT_EQ(storage.kept_reservations(), 0u);
  EXPECT_EQ(storage.outstanding_reservations(), 2u);
  vm->unreserve(other, 8 * kGranule);
  vm->unreserve(again, 16 * kGranule);
  EXPECT_EQ(storage.kept_reservations(), 2u);
}

TEST(RecyclingStorage, P3_OffGranuleReservationsAndMapsAreRefusedAsHostStorageRefusesThem) {
  RecyclingStorage storage(HostStorageOptions{256, true, kGranule});
  EXPECT_THROW((void)storage.reserve(kGranule + 4096), std::invalid_argument);
  EXPECT_THROW((void)storage.reserve(0), StorageExhausted);
  const StorageHandle reservation = storage.reserve(4 * kGranule);
  EXPECT_THROW((void)storage.map(reservation, 4096, kGranule), std::invalid_argument);
  EXPECT_THROW((void)storage.map(reservation, 0, kGranule / 2), std::invalid_argument);
  EXPECT_EQ(storage.outstanding_chunks(), 0u) << "a refused map maps nothing";
  storage.unreserve(reservation, 4 * kGranule);
  EXPECT_THROW((void)storage.allocate(0), StorageExhausted);
  EXPECT_THROW(RecyclingStorage(HostStorageOptions{8192, true, kGranule}), std::invalid_argument);
}

TEST(RecyclingStorage, P1_WithoutVirtualMemoryOrByAlignmentOnlyPagesAreRecycled) {
  RecyclingStorage pages_only(HostStorageOptions{256, false, kGranule});
  EXPECT_EQ(pages_only.virtual_memory(), nullptr) << "as HostStorage with virtual memory off";
  RecyclingStorage by_alignment(256);
  EXPECT_NE(by_alignment.virtual_memory(), nullptr);
  EXPECT_NE(by_alignment.virtual_memory(), static_cast<VirtualMemory*>(&by_alignment))
      << "HostStorage's own virtual memory";

  const StorageHandle page = pages_only.allocate(10000);
  void* base = pages_only.resolve(page);
  static_cast<unsigned char*>(base)[9999] = 1;
  EXPECT_EQ(pages_only.outstanding(), 1u);
  pages_only.deallocate(page, 10000);
  EXPECT_EQ(pages_only.outstanding(), 0u);
  EXPECT_EQ(pages_only.resolve(pages_only.allocate(10000)), base) << "its size: the kept page";
  pages_only.deallocate(StorageHandle{reinterpret_cast<std::uint64_t>(base)}, 10000);
}

TEST(RecyclingStorage, P1_AtMostItsBoundIsKeptTheOldestUnmappedFirst) {
  RecyclingStorage storage(HostStorageOptions{256, true, kGranule});
  // One more reservation than the bound, each of its own size, all given back.
  std::vector<StorageHandle> out;
  const std::size_t count = RecyclingStorage::kMaxReservations + 1;
  for (std::size_t index = 0; index < count; ++index) {
    out.push_back(storage.reserve((index + 1) * kGranule));
  }
  for (std::size_t index = 0; index < count; ++index) {
    storage.unreserve(out[index], (index + 1) * kGranule);
  }
  EXPECT_EQ(storage.kept_reservations(), RecyclingStorage::kMaxReservations);
  // The newest is still kept; the oldest (1 granule) was unmapped.
  EXPECT_EQ(storage.resolve(storage.reserve(count * kGranule)), storage.resolve(out.back()));
  EXPECT_EQ(storage.kept_reservations(), RecyclingStorage::kMaxReservations - 1);
  const StorageHandle oldest = storage.reserve(kGranule);
  EXPECT_EQ(storage.kept_reservations(), RecyclingStorage::kMaxReservations - 1)
      << "none of its size was kept";
  storage.unreserve(oldest, kGranule);

  std::vector<StorageHandle> pages;
  for (std::size_t index = 0; index < RecyclingStorage::kMaxPages + 1; ++index) {
    pages.push_back(storage.allocate((index + 1) * 256));
  }
  for (std::size_t index = 0; index < pages.size(); ++index) {
    storage.deallocate(pages[index], (index + 1) * 256);
  }
  EXPECT_EQ(storage.kept_pages(), RecyclingStorage::kMaxPages);
  EXPECT_EQ(storage.outstanding(), 0u);
}

} // namespace
} // namespace taintpool
