// Pins HostStorage's options and its virtual-memory capability (P1, P2):
// bad alignments and granularities are refused at construction with the
// figure that is wrong; reserve and map take whole granules only; a mapped
// range is fresh zeroed memory, an unmapped and remapped one is fresh again;
// alignments above the system page are honoured by trimming; and a request
// the system cannot satisfy is StorageExhausted, never a crash.
//
// Why exact addresses are not compared: the system picks them; what the
// pool relies on (alignment, zeroed bytes, contents kept while mapped) is.
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/storage.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "thrown_text.hpp"

namespace taintpool {
namespace {

constexpr std::uint64_t kGranule = std::uint64_t{2} << 20;

using test::invalid_argument_of;

template <typename Call>
std::string exhausted_of(Call call) {
  try {
    call();
  } catch (const StorageExhausted& error) {
    return error.what();
  }
  return "no error";
}

bool all_zero(const std::byte* at, std::size_t size) {
  for (std::size_t index = 0; index < size; ++index) {
    if (at[index] != std::byte{0}) {
      return false;
    }
  }
  return true;
}

TEST(HostStorage, P1_AnAlignmentBelowEightOrNotAPowerOfTwoIsRefusedWithTheFigure) {
  EXPECT_NE(invalid_argument_of([] {
              HostStorage storage(HostStorageOptions{4, true, kGranule});
            }).find("alignment 4 is not a power of two of at least 8"),
            std::string::npos);
  EXPECT_NE(invalid_argument_of([] {
              HostStorage storage(std::uint64_t{24});
            }).find("alignment 24 is not"),
            std::string::npos);
}

TEST(HostStorage, P1_AGranularityNotAPowerOfTwoOfWholePagesAtLeastTheAlignmentIsRefused) {
  const std::string odd = invalid_argument_of([] {
    HostStorage storage(HostStorageOptions{256, true, 3 * kGranule});
  });
  EXPECT_NE(odd.find("granularity 6291456 is not a power of two"), std::string::npos) << odd;
  EXPECT_NE(odd.find("system page size " + std::to_string(::sysconf(_SC_PAGESIZE))),
            std::string::npos)
      << odd;
  EXPECT_NE(invalid_argument_of([] {
              HostStorage storage(HostStorageOptions{256, true, 512});
            }).find("granularity 512"),
            std::string::npos);
  EXPECT_NE(invalid_argument_of([] {
              HostStorage storage(HostStorageOptions{kGranule * 2, true, kGranule});
            }).find("at least the alignment"),
            std::string::npos);
}

TEST(HostStorage, P2_VirtualMemoryIsOfferedByDefaultWithTwoMebibyteGranulesAndOnlyWhenAsked) {
  HostStorage storage;
  ASSERT_NE(storage.virtual_memory(), nullptr);
  EXPECT_EQ(storage.virtual_memory()->granularity(), kGranule);
  HostStorage plain(HostStorageOptions{256, false, kGranule});
  EXPECT_EQ(plain.virtual_memory(), nullptr);
}

TEST(HostStorage, P2_ReserveAndMapTakeWholeGranulesOnly) {
  HostStorage storage;
  VirtualMemory& memory = *storage.virtual_memory();
  const std::string reserve = invalid_argument_of([&] { static_cast<void>(memory.reserve(4096)); });
  EXPECT_NE(reserve.find("HostStorage::reserve: 4096 is not a multiple of the granularity 2097152"),
            std::string::npos)
      << reserve;
  const StorageHandle reservation = memory.reserve(2 * kGranule);
  ASSERT_TRUE(reservation);
  EXPECT_NE(invalid_argument_of([&] {
              static_cast<void>(memory.map(reservation, 4096, kGranule));
            }).find("HostStorage::map: 4096 is not a multiple"),
            std::string::npos);
  EXPECT_NE(invalid_argument_of([&] {
              static_cast<void>(memory.map(reservation, 0, kGranule + 4096));
            }).find("HostStorage::map: 2101248 is not a multiple"),
            std::string::npos);
  memory.unreserve(reservation, 2 * kGranule);
}

TEST(HostStorage, P2_AMappedGranuleIsZeroedKeepsItsBytesAndIsFreshAfterUnmapAndMap) {
  HostStorage storage;
  VirtualMemory& memory = *storage.virtual_memory();
  const StorageHandle reservation = memory.reserve(2 * kGranule);
  EXPECT_EQ(reservation.value % 256, 0u);
  const StorageHandle chunk = memory.map(reservation, kGranule, kGranule);
  EXPECT_EQ(chunk.value, reservation.value + kGranule);
  auto* bytes = static_cast<std::byte*>(storage.resolve(chunk));
  EXPECT_TRUE(all_zero(bytes, kGranule));
  std::memset(bytes, 0x5A, kGranule);
  EXPECT_EQ(bytes[kGranule - 1], std::byte{0x5A});
  const StorageHandle first = memory.map(reservation, 0, kGranule);
  EXPECT_EQ(first.value, reservation.value);
  EXPECT_EQ(bytes[0], std::byte{0x5A}) << "mapping a neighbour keeps the bytes";
  memory.unmap(reservation, kGranule, kGranule, chunk);
  const StorageHandle again = memory.map(reservation, kGranule, kGranule);
  EXPECT_EQ(again.value, chunk.value);
  EXPECT_TRUE(all_zero(static_cast<std::byte*>(storage.resolve(again)), kGranule))
      << "a remapped granule is fresh memory";
  memory.unmap(reservation, 0, kGranule, first);
  memory.unmap(reservation, kGranule, kGranule, again);
  memory.unreserve(reservation, 2 * kGranule);
}

TEST(HostStorage, P1_AnAlignmentAboveThePageIsHonouredForPagesAndReservations) {
  constexpr std::uint64_t alignment = std::uint64_t{1} << 20; // Above any usual page.
  HostStorage storage(HostStorageOptions{alignment, true, kGranule});
  for (int round = 0; round < 4; ++round) {
    const StorageHandle page = storage.allocate(8192);
    EXPECT_EQ(page.value % alignment, 0u);
    auto* bytes = static_cast<std::byte*>(storage.resolve(page));
    EXPECT_TRUE(all_zero(bytes, 8192));
    bytes[8191] = std::byte{1};
    const StorageHandle reservation = storage.reserve(kGranule);
    EXPECT_EQ(reservation.value % alignment, 0u);
    const StorageHandle chunk = storage.map(reservation, 0, kGranule);
    static_cast<std::byte*>(storage.resolve(chunk))[kGranule - 1] = std::byte{2};
    storage.unmap(reservation, 0, kGranule, chunk);
    storage.unreserve(reservation, kGranule);
    EXPECT_EQ(bytes[8191], std::byte{1});
    storage.deallocate(page, 8192);
  }
}

TEST(HostStorage, P1_ARequestTheSystemCannotSatisfyIsStorageExhausted) {
  HostStorage storage;
  EXPECT_NE(exhausted_of([&] {
              static_cast<void>(storage.allocate(0));
            }).find("host: the system refused a page of 0 bytes"),
            std::string::npos);
  // Past PTRDIFF_MAX: refused before asking the system.
  const std::uint64_t huge = std::uint64_t{1} << 63;
  EXPECT_NE(exhausted_of([&] {
              static_cast<void>(storage.reserve(huge));
            }).find("refused to reserve 9223372036854775808 bytes"),
            std::string::npos);
  // Within PTRDIFF_MAX but past any user address space (2^57 at most): the
  // system itself refuses.
  const std::uint64_t beyond = std::uint64_t{1} << 62;
  EXPECT_NE(
      exhausted_of([&] { static_cast<void>(storage.reserve(beyond)); }).find("refused to reserve"),
      std::string::npos);
  EXPECT_NE(exhausted_of([&] {
              static_cast<void>(storage.allocate(beyond));
            }).find("refused a page of 4611686018427387904 bytes"),
            std::string::npos);
}

TEST(HostStorage, P3_AMapAtAnAddressNoReservationHoldsIsRefusedBeforeTheSystemIsAsked) {
  HostStorage storage;
  // A "reservation" at 2^62: no user mapping can be there (x86-64 and
  // AArch64 stop at 2^57). Before the storage recorded its reservations,
  // MAP_FIXED was tried there and the system's refusal came back as
  // StorageExhausted; a handle it never gave is now a caller's bug, refused
  // by number, and the system is not asked.
  const StorageHandle unreachable{std::uint64_t{1} << 62};
  const std::string what =
      invalid_argument_of([&] { static_cast<void>(storage.map(unreachable, 0, kGranule)); });
  EXPECT_NE(what.find("4611686018427387904 is not a live reservation"), std::string::npos) << what;
}

} // namespace
} // namespace taintpool
