// Pins P2 — live allocations never overlap, every one is aligned, usage
// figures are exact — and the pools' shapes: routing by the ladder, splits
// and merges in sliced pools, reuse within slack and ageing in the
// exclusive pool, fragmentation and the largest free block.
#include <taintpool/pool/counting_storage.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "pool_fixture.hpp"

namespace taintpool {
namespace {

using testing::PoolTest;

TEST_F(PoolTest, P2_LiveAllocationsNeverOverlapAndAreAlwaysAligned) {
  std::mt19937_64 random(42);
  std::vector<Allocation> live;
  for (int step = 0; step < 3000; ++step) {
    if (live.empty() || random() % 3 != 0) {
      const std::uint64_t size = random() % 4 == 0 ? random() % (300 << 10) : random() % 3000;
      live.push_back(memory->allocate(size));
    } else {
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(random() % live.size()));
    }
    if (step % 100 == 0) {
      memory->check_invariants();
    }
  }
  memory->sweep(); // the walk does not discover releases itself
  std::vector<AllocationInfo> infos;
  memory->for_each_allocation([&](const AllocationInfo& info) { infos.push_back(info); });
  ASSERT_EQ(infos.size(), live.size());
  std::sort(infos.begin(), infos.end(),
            [](const AllocationInfo& a, const AllocationInfo& b) { return a.data < b.data; });
  for (std::size_t index = 0; index < infos.size(); ++index) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(infos[index].data) % 256, 0u);
    EXPECT_GE(infos[index].extent, infos[index].size);
    if (index > 0) {
      EXPECT_LE(infos[index - 1].data + infos[index - 1].extent, infos[index].data)
          << "two live allocations overlap";
    }
  }
}

TEST_F(PoolTest, P2_UsageFiguresAreExact) {
  Allocation a = memory->allocate(100);   // extent 256: padding 156
  Allocation b = memory->allocate(256);   // extent 256: padding 0
  Allocation c = memory->allocate(0);     // extent 256: padding 256
  Allocation d = memory->allocate(20000); // exclusive: extent 20224
  const MemoryStats stats = memory->stats();
  EXPECT_EQ(stats.in_use, 100u + 256u + 0u + 20000u);
  EXPECT_EQ(stats.padding, 156u + 0u + 256u + 224u);
  EXPECT_EQ(stats.allocations, 4u);
  EXPECT_EQ(stats.reserved, (8u << 10) + 20224u) << "one small page and one exclusive page";
  EXPECT_EQ(stats.pages, 2u);
  EXPECT_EQ(stats.free(), stats.reserved - stats.in_use - stats.padding);
  EXPECT_EQ(stats.peak_in_use, stats.in_use);
  EXPECT_EQ(stats.peak_reserved, stats.reserved);

  d.reset();
  const MemoryStats later = memory->stats();
  EXPECT_EQ(later.in_use, 356u);
  EXPECT_EQ(later.peak_in_use, stats.in_use) << "peaks remember";
}

TEST_F(PoolTest, P2_TheLadderRoutesEachSizeToTheFirstPoolThatFitsIt) {
  auto pool_of = [&](std::uint64_t size) {
    Allocation allocation = memory->allocate(size);
    return memory->resolve(allocation.whole()).pool;
  };
  EXPECT_EQ(pool_of(0), 0u);
  EXPECT_EQ(pool_of(1024), 0u);
  EXPECT_EQ(pool_of(1025), 1u);
  EXPECT_EQ(pool_of(16 << 10), 1u);
  EXPECT_EQ(pool_of((16 << 10) + 1), 2u);
  EXPECT_EQ(pool_of(1 << 20), 2u);
}

TEST_F(PoolTest, P2_FreedNeighboursMergeSoAFullPageCanBeHandedOutWhole) {
  std::vector<Allocation> quarters;
  for (int index = 0; index < 8; ++index) {
    quarters.push_back(memory->allocate(1024)); // eight fill one 8 KiB page
  }
  EXPECT_EQ(memory->stats().pages, 1u);
  EXPECT_EQ(memory->stats().largest_free_block, 0u);
  // Free every other one: the free space is shattered.
  for (int index = 0; index < 8; index += 2) {
    quarters[static_cast<std::size_t>(index)].reset();
  }
  MemoryStats shattered = memory->stats();
  EXPECT_EQ(shattered.largest_free_block, 1024u);
  EXPECT_DOUBLE_EQ(shattered.fragmentation(), 0.75);
  // Free the rest: one free block again.
  quarters.clear();
  const MemoryStats merged = memory->stats();
  EXPECT_EQ(merged.largest_free_block, 8u << 10);
  EXPECT_DOUBLE_EQ(merged.fragmentation(), 0.0);
}

TEST_F(PoolTest, P2_TheExclusivePoolReusesAFreePageOnlyWithinItsSlack) {
  Allocation first = memory->allocate(64 << 10);
  const std::byte* page = memory->resolve(first.whole()).data;
  first.reset();
  // 1/8 slack: a 60 KiB request may reuse the 64 KiB page, a 40 KiB one may not.
  Allocation close = memory->allocate(60 << 10);
  EXPECT_EQ(memory->resolve(close.whole()).data, page);
  close.reset();
  Allocation far = memory->allocate(40 << 10);
  EXPECT_NE(memory->resolve(far.whole()).data, page);
  EXPECT_EQ(memory->stats().pages, 2u);
}

TEST_F(PoolTest, P2_AFreeExclusivePageIsGivenBackOnceItHasIdledLongEnough) {
  Allocation big = memory->allocate(200 << 10);
  big.reset();
  memory->sweep();
  EXPECT_EQ(memory->stats().pages, 1u) << "kept for reuse at first";
  // release_after = 4: four more exclusive reserves of another size age it out.
  for (int index = 0; index < 5; ++index) {
    Allocation other = memory->allocate(30 << 10);
  }
  const MemoryStats stats = memory->stats();
  EXPECT_LT(stats.reserved, 200u << 10) << "the idle 200 KiB page went back";
}

TEST(PoolConfig, P3_AConfigThatCannotWorkIsRefusedUpFront) {
  HostStorage host(256);
  ErrorGraph graph;
  MemoryConfig unaligned;
  unaligned.alignment = 300;
  EXPECT_THROW(MemoryManager(host, graph, unaligned), std::invalid_argument);
  MemoryConfig over;
  over.alignment = 512; // more than the storage guarantees
  EXPECT_THROW(MemoryManager(host, graph, over), std::invalid_argument);
  MemoryConfig inverted;
  inverted.sliced = {{1 << 20, 4096}, {1 << 20, 1024}};
  EXPECT_THROW(MemoryManager(host, graph, inverted), std::invalid_argument);
  MemoryConfig slice_above_page;
  slice_above_page.sliced = {{4096, 8192}};
  EXPECT_THROW(MemoryManager(host, graph, slice_above_page), std::invalid_argument);
}

TEST(PoolSteadyState, ASteadyWorkloadStopsAskingTheStorageForPages) {
  HostStorage host(256);
  CountingStorage counting(host);
  ErrorGraph graph;
  MemoryManager memory(counting, graph, testing::small_ladder());
  std::mt19937_64 random(7);
  auto churn = [&] {
    std::vector<Allocation> live;
    for (int step = 0; step < 2000; ++step) {
      live.push_back(memory.allocate(random() % 4096));
      if (live.size() > 50) {
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(random() % live.size()));
      }
    }
  };
  churn();
  const std::uint64_t warm = counting.counts().allocations;
  churn();
  EXPECT_LE(counting.counts().allocations, warm + 2)
      << "the same workload again reuses the pages it already has";
}

} // namespace
} // namespace taintpool
