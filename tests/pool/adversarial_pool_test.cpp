// Pins what the pool's storage layer and its knobs do with a caller's numbers
// at the edges (P1-P3), found by the review1 audit of the surface added since
// 0.1.0 (virtual memory, the arena knobs):
//   * HostStorage::map and unmap take a reservation handle and an offset
//     from the caller and map with MAP_FIXED, which replaces whatever the
//     address holds. A null reservation, or an offset whose address wraps
//     around the address space, put fresh zeroed memory over memory the
//     process was using (or, under UBSan, overflowed a pointer). Both are
//     now std::invalid_argument with nothing mapped. So, since, is every
//     range that does not lie inside a live reservation of that storage
//     (an offset past its end, a handle that never was one, one given
//     back); unmap and unreserve of such a range leave memory alone.
//   * A MemoryManager with every arena knob at its limit (just below 2^63;
//     the header said "at most 2^63", validate refuses 2^63 itself, and its
//     message called 2^63 "above 2^63": both now say "below") answers every
//     size, up to 2^64 - 1, with an allocation or a clear taintpool error
//     and state unchanged — never std::bad_alloc, a crash or wrapped
//     arithmetic (held on main; no test covered the knobs' top).
#include <taintpool/error.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/exception.hpp>
#include <taintpool/pool/fault_injecting_storage.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "thrown_text.hpp"

namespace taintpool {
namespace {

constexpr std::uint64_t kGranule = std::uint64_t{2} << 20;

using test::invalid_argument_of;

TEST(AdversarialHostStorage, P3_AMapWithNoReservationIsRefusedAndLeavesLiveMemoryAsItWas) {
  // A live page, aligned to the granularity so that its address is a valid
  // map offset from a null base: before, map(0, address, size) replaced it.
  HostStorage storage(HostStorageOptions{kGranule, true, kGranule});
  const StorageHandle page = storage.allocate(kGranule);
  auto* bytes = static_cast<std::byte*>(storage.resolve(page));
  std::memset(bytes, 0x5A, kGranule);
  const std::string what = invalid_argument_of(
      [&] { static_cast<void>(storage.map(StorageHandle{}, page.value, kGranule)); });
  EXPECT_NE(what.find("HostStorage::map: no reservation"), std::string::npos) << what;
  EXPECT_EQ(bytes[0], std::byte{0x5A}) << "the live page was replaced";
  EXPECT_EQ(bytes[kGranule - 1], std::byte{0x5A});
  storage.deallocate(page, kGranule);
}

TEST(AdversarialHostStorage, P3_AMapWhoseRangeWrapsTheAddressSpaceIsRefusedNamingTheRange) {
  HostStorage storage;
  VirtualMemory& memory = *storage.virtual_memory();
  const StorageHandle reservation = memory.reserve(2 * kGranule);
  auto* bytes = static_cast<std::byte*>(storage.resolve(memory.map(reservation, 0, kGranule)));
  bytes[0] = std::byte{7};
  // An offset of 2^64 - granule is a whole number of granules; added to the
  // base it wraps to the granule just below the reservation.
  const std::uint64_t wrapping = std::uint64_t{0} - kGranule;
  for (const auto& [offset, size] : {std::pair{wrapping, kGranule}, std::pair{kGranule, wrapping},
                                     std::pair{wrapping, wrapping}}) {
    const std::string what = invalid_argument_of([&, offset = offset, size = size] {
      static_cast<void>(memory.map(reservation, offset, size));
    });
    EXPECT_NE(what.find("past the end of the reservation"), std::string::npos) << what;
  }
  EXPECT_EQ(bytes[0], std::byte{7});
  memory.unmap(reservation, 0, kGranule, StorageHandle{reservation.value});
  memory.unreserve(reservation, 2 * kGranule);
}

TEST(AdversarialHostStorage, P3_AMapPastTheEndOfItsReservationIsRefusedAndLeavesTheNeighbourAlone) {
  HostStorage storage;
  VirtualMemory& memory = *storage.virtual_memory();
  const StorageHandle small = memory.reserve(kGranule);
  const StorageHandle other = memory.reserve(4 * kGranule);
  auto* bytes = static_cast<std::byte*>(storage.resolve(memory.map(other, 0, 4 * kGranule)));
  std::memset(bytes, 0x3C, 4 * kGranule);
  // Offsets from `small` that reach past its one granule, up to the far end
  // of `other`, wherever the system placed the two.
  const std::uint64_t span = 8 * kGranule + (other.value > small.value ? other.value - small.value
                                                                       : small.value - other.value);
  for (const auto& [offset, size] :
       {std::pair{kGranule, kGranule}, std::pair{std::uint64_t{0}, 2 * kGranule},
        std::pair{span - span % kGranule, kGranule}}) {
    const std::string what = invalid_argument_of(
        [&, offset = offset, size = size] { static_cast<void>(memory.map(small, offset, size)); });
    EXPECT_NE(what.find("past the end of the reservation"), std::string::npos) << what;
  }
  // unmap of such a range takes nothing either.
  memory.unmap(small, kGranule, kGranule, StorageHandle{small.value + kGranule});
  for (std::uint64_t at = 0; at < 4 * kGranule; at += 4096) {
    ASSERT_EQ(bytes[at], std::byte{0x3C}) << "the neighbouring reservation changed at " << at;
  }
  // The one granule that is small's still maps.
  auto* own = static_cast<std::byte*>(storage.resolve(memory.map(small, 0, kGranule)));
  own[kGranule - 1] = std::byte{1};
  memory.unmap(small, 0, kGranule, StorageHandle{small.value});
  memory.unmap(other, 0, 4 * kGranule, StorageHandle{other.value});
  memory.unreserve(small, kGranule);
  memory.unreserve(other, 4 * kGranule);
}

TEST(AdversarialHostStorage, P3_AHandleThatIsNoLiveReservationIsRefusedByMapAndIgnoredByUnreserve) {
  HostStorage storage(HostStorageOptions{kGranule, true, kGranule});
  VirtualMemory& memory = *storage.virtual_memory();
  // A live page: its address is granular, but it is no reservation.
  const StorageHandle page = storage.allocate(kGranule);
  auto* bytes = static_cast<std::byte*>(storage.resolve(page));
  std::memset(bytes, 0x6B, kGranule);
  std::string what = invalid_argument_of([&] { static_cast<void>(memory.map(page, 0, kGranule)); });
  EXPECT_NE(what.find("is not a live reservation of this storage"), std::string::npos) << what;
  memory.unreserve(page, kGranule); // Not a reservation: nothing given back.
  EXPECT_EQ(bytes[0], std::byte{0x6B}) << "a page that was never reserved was unmapped";
  EXPECT_EQ(bytes[kGranule - 1], std::byte{0x6B});
  // A reservation of another storage is not this one's.
  HostStorage elsewhere(HostStorageOptions{kGranule, true, kGranule});
  const StorageHandle theirs = elsewhere.virtual_memory()->reserve(kGranule);
  what = invalid_argument_of([&] { static_cast<void>(memory.map(theirs, 0, kGranule)); });
  EXPECT_NE(what.find("is not a live reservation of this storage"), std::string::npos) << what;
  elsewhere.virtual_memory()->unreserve(theirs, kGranule);
  // One given back is no longer live, and unreserving it twice is harmless.
  const StorageHandle gone = memory.reserve(2 * kGranule);
  memory.unreserve(gone, 2 * kGranule);
  memory.unreserve(gone, 2 * kGranule);
  what = invalid_argument_of([&] { static_cast<void>(memory.map(gone, 0, kGranule)); });
  EXPECT_NE(what.find("is not a live reservation of this storage"), std::string::npos) << what;
  // A size other than the reservation's gives nothing back: it still maps.
  const StorageHandle kept = memory.reserve(2 * kGranule);
  memory.unreserve(kept, kGranule);
  auto* mapped = static_cast<std::byte*>(storage.resolve(memory.map(kept, kGranule, kGranule)));
  mapped[0] = std::byte{9};
  EXPECT_EQ(mapped[0], std::byte{9});
  memory.unmap(kept, kGranule, kGranule, StorageHandle{kept.value + kGranule});
  memory.unreserve(kept, 2 * kGranule);
  storage.deallocate(page, kGranule);
}

/// Every allocation of `sizes` on `memory`: an allocation of at least the
/// size, aligned, or an Exception of OutOfMemory or BufferTooBig that
/// changed nothing (P3).
void every_size_answers_clearly(MemoryManager& memory, const std::vector<std::uint64_t>& sizes) {
  std::vector<Allocation> held;
  for (const std::uint64_t size : sizes) {
    const MemoryStats before = memory.stats();
    try {
      Allocation allocation = memory.allocate(size);
      EXPECT_GE(allocation.size(), size);
      held.push_back(std::move(allocation));
    } catch (const Exception& error) {
      EXPECT_TRUE(error.kind() == ErrorKind::OutOfMemory || error.kind() == ErrorKind::BufferTooBig)
          << size << ": " << error.what();
      const MemoryStats after = memory.stats();
      EXPECT_EQ(after.in_use, before.in_use) << size;
      EXPECT_EQ(after.allocations, before.allocations) << size;
    } catch (const std::exception& error) {
      ADD_FAILURE() << size << ": not a taintpool error: " << error.what();
    }
    memory.check_invariants();
  }
}

/// The largest value the 2^63-bounded knobs take (MemoryConfig::validate).
constexpr std::uint64_t kBelowTop = (std::uint64_t{1} << 63) - 1;

const std::vector<std::uint64_t> kEdgeSizes = {
    0,
    1,
    (std::uint64_t{64} << 10) + 1,
    kGranule + 1,
    std::uint64_t{1} << 40,
    (std::uint64_t{1} << 62) + 1,
    (std::uint64_t{1} << 63) - 1,
    std::uint64_t{1} << 63,
    (std::uint64_t{1} << 63) + 1,
    UINT64_MAX - 255,
    UINT64_MAX,
    3000,
    (std::uint64_t{128} << 10),
};

TEST(AdversarialMemoryConfig, P2_P3_EveryArenaKnobAtItsLimitStillAnswersEverySizeClearly) {
  for (const bool virtual_memory : {true, false}) {
    HostStorage host(HostStorageOptions{256, virtual_memory, kGranule});
    FaultInjectingStorage storage(host);
    ErrorGraph graph;
    MemoryConfig config;
    // The largest each knob takes: below 2^63, a multiple of the alignment.
    config.max_allocation = kBelowTop;
    config.arena_address_space = kBelowTop;
    config.arena_min_growth = kBelowTop - 255;
    config.arena_ramp_growth = kBelowTop - 255;
    config.arena_growth_divisor = 1;
    ASSERT_NO_THROW(config.validate(host.alignment()));
    MemoryManager memory(storage, graph, config);
    SCOPED_TRACE(virtual_memory ? "virtual memory" : "pages");
    every_size_answers_clearly(memory, kEdgeSizes);
  }
}

TEST(AdversarialMemoryConfig, P2_P3_AnAlignmentOfTwoToTheSixtyTwoStillAnswersEverySizeClearly) {
  constexpr std::uint64_t top = std::uint64_t{1} << 62; // The largest below 2^63.
  for (const bool virtual_memory : {true, false}) {
    HostStorage host(HostStorageOptions{top, virtual_memory, top});
    FaultInjectingStorage storage(host);
    ErrorGraph graph;
    MemoryConfig config;
    config.alignment = top;
    config.sliced = {{top, 1}, {top, top}};
    config.max_allocation = kBelowTop;
    config.arena_address_space = top;
    config.arena_min_growth = top;
    config.arena_ramp_growth = top;
    ASSERT_NO_THROW(config.validate(host.alignment()));
    MemoryManager memory(storage, graph, config);
    SCOPED_TRACE(virtual_memory ? "virtual memory" : "pages");
    every_size_answers_clearly(memory, kEdgeSizes);
  }
}

TEST(AdversarialMemoryConfig, P3_ALaneAtTheTopOfItsRangeIsRefusedAndChangesNothing) {
  HostStorage host;
  ErrorGraph graph;
  MemoryManager memory(host, graph);
  const MemoryStats before = memory.stats();
  for (const std::uint32_t lane : {MemoryManager::max_lanes, UINT32_MAX}) {
    const std::string what =
        invalid_argument_of([&] { static_cast<void>(memory.allocate(1, lane)); });
    EXPECT_NE(what.find("is not one of the"), std::string::npos) << what;
  }
  EXPECT_EQ(memory.lane_count(), 0u);
  EXPECT_EQ(memory.stats().reserved, before.reserved);
  memory.check_invariants();
}

} // namespace
} // namespace taintpool
