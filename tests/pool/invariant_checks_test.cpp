// Pins: MemoryManager::check_invariants (P1, P2) — through the pools' and
// the size bins' own checks — catches every corruption it names; and the
// configuration checks, accessors and figures no other pool suite reaches.
//
// Why: pool_fuzzer, the stateful pool tests and every PoolTest's TearDown
// trust check_invariants() to turn a broken layout into a failure; a check
// that can never fire would let them pass over a pool that hands out
// overlapping memory. The public API cannot build a broken layout, so the
// corruption tests are white-box: they reach a live allocation's Slice (a
// public detail record, pool/detail/slice.hpp) through the address of its
// Taint, change one field, expect the named violation, and put the field
// back before TearDown checks the pool again.
#include <taintpool/byte_range.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/exception.hpp>
#include <taintpool/pool/detail/slice.hpp>
#include <taintpool/pool/fault_injecting_storage.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_config.hpp>
#include <taintpool/pool/memory_manager.hpp>
#include <taintpool/pool/memory_stats.hpp>
#include <taintpool/pool/storage.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "pool_fixture.hpp"

namespace taintpool::testing {
namespace {

using detail::Page;
using detail::Slice;
using detail::SliceState;

static_assert(std::is_standard_layout_v<Slice>);

struct PoolChecks : PoolTest {
  /// The record holding a live allocation, found through its taint.
  Slice& slice_of(const Allocation& allocation) {
    Taint* taint = memory->resolve(allocation.whole()).taint;
    return *reinterpret_cast<Slice*>(reinterpret_cast<char*>(taint) - offsetof(Slice, taint));
  }

  void expect_violation(const std::string& words) {
    try {
      memory->check_invariants();
      ADD_FAILURE() << "check_invariants() accepted a pool whose " << words;
    } catch (const std::logic_error& error) {
      EXPECT_NE(std::string(error.what()).find(words), std::string::npos) << error.what();
    }
  }

  /// Sets `field` to `bad`, expects the violation, puts it back (TearDown
  /// checks the pool again).
  template <class T, class U>
  void corrupt(T& field, U bad, const std::string& words) {
    const T good = field;
    field = static_cast<T>(bad);
    expect_violation(words);
    field = good;
  }

  /// The free remainder of the page holding `slice`.
  static Slice& free_neighbour(const Slice& slice) {
    for (Slice* other = slice.page->first; other != nullptr; other = other->page_next) {
      if (other->state == SliceState::Free) {
        return *other;
      }
    }
    ADD_FAILURE() << "no free slice on the page";
    return *slice.page->first;
  }

  /// Eight 1 KiB allocations: one 8 KiB page of the first pool, exactly.
  std::vector<Allocation> fill_one_page() {
    std::vector<Allocation> held;
    for (int i = 0; i < 8; ++i) {
      held.push_back(memory->allocate(1024));
    }
    return held;
  }

  /// The page's last slice.
  static Slice& last_on_page(const Slice& slice) {
    Slice* last = slice.page->first;
    while (last->page_next != nullptr) {
      last = last->page_next;
    }
    return *last;
  }
};

// ------------------------------------------------------------ pages and slices (P2)

TEST_F(PoolChecks, P4_APageFiledUnderAnotherLaneIsCaught) {
  const Allocation a = memory->allocate(256, 3);
  corrupt(slice_of(a).page->lane, 4, "the page list is not linked both ways to its pool and lane");
}

TEST_F(PoolChecks, P2_APageNotLinkedToItsPoolIsCaught) {
  const Allocation a = memory->allocate(256);
  corrupt(slice_of(a).page->pool, nullptr,
          "the page list is not linked both ways to its pool and lane");
}

TEST_F(PoolChecks, P2_ASliceNotLinkedToItsNeighboursIsCaught) {
  const Allocation a = memory->allocate(256);
  Slice& slice = slice_of(a);
  corrupt(slice.page_prev, &slice, "a slice is not linked to its page and neighbours");
}

TEST_F(PoolChecks, P2_SlicesThatDoNotTileTheirPageAreCaught) {
  const Allocation a = memory->allocate(256);
  corrupt(slice_of(a).offset, 256,
          "slices do not tile their page: a slice at offset 256 where 0 was expected");
}

TEST_F(PoolChecks, P2_AnExtentThatIsNotAPositiveMultipleOfTheAlignmentIsCaught) {
  const Allocation a = memory->allocate(256);
  corrupt(slice_of(a).extent, 100, "extent 100 is not a positive multiple of the alignment 256");
}

TEST_F(PoolChecks, P2_ASliceRunningPastItsPageIsCaught) {
  const Allocation a = memory->allocate(256);
  Slice& slice = slice_of(a);
  corrupt(slice.extent, slice.page->size + 256, "a slice runs past its page");
}

TEST_F(PoolChecks, P2_SlicesCoveringLessThanTheirPageAreCaught) {
  const std::vector<Allocation> held = fill_one_page();
  Slice& last = last_on_page(slice_of(held.front()));
  ASSERT_EQ(last.state, SliceState::Bound);
  ASSERT_EQ(last.offset + last.extent, last.page->size);
  last.size -= 256; // Still within its (shrunk) slice: only the page's tiling is off.
  corrupt(last.extent, last.extent - 256, "slices cover 7936 bytes of a 8192-byte page");
  last.size += 256;
}

TEST_F(PoolChecks, P2_AnAllocationLargerThanItsSliceIsCaught) {
  const Allocation a = memory->allocate(256);
  corrupt(slice_of(a).size, 512, "an allocation is larger than its slice");
}

TEST_F(PoolChecks, P2_AnAllocationOffTheAlignmentIsCaught) {
  const Allocation a = memory->allocate(256);
  Page& page = *slice_of(a).page;
  corrupt(page.base, page.base + 8, "an allocation is not aligned to 256");
}

TEST_F(PoolChecks, P1_ATombstonedSliceStillOnALivePageIsCaught) {
  const Allocation a = memory->allocate(256);
  corrupt(slice_of(a).state, SliceState::Tombstoned, "a tombstoned slice is still on a live page");
}

TEST_F(PoolChecks, P1_AFreeSliceThatStillCarriesTaintIsCaught) {
  const Allocation a = memory->allocate(256);
  Slice& rest = free_neighbour(slice_of(a));
  const FailureId failure = fail();
  rest.taint.taint(ByteRange::of(0, 8), failure, graph);
  expect_violation("a free or unmapped slice still carries taint (P1)");
  rest.taint.clear(graph);
  EXPECT_FALSE(graph.contains(failure)) << "the test's tag was its only hold";
}

TEST_F(PoolChecks, P1_AFreeSliceThatNamesAnAllocationIsCaught) {
  const Allocation a = memory->allocate(256);
  corrupt(free_neighbour(slice_of(a)).allocation, 99,
          "a free or unmapped slice names an allocation");
}

TEST_F(PoolChecks, P2_FreeSlicesOnPagesThatTheFreeIndexDoesNotHoldAreCaught) {
  const Allocation a = memory->allocate(256);
  Slice& slice = slice_of(a);
  const std::uint64_t id = slice.allocation;
  slice.allocation = 0;
  corrupt(slice.state, SliceState::Free, "2 free slices on pages but 1 in the free index");
  slice.allocation = id;
}

// ------------------------------------------------------------ the sliced pool

TEST_F(PoolChecks, P2_ASlicedPageOfTheWrongSizeIsCaught) {
  const std::vector<Allocation> held = fill_one_page();
  Slice& last = last_on_page(slice_of(held.front()));
  last.extent += 256;       // The page still tiles, at a size its pool never asks for,
  last.page->mapped += 256; // and counts all of itself as held.
  corrupt(last.page->size, last.page->size + 256, "a sliced page of the wrong size");
  last.page->mapped -= 256;
  last.extent -= 256;
}

TEST_F(PoolChecks, P2_ASliceMarkedRecentButNotParkedIsCaught) {
  const Allocation a = memory->allocate(256);
  Slice& slice = slice_of(a);
  const std::uint64_t id = slice.allocation;
  slice.allocation = 0;
  corrupt(slice.state, SliceState::Recent,
          "a slice is marked recent but is not on the recent list");
  slice.allocation = id;
}

TEST_F(PoolChecks, P2_AParkedSliceNoLongerMarkedRecentIsCaught) {
  const Allocation keep = memory->allocate(256);
  Allocation dropped = memory->allocate(256);
  Slice& parked = slice_of(dropped);
  dropped.reset();
  memory->sweep();
  ASSERT_EQ(parked.state, SliceState::Recent) << "a released slice is parked unmerged";
  corrupt(parked.state, SliceState::Bound,
          "the recent list holds 1 slices but 0 are marked recent");
}

TEST_F(PoolChecks, P2_ARecentListExtentThatNoLongerMatchesItsParkedSliceIsCaught) {
  // [dropped 256][keep 1024][free]: the parked slice grows by 256 bytes into
  // its neighbour's first bytes, and the neighbour shrinks to match, so the
  // page still tiles and every slice is still aligned and within its
  // extent; only the recent list's copy of the extent is now stale.
  Allocation dropped = memory->allocate(256);
  const Allocation keep = memory->allocate(1024);
  Slice& parked = slice_of(dropped);
  Slice& neighbour = slice_of(keep);
  ASSERT_EQ(parked.page_next, &neighbour);
  dropped.reset();
  memory->sweep();
  ASSERT_EQ(parked.state, SliceState::Recent) << "a released slice is parked unmerged";
  parked.extent += 256;
  neighbour.offset += 256;
  neighbour.extent -= 256;
  neighbour.size -= 256;
  expect_violation("the recent list's extent of slot");
  neighbour.size += 256;
  neighbour.extent += 256;
  neighbour.offset -= 256;
  parked.extent -= 256;
}

// ------------------------------------------------------------ the arena

TEST_F(PoolChecks, P2_AnArenaChunkThatNoLongerCoversItsSlicesIsCaught) {
  const Allocation big = memory->allocate(100 << 10); // one 128 KiB chunk
  Page& page = *slice_of(big).page;
  ASSERT_TRUE(page.reservation);
  ASSERT_EQ(page.chunks.size(), 1u);
  corrupt(page.chunks[0].size, 64u << 10, "a reservation's chunks add up to 65536 bytes");
  page.mapped -= 64 << 10;
  corrupt(page.chunks[0].size, 64u << 10, "have no memory mapped behind them");
  page.mapped += 64 << 10;
}

TEST_F(PoolChecks, P2_AChunkReachingIntoUnmappedAddressSpaceIsCaught) {
  const Allocation big = memory->allocate(100 << 10); // 128 KiB mapped, then unmapped
  Page& page = *slice_of(big).page;
  ASSERT_EQ(last_on_page(slice_of(big)).state, SliceState::Unmapped);
  page.mapped += 64 << 10;
  corrupt(page.chunks[0].size, page.chunks[0].size + (64 << 10),
          "a mapped chunk overlaps an unmapped slice");
  page.mapped -= 64 << 10;
}

TEST_F(PoolChecks, P2_AnUnmappedSliceOnAPageOfMemoryIsCaught) {
  const Allocation big = memory->allocate(100 << 10);
  Page& page = *slice_of(big).page;
  const std::uint64_t mapped = page.mapped;
  page.mapped = page.size; // a page of memory counts all of itself
  corrupt(page.reservation, false, "an unmapped slice on a page of memory");
  page.mapped = mapped;
}

TEST_F(PoolChecks, P2_AnUnmappedRangeGrowthCannotSeeIsCaught) {
  const Allocation big = memory->allocate(100 << 10); // 128 KiB mapped, the rest unmapped
  Slice& bound = slice_of(big);
  Page& page = *bound.page;
  Slice& tail = last_on_page(bound);
  ASSERT_EQ(tail.state, SliceState::Unmapped);
  ASSERT_EQ(page.unmapped, &tail) << "growth finds the unmapped tail through the list";
  corrupt(page.unmapped, static_cast<Slice*>(nullptr),
          "is not in its page's unmapped list in address order");
  corrupt(tail.bin_next, &bound, "a page's unmapped list names a slice that is not unmapped");
}

// ------------------------------------------------------------ the size bins

TEST_F(PoolChecks, P2_AFiledSliceThatIsNotFreeIsCaught) {
  const Allocation a = memory->allocate(256);
  corrupt(free_neighbour(slice_of(a)).state, SliceState::Bound,
          "size bins: a filed slice is not free");
}

TEST_F(PoolChecks, P2_ASliceFiledInTheWrongBinIsCaught) {
  const Allocation a = memory->allocate(256);
  Slice& rest = free_neighbour(slice_of(a));
  corrupt(rest.bin, rest.bin + 1, "is filed in the wrong bin");
}

TEST_F(PoolChecks, P2_ABrokenBackLinkInABinIsCaught) {
  const Allocation a = memory->allocate(256);
  Slice& rest = free_neighbour(slice_of(a));
  corrupt(rest.bin_prev, &rest, "size bins: broken back link in bin");
}

// ------------------------------------------------------------ the manager

TEST_F(PoolChecks, P2_AnAllocationWhoseSliceIsBoundToAnotherIsCaught) {
  const Allocation a = memory->allocate(256);
  corrupt(slice_of(a).allocation, 12345, "points at a slice not bound to it");
}

TEST_F(PoolChecks, P2_UsageFiguresThatDriftedFromTheSlicesAreCaught) {
  const Allocation a = memory->allocate(256);
  corrupt(slice_of(a).size, 128, "usage figures drifted (P2)");
}

TEST_F(PoolChecks, P1_ATombstonedSliceThatCarriesTaintIsCaught) {
  Allocation survivor = memory->allocate(256);
  Slice& slice = slice_of(survivor);
  memory->reset(); // The handle lives on; its slice is tombstoned.
  ASSERT_EQ(slice.state, SliceState::Tombstoned);
  const FailureId failure = fail();
  slice.taint.taint(ByteRange::of(0, 8), failure, graph);
  expect_violation("a tombstoned slice is still on a page, carries taint, or is mislinked (P1)");
  slice.taint.clear(graph);
  EXPECT_NO_THROW(memory->check_invariants());
}

// ------------------------------------------------------------ configuration (P3)

void expect_rejected(const MemoryConfig& config, const std::string& words) {
  try {
    config.validate(256);
    ADD_FAILURE() << "validate() accepted a config whose " << words;
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find(words), std::string::npos) << error.what();
  }
}

TEST(MemoryConfigChecks, P3_EachInconsistencyIsRejectedByName) {
  MemoryConfig config = small_ladder();
  EXPECT_NO_THROW(config.validate(256));

  MemoryConfig bad = config;
  bad.sliced[0].page_size = 1000;
  expect_rejected(bad, "page size 1000 is not a positive multiple of the alignment");
  bad = config;
  bad.sliced[0].page_size = 0;
  expect_rejected(bad, "page size 0 is not a positive multiple of the alignment");
  bad = config;
  bad.sliced[0].max_slice = bad.sliced[0].page_size + 256;
  expect_rejected(bad, "exceeds its page size");
  bad = config;
  bad.sliced = {config.sliced[1], config.sliced[0]};
  expect_rejected(bad, "not in strictly ascending order of max slice");
  bad = config;
  bad.max_allocation = 1024;
  expect_rejected(bad, "max allocation is below the largest sliced pool's max slice");
  bad = config;
  bad.max_allocation = (std::numeric_limits<std::uint64_t>::max() >> 1) + 1;
  expect_rejected(bad, "max allocation 9223372036854775808 is not below 2^63, so it cannot be "
                       "aligned without overflow");
  bad = config;
  bad.sliced[1].max_slice = bad.sliced[0].max_slice;
  expect_rejected(bad, "not in strictly ascending order of max slice (1024 after 1024)");
  bad = config;
  bad.arena_address_space = 0;
  expect_rejected(bad, "arena address space 0 is not positive");
  bad = config;
  bad.arena_min_growth = 1000;
  expect_rejected(bad, "arena min growth 1000 is not a positive multiple of the alignment");
  bad = config;
  bad.arena_min_growth = 0;
  expect_rejected(bad, "arena min growth 0 is not a positive multiple of the alignment");
  bad = config;
  bad.arena_ramp_growth = 1000;
  expect_rejected(bad, "arena ramp growth 1000 is not a multiple of the alignment");
  bad = config;
  bad.alignment = 512;
  expect_rejected(bad, "exceeds the storage's page alignment 256");
}

TEST(MemoryConfigChecks, P3_AManagerRefusesAConfigThatDoesNotFitItsStorage) {
  HostStorage host(256);
  ErrorGraph graph;
  MemoryConfig config = small_ladder();
  config.alignment = 1024;
  EXPECT_THROW(static_cast<void>(MemoryManager(host, graph, config)), std::invalid_argument);
  EXPECT_TRUE(graph.empty());
}

// ------------------------------------------------------------ accessors and figures

TEST_F(PoolChecks, TheManagerReportsItsConfigStorageGraphAndPools) {
  EXPECT_EQ(memory->config().sliced.size(), 2u);
  EXPECT_EQ(memory->config().max_allocation, std::uint64_t{1} << 20);
  EXPECT_EQ(&memory->storage(), &storage);
  EXPECT_EQ(&memory->graph(), &graph);
  EXPECT_EQ(memory->pool_count(), 3u) << "two sliced pools and the arena";
  EXPECT_EQ(memory->lane_count(), 0u) << "lanes are made on first use";
  const Allocation a = memory->allocate(100, 7);
  EXPECT_EQ(memory->lane_count(), 1u);
}

TEST(MemoryStatsFigures, P2_PeakOverheadIsPeakReservedOverPeakInUse) {
  MemoryStats stats;
  EXPECT_EQ(stats.peak_overhead(), 0.0) << "nothing ever in use";
  stats.peak_in_use = 1024;
  stats.peak_reserved = 8192;
  EXPECT_DOUBLE_EQ(stats.peak_overhead(), 8.0);
}

TEST(StorageHandles, ZeroNamesNoPage) {
  EXPECT_FALSE(static_cast<bool>(StorageHandle{}));
  EXPECT_TRUE(static_cast<bool>(StorageHandle{4096}));
}

TEST(FaultInjectingStorageStops, P3_RandomFailuresStopWhenToldTo) {
  HostStorage host(256);
  FaultInjectingStorage storage(host);
  storage.fail_randomly(7, 1); // One in one: every request fails.
  EXPECT_THROW(static_cast<void>(storage.allocate(4096)), StorageExhausted);
  storage.stop_failing_randomly();
  const StorageHandle page = storage.allocate(4096);
  EXPECT_TRUE(static_cast<bool>(page));
  EXPECT_EQ(storage.injected_failures(), 1u);
  storage.deallocate(page, 4096);
}

} // namespace
} // namespace taintpool::testing
