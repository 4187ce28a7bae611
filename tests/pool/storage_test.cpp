// Pins the storage layer: HostStorage honours its alignment and refuses
// what it cannot give; the adaptors do exactly their one job —
// FaultInjectingStorage fails on schedule (and reproducibly), within a
// capacity, and never reaches the inner storage when it fails;
// CountingStorage counts.
#include <taintpool/pool/counting_storage.hpp>
#include <taintpool/pool/fault_injecting_storage.hpp>
#include <taintpool/pool/host_storage.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace taintpool {
namespace {

TEST(HostStorage, PagesAreAlignedAndUsable) {
  HostStorage storage(4096);
  const StorageHandle handle = storage.allocate(10000);
  auto* bytes = static_cast<unsigned char*>(storage.resolve(handle));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(bytes) % 4096, 0u);
  bytes[0] = 1;
  bytes[9999] = 2; // ASan: the whole page is ours
  storage.deallocate(handle, 10000);
}

TEST(HostStorage, P3_AnImpossiblePageIsStorageExhaustedNotACrash) {
  HostStorage storage;
  EXPECT_THROW((void)storage.allocate(0), StorageExhausted);
  EXPECT_THROW((void)storage.allocate(UINT64_MAX), StorageExhausted);
  EXPECT_THROW(HostStorage(3), std::invalid_argument);
}

TEST(FaultInjectingStorage, FailsTheNextRequestsThenPassesThrough) {
  HostStorage host;
  CountingStorage counting(host);
  FaultInjectingStorage faulty(counting);
  faulty.fail_next(2);
  EXPECT_THROW((void)faulty.allocate(256), StorageExhausted);
  EXPECT_THROW((void)faulty.allocate(256), StorageExhausted);
  EXPECT_EQ(counting.counts().allocations, 0u)
      << "a failed request never reaches the inner storage";
  const StorageHandle handle = faulty.allocate(256);
  EXPECT_EQ(faulty.injected_failures(), 2u);
  EXPECT_EQ(faulty.live_bytes(), 256u);
  faulty.deallocate(handle, 256);
  EXPECT_EQ(faulty.live_bytes(), 0u);
  EXPECT_EQ(counting.counts().deallocations, 1u);
}

TEST(FaultInjectingStorage, ARandomScheduleIsReproducibleFromItsSeed) {
  HostStorage host;
  auto schedule = [&](std::uint64_t seed) {
    FaultInjectingStorage faulty(host);
    faulty.fail_randomly(seed, 3);
    std::vector<bool> failed;
    for (int request = 0; request < 64; ++request) {
      try {
        faulty.deallocate(faulty.allocate(256), 256);
        failed.push_back(false);
      } catch (const StorageExhausted&) {
        failed.push_back(true);
      }
    }
    return failed;
  };
  const std::vector<bool> first = schedule(11);
  EXPECT_EQ(first, schedule(11));
  EXPECT_NE(first, schedule(12));
  EXPECT_NE(std::count(first.begin(), first.end(), true), 0);
  EXPECT_NE(std::count(first.begin(), first.end(), false), 0);
}

TEST(FaultInjectingStorage, ACapacityLimitRefusesWhatWouldNotFit) {
  HostStorage host;
  FaultInjectingStorage faulty(host);
  faulty.limit_capacity(1000);
  const StorageHandle a = faulty.allocate(600);
  EXPECT_THROW((void)faulty.allocate(600), StorageExhausted);
  const StorageHandle b = faulty.allocate(400);
  faulty.deallocate(a, 600);
  faulty.deallocate(b, 400);
  faulty.limit_capacity(std::nullopt);
  faulty.deallocate(faulty.allocate(4000), 4000);
}

TEST(CountingStorage, CountsRequestsBytesAndPeaks) {
  HostStorage host;
  FaultInjectingStorage faulty(host);
  CountingStorage counting(faulty);
  const StorageHandle a = counting.allocate(1000);
  const StorageHandle b = counting.allocate(500);
  counting.deallocate(a, 1000);
  faulty.fail_next(1);
  EXPECT_THROW((void)counting.allocate(10), StorageExhausted);
  const StorageCounts& counts = counting.counts();
  EXPECT_EQ(counts.allocations, 2u);
  EXPECT_EQ(counts.deallocations, 1u);
  EXPECT_EQ(counts.failures, 1u);
  EXPECT_EQ(counts.live_bytes, 500u);
  EXPECT_EQ(counts.peak_bytes, 1500u);
  counting.deallocate(b, 500);
}

} // namespace
} // namespace taintpool
