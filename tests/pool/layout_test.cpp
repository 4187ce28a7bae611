// Pins P2 — live allocations never overlap, every one is aligned, usage
// figures are exact — and the pools' shapes: routing by the ladder, splits
// and merges in sliced pools, the arena's best fit, growth by mapping (or by
// pages without virtual memory) and give-back, fragmentation and the
// largest free block.
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
  Allocation d = memory->allocate(20000); // the arena: extent 20224
  const MemoryStats stats = memory->stats();
  EXPECT_EQ(stats.in_use, 100u + 256u + 0u + 20000u);
  EXPECT_EQ(stats.padding, 156u + 0u + 256u + 224u);
  EXPECT_EQ(stats.allocations, 4u);
  EXPECT_EQ(stats.reserved, (8u << 10) + (64u << 10))
      << "one small page and the arena's first 64 KiB chunk";
  EXPECT_EQ(stats.pages, 2u);
  EXPECT_EQ(stats.largest_free_block, (64u << 10) - 20224u) << "the chunk's free tail";
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

TEST_F(PoolTest, P2_AnExtentJustReleasedIsServedAgainFromTheNewestParkedSliceOfThatExtent) {
  // Ten slices of distinct extents and one more of the fourth's extent, in
  // the 64 KiB-page pool, each walled in by a live spacer so none merges
  // with a neighbour. Released one by one (sweep() after each, so they are
  // parked in this order): the recent list keeps the newest eight, so the
  // first three are merged away and the list has wrapped around its slots.
  const std::vector<std::uint64_t> sizes = {2048, 2304, 2560, 2816, 3072, 3328,
                                            3584, 3840, 4096, 4352, 2816};
  std::vector<Allocation> parked;
  std::vector<Allocation> spacers;
  std::vector<std::byte*> address;
  for (const std::uint64_t size : sizes) {
    parked.push_back(memory->allocate(size));
    address.push_back(memory->resolve(parked.back().whole()).data);
    spacers.push_back(memory->allocate(1280));
  }
  ASSERT_EQ(memory->stats().pages, 1u) << "all on one page of the 64 KiB-page pool";
  for (Allocation& allocation : parked) {
    allocation.reset();
    memory->sweep();
  }
  memory->check_invariants();
  auto served_at = [&](std::uint64_t size) {
    parked.push_back(memory->allocate(size));
    return memory->resolve(parked.back().whole()).data;
  };
  // Two parked slices of 2816 bytes: the newer one first, then the other.
  EXPECT_EQ(served_at(2816), address[10]);
  // One from the middle of the list; the rest stay where they were parked.
  EXPECT_EQ(served_at(3584), address[6]);
  EXPECT_EQ(served_at(2816), address[3]);
  for (const std::size_t index : {9u, 4u, 8u, 5u, 7u}) {
    EXPECT_EQ(served_at(sizes[index]), address[index]) << "size " << sizes[index];
  }
  memory->check_invariants();
}

TEST(PoolRecentList, P2_OnlyAParkedSliceOfExactlyTheRequestedExtentIsServedFromTheRecentList) {
  // The recent list rules a request out by a 7-bit tag of its extent
  // before it compares extents (pools.hpp, take_recent), so two extents may
  // share a tag. Eight slices parked, walled in by live spacers; then one
  // request of every other extent from 256 bytes to 64 KiB, all kept live:
  // 248 extents over 128 tags, so some share a tag with a parked extent
  // (with this hash, 12 do, and two parked extents share one), and none may
  // be served a parked slice. Then each parked extent, whatever slot it
  // sits in, is served its own parked slice. One 16 MiB page holds it all,
  // so no request finds the pool full (which would merge the parked slices
  // away).
  HostStorage host;
  ErrorGraph graph;
  MemoryConfig config;
  config.sliced = {{std::uint64_t{16} << 20, std::uint64_t{64} << 10}};
  MemoryManager memory(host, graph, config);
  const std::vector<std::uint64_t> parked_sizes = {3 * 256,   17 * 256,  40 * 256,  77 * 256,
                                                   101 * 256, 150 * 256, 199 * 256, 250 * 256};
  std::vector<Allocation> parked;
  std::vector<Allocation> kept;
  std::vector<std::byte*> parked_at;
  for (const std::uint64_t size : parked_sizes) {
    parked.push_back(memory.allocate(size));
    parked_at.push_back(memory.resolve(parked.back().whole()).data);
    kept.push_back(memory.allocate(256)); // the wall
  }
  for (Allocation& allocation : parked) {
    allocation.reset();
    memory.sweep();
  }
  memory.check_invariants();
  for (std::uint64_t size = 256; size <= (std::uint64_t{64} << 10); size += 256) {
    if (std::find(parked_sizes.begin(), parked_sizes.end(), size) != parked_sizes.end()) {
      continue;
    }
    kept.push_back(memory.allocate(size));
    std::byte* const at = memory.resolve(kept.back().whole()).data;
    EXPECT_EQ(std::find(parked_at.begin(), parked_at.end(), at), parked_at.end())
        << "a request of " << size << " bytes was served a parked slice of another extent";
  }
  memory.check_invariants();
  ASSERT_EQ(memory.stats().pages, 1u) << "the pool never grew, so nothing merged the parked slices";
  // Oldest first, then the rest, so matches are found in every slot.
  for (const std::size_t index : {0u, 7u, 3u, 1u, 6u, 2u, 5u, 4u}) {
    kept.push_back(memory.allocate(parked_sizes[index]));
    EXPECT_EQ(memory.resolve(kept.back().whole()).data, parked_at[index])
        << "size " << parked_sizes[index];
    memory.check_invariants();
  }
}

TEST_F(PoolTest, P2_TheArenaParksOnlyTheNewestFreedSliceAndMergesTheOneFreedBeforeIt) {
  // The arena, a best-fit pool, keeps one freed slice unmerged for a
  // request of exactly its extent (pools.hpp, SlicedPool); a release that
  // finds one parked merges it and parks itself in its place. Twelve rounds,
  // more than the good-fit pools' ring has slots: each frees two arena
  // buffers walled in by live ones. The second is served back to a request
  // of its extent; the first was merged into free space, where the best
  // fit finds it (its hole fits exactly); and the recent list's every slot
  // matches its slice (check_invariants compares extents and tags).
  std::vector<Allocation> kept;
  const auto data = [&](const Allocation& allocation) {
    return memory->resolve(allocation.whole()).data;
  };
  for (int round = 0; round < 12; ++round) {
    Allocation first = memory->allocate(40 << 10);
    kept.push_back(memory->allocate(20 << 10)); // the walls
    Allocation second = memory->allocate(60 << 10);
    kept.push_back(memory->allocate(20 << 10));
    const std::byte* const first_at = data(first);
    const std::byte* const second_at = data(second);
    first.reset();
    memory->sweep(); // parked
    second.reset();
    memory->sweep(); // parked in its place; the first merged
    memory->check_invariants();
    kept.push_back(memory->allocate(60 << 10));
    EXPECT_EQ(data(kept.back()), second_at) << "round " << round << ": the parked slice";
    kept.push_back(memory->allocate(40 << 10));
    EXPECT_EQ(data(kept.back()), first_at) << "round " << round << ": the merged hole";
    memory->check_invariants();
  }
}

/// The arena's address of an allocation, as an offset from `base`.
std::uint64_t offset_of(MemoryManager& memory, const Allocation& allocation,
                        const std::byte* base) {
  return static_cast<std::uint64_t>(memory.resolve(allocation.whole()).data - base);
}

TEST_F(PoolTest, P2_TheArenaServesARequestFromTheSmallestFreeRangeThatFitsIt) {
  // Six 100 KiB buffers back to back; free the second (hole A, 100 KiB) and
  // the fourth and fifth (hole B, 200 KiB): the sixth keeps B closed in.
  std::vector<Allocation> run;
  for (int index = 0; index < 6; ++index) {
    run.push_back(memory->allocate(100 << 10));
  }
  const std::byte* base = memory->resolve(run[0].whole()).data;
  run[1].reset();                                // hole A: 100 KiB at 100 KiB
  run[3].reset();                                // hole B: 200 KiB at 300 KiB,
  run[4].reset();                                //   closed in by run[5]
  Allocation small = memory->allocate(90 << 10); // best fit: hole A
  EXPECT_EQ(offset_of(*memory, small, base), 100u << 10);
  Allocation large = memory->allocate(150 << 10); // only hole B fits
  EXPECT_EQ(offset_of(*memory, large, base), 300u << 10);
  Allocation exact = memory->allocate(50 << 10); // hole B's rest (50 KiB) fits exactly
  EXPECT_EQ(offset_of(*memory, exact, base), 450u << 10);
}

TEST_F(PoolTest, P2_TheArenaGrowsByMappingTheNextBytesOfItsReservation) {
  CountingStorage counting(host);
  ErrorGraph own_graph;
  MemoryManager arena(counting, own_graph, testing::small_ladder());
  Allocation first = arena.allocate(100 << 10); // maps 128 KiB (two 64 KiB granules)
  const std::byte* base = arena.resolve(first.whole()).data;
  EXPECT_EQ(counting.counts().reserves, 1u);
  EXPECT_EQ(counting.counts().maps, 1u);
  EXPECT_EQ(arena.stats().reserved, 128u << 10);
  Allocation second = arena.allocate(100 << 10); // 28 KiB left: map 128 KiB more after it
  EXPECT_EQ(counting.counts().maps, 2u);
  EXPECT_EQ(arena.resolve(second.whole()).data, base + (100 << 10))
      << "the new bytes merge with the free tail, so the buffer starts right after the first";
  EXPECT_EQ(arena.stats().reserved, 256u << 10);
  EXPECT_EQ(arena.stats().pages, 2u) << "two mapped chunks";
  EXPECT_EQ(counting.counts().reserves, 1u) << "one reservation holds them both";
}

TEST_F(PoolTest, P2_AWarmArenaServesTheSameMixAgainWithoutAStorageCall) {
  CountingStorage counting(host);
  ErrorGraph own_graph;
  MemoryManager arena(counting, own_graph, testing::small_ladder());
  std::mt19937_64 random(11);
  std::vector<std::uint64_t> sizes;
  for (int index = 0; index < 40; ++index) {
    sizes.push_back((16u << 10) + random() % (200u << 10));
  }
  auto step = [&] {
    std::vector<Allocation> live;
    for (std::size_t index = 0; index < sizes.size(); ++index) {
      live.push_back(arena.allocate(sizes[index]));
      if (index % 3 == 2) {
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(index % live.size()));
      }
    }
  };
  step();
  const std::uint64_t calls = counting.counts().calls();
  for (int again = 0; again < 5; ++again) {
    step();
  }
  EXPECT_EQ(counting.counts().calls(), calls) << "the arena already holds what the mix needs";
  arena.check_invariants();
}

TEST_F(PoolTest, P2_CleanupUnmapsTheArenaChunksThatLieWhollyInFreeSpace) {
  Allocation first = memory->allocate(100 << 10);  // chunk 1: 128 KiB
  Allocation second = memory->allocate(100 << 10); // chunk 2: 128 KiB
  EXPECT_EQ(memory->stats().pages, 2u);
  second.reset();
  memory->cleanup();
  MemoryStats stats = memory->stats();
  EXPECT_EQ(stats.pages, 1u) << "chunk 2 held only free space and went back";
  EXPECT_EQ(stats.reserved, 128u << 10);
  memory->check_invariants();
  first.reset();
  memory->cleanup();
  stats = memory->stats();
  EXPECT_EQ(stats.reserved, 0u);
  EXPECT_EQ(stats.pages, 0u);
  EXPECT_EQ(storage.live_bytes(), 0u);
  Allocation again = memory->allocate(100 << 10); // and it can grow again
  EXPECT_EQ(memory->stats().reserved, 128u << 10);
}

TEST(PoolArenaWithoutVirtualMemory, P2_TheArenaGrowsByPagesAndStillFitsBest) {
  HostStorage pages(testing::small_granules(false));
  ASSERT_EQ(pages.virtual_memory(), nullptr);
  CountingStorage counting(pages);
  ErrorGraph graph;
  MemoryManager memory(counting, graph, testing::small_ladder());
  Allocation a = memory.allocate(100 << 10); // a page of max(100 KiB, 64 KiB min growth)
  Allocation b = memory.allocate(30 << 10);  // does not fit the first page: a second
  EXPECT_EQ(counting.counts().allocations, 2u);
  EXPECT_EQ(counting.counts().maps, 0u);
  EXPECT_EQ(memory.stats().reserved, (100u << 10) + (64u << 10));
  Allocation c = memory.allocate(30 << 10); // fits the second page's rest
  EXPECT_EQ(counting.counts().allocations, 2u);
  a.reset();
  memory.cleanup();
  EXPECT_EQ(memory.stats().reserved, 64u << 10) << "the free page went back";
  memory.check_invariants();
}

// The default configuration, as users get it: 2 MiB granules, a 2 MiB
// minimum step, 1/64 of what the arena holds, and the young arena's ramp.
TEST(PoolArenaGrowth, P2_AYoungArenaAtLeastDoublesUpToSixteenMiBAStep) {
  HostStorage host; // 2 MiB granules, virtual memory
  CountingStorage counting(host);
  ErrorGraph graph;
  MemoryManager memory(counting, graph);
  std::vector<Allocation> live;
  std::vector<std::uint64_t> reserved_after_each_map;
  while (memory.stats().reserved < (std::uint64_t{128} << 20)) {
    const std::uint64_t maps = counting.counts().maps;
    live.push_back(memory.allocate(std::uint64_t{1} << 20)); // arena: above 64 KiB
    if (counting.counts().maps != maps) {
      reserved_after_each_map.push_back(memory.stats().reserved >> 20);
    }
  }
  const std::vector<std::uint64_t> expected = {2, 4, 8, 16, 32, 48, 64, 80, 96, 112, 128};
  EXPECT_EQ(reserved_after_each_map, expected)
      << "2 MiB steps would take 64 maps to reach 128 MiB; the ramp takes 11";
  EXPECT_EQ(memory.stats().in_use, live.size() << 20);
  memory.check_invariants();
}

TEST(PoolArenaGrowth, P2_PastTheRampAnArenaGrowsByOneSixtyFourthOfWhatItHolds) {
  HostStorage host;
  CountingStorage counting(host);
  ErrorGraph graph;
  MemoryManager memory(counting, graph);
  // 1.5 GiB at once: one map of exactly that (the request is the need).
  Allocation big = memory.allocate(std::uint64_t{1536} << 20);
  EXPECT_EQ(memory.stats().reserved, std::uint64_t{1536} << 20);
  // Then a 1 MiB buffer: the step is 1536 / 64 = 24 MiB, above the ramp's 16.
  Allocation small = memory.allocate(std::uint64_t{1} << 20);
  EXPECT_EQ(counting.counts().maps, 2u);
  EXPECT_EQ(memory.stats().reserved, std::uint64_t{1560} << 20);
  memory.check_invariants();
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
  // Issue 13, defect 4: equal max slices are not strictly ascending, even 0.
  MemoryConfig equal;
  equal.sliced = {{4096, 1024}, {8192, 1024}};
  EXPECT_THROW(MemoryManager(host, graph, equal), std::invalid_argument);
  MemoryConfig equal_zero;
  equal_zero.sliced = {{4096, 0}, {8192, 0}};
  EXPECT_THROW(MemoryManager(host, graph, equal_zero), std::invalid_argument);
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

// The allocation table finds every binding's slice (P3: a gone allocation
// is a clear error, never a stray slice), also when long-lived consecutive
// ids sit in the table while short-lived ones wrap it around them.
TEST_F(PoolTest, P3_LongLivedConsecutiveAllocationsAndChurnAroundThemAllStayFindable) {
  // A model's weights (consecutive ids, kept) and a stream of short-lived
  // allocations whose ids wrap the table around them.
  std::vector<Allocation> weights;
  for (int at = 0; at < 3000; ++at) {
    weights.push_back(memory->allocate(64));
  }
  std::mt19937_64 random(7);
  std::vector<Allocation> temporaries;
  for (int step = 0; step < 40000; ++step) {
    if (temporaries.empty() || random() % 100 < 55) {
      temporaries.push_back(memory->allocate(1 + random() % 512));
    } else {
      const std::size_t victim = random() % temporaries.size();
      std::swap(temporaries[victim], temporaries.back());
      const AllocationId gone = temporaries.back().id();
      temporaries.pop_back();
      ASSERT_FALSE(memory->contains(gone)) << "a dropped allocation is found";
    }
    if (step % 5000 == 0) {
      memory->check_invariants();
    }
  }
  for (const Allocation& weight : weights) {
    ASSERT_TRUE(memory->contains(weight.id()));
    ASSERT_EQ(memory->resolve(weight.whole()).size, 64u);
  }
  for (const Allocation& temporary : temporaries) {
    ASSERT_TRUE(memory->contains(temporary.id()));
  }
  memory->check_invariants();
}

} // namespace
} // namespace taintpool
