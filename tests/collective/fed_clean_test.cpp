// Pins: C3/C4's "was this rank fed stale bytes" question two ways —
// fed_clean() answers exactly as fed_stale(...).ranges.empty() for every
// collective kind, rank count, rank, peer, element count and size and many
// stale masks (own pieces that explain a landed piece included), throws
// where fed_stale() throws, and never allocates.
//
// Why: Collectives asks fed_clean() on every landed collective
// (Collectives::landed_clean). It used to build fed_stale()'s whole answer —
// lists, merged ranges, the error message — and throw it away: the exchange
// path's second allocation site in collective_fuzzer (issue 13). It is now
// its own scan, so it must be shown to be the same test. Its own executable:
// it counts allocations with the replaced global operator new
// (testing/src/replace_new.cpp); no assertion macro runs inside a measured
// region.
#include <taintpool/collective/communicator.hpp>
#include <taintpool/collective/summary.hpp>
#include <taintpool/testing/heap_allocations.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

namespace taintpool {
namespace {

using testing::allocations_during;

constexpr CollectiveKind kKinds[] = {CollectiveKind::all_reduce,     CollectiveKind::all_gather,
                                     CollectiveKind::reduce_scatter, CollectiveKind::broadcast,
                                     CollectiveKind::send,           CollectiveKind::recv};

/// `ranks` summaries, all zero but each one's stale mask.
std::vector<std::byte> summaries_with(const std::vector<std::uint64_t>& masks) {
  std::vector<std::byte> bytes(masks.size() * TaintSummary::bytes);
  for (std::size_t at = 0; at < masks.size(); ++at) {
    std::memcpy(bytes.data() + at * TaintSummary::bytes, &masks[at], sizeof(std::uint64_t));
  }
  return bytes;
}

/// A stale mask over `pieces` pieces: none, all, one, or random.
std::uint64_t draw_mask(std::mt19937_64& random, std::uint32_t pieces) {
  const std::uint64_t all = pieces >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << pieces) - 1;
  switch (random() % 4) {
  case 0:
    return 0;
  case 1:
    return all;
  case 2:
    return std::uint64_t{1} << (random() % pieces);
  default:
    return random() & all;
  }
}

TEST(FedClean, C3C4_AnswersAsFedStaleFindsNothingForEveryShapeAndMask) {
  std::mt19937_64 random(13); // Fixed: the same cases every run.
  std::size_t fed = 0;
  std::size_t clean = 0;
  for (const CollectiveKind kind : kKinds) {
    for (int ranks = 1; ranks <= 4; ++ranks) {
      for (int me = 0; me < ranks; ++me) {
        for (int peer = 0; peer < ranks; ++peer) {
          for (const std::uint64_t count : {1u, 3u, 7u, 64u, 100u, 1000u}) {
            for (const std::uint64_t element_size : {1u, 4u}) {
              const CollectiveShape shape{kind, count, element_size, ranks, me, peer};
              const std::uint32_t pieces = shape.layout().pieces();
              for (int draw = 0; draw < 12; ++draw) {
                std::vector<std::uint64_t> masks(static_cast<std::size_t>(ranks));
                for (std::uint64_t& mask : masks) {
                  mask = draw_mask(random, pieces);
                }
                const std::vector<std::byte> bytes = summaries_with(masks);
                const bool expected = fed_stale(shape, bytes).ranges.empty();
                ASSERT_EQ(fed_clean(shape, bytes), expected)
                    << name(kind) << " ranks " << ranks << " me " << me << " peer " << peer
                    << " count " << count << " x" << element_size << " draw " << draw;
                ++(expected ? clean : fed);
              }
            }
          }
        }
      }
    }
  }
  // Both answers occur, so the agreement is not vacuous.
  EXPECT_GT(fed, 1000u);
  EXPECT_GT(clean, 1000u);
}

TEST(FedClean, C4_OwnStalePiecesThatExplainEveryFedPieceLeaveItClean) {
  // All-reduce: every rank's piece p lands on the same bytes, so when this
  // rank's own piece is stale too, the bytes are explained (C4, local
  // first) and nobody else fed them.
  const CollectiveShape shape{CollectiveKind::all_reduce, 100, 4, 3, 1, 0};
  EXPECT_TRUE(fed_clean(shape, summaries_with({0b101, 0b111, 0b010})));
  EXPECT_TRUE(fed_stale(shape, summaries_with({0b101, 0b111, 0b010})).ranges.empty());
  EXPECT_FALSE(fed_clean(shape, summaries_with({0b101, 0b011, 0b010})));
}

TEST(FedClean, C3_TooFewSummaryBytesThrowAsFedStaleDoes) {
  const CollectiveShape shape{CollectiveKind::all_gather, 8, 1, 4, 1, 0};
  const std::vector<std::byte> short_of_two = summaries_with({1, 0});
  EXPECT_THROW((void)fed_stale(shape, short_of_two), std::logic_error);
  EXPECT_THROW((void)fed_clean(shape, short_of_two), std::logic_error);
}

// The receiving side reads only the stale bits of a mask that stand for
// pieces: a bit past the last piece (a summary is 64 bits whatever the
// layout) names no bytes, and is ignored — by fed_stale, fed_clean and
// carried_stale alike. (Pinned when a round rewrote their loops over the
// pieces as loops over the set bits, where it took a mask to keep it so.)
TEST(FedClean, C3C4_StaleBitsPastTheLastPieceNameNoBytes) {
  const CollectiveShape shape{CollectiveKind::all_reduce, 3, 1, 2, 0, 0}; // 3 pieces of a byte.
  const std::uint64_t past = (std::uint64_t{1} << 3) | (std::uint64_t{1} << 63);
  EXPECT_TRUE(fed_stale(shape, summaries_with({0, past})).ranges.empty());
  EXPECT_TRUE(fed_clean(shape, summaries_with({0, past})));
  const FedStale one = fed_stale(shape, summaries_with({0, past | 0b010}));
  ASSERT_EQ(one.ranges.size(), 1u);
  EXPECT_EQ(one.ranges[0].range, ByteRange::of(1, 2));
  // An own bit past the last piece explains nothing, and is carried nowhere.
  EXPECT_FALSE(fed_clean(shape, summaries_with({past, 0b010})));
  TaintSummary mine;
  clear_summary(mine);
  mine.stale = past;
  EXPECT_TRUE(carried_stale(shape, mine, Summarized{}).empty());
  mine.stale = past | 0b100;
  Summarized roots;
  roots.piece_root[2] = 5;
  const std::vector<CarriedStale> carried = carried_stale(shape, mine, roots);
  ASSERT_EQ(carried.size(), 1u);
  EXPECT_EQ(carried[0].range, ByteRange::of(2, 3));
  EXPECT_EQ(carried[0].failure, FailureId::from_raw(5));
}

TEST(FedClean, C3C4_NeverAllocatesFedOrClean) {
  const CollectiveShape shape{CollectiveKind::all_reduce, 1000, 4, 4, 2, 0};
  const std::vector<std::byte> fed = summaries_with({0, 1, 0, 0b1000});
  const std::vector<std::byte> explained = summaries_with({0b1, 0, 0b1, 0});
  const std::vector<std::byte> clean = summaries_with({0, 0, 0, 0});
  int answers = 0;
  const std::uint64_t allocations = allocations_during([&] {
    for (int round = 0; round < 100; ++round) {
      answers += fed_clean(shape, fed) ? 0 : 1;
      answers += fed_clean(shape, explained) ? 1 : 0;
      answers += fed_clean(shape, clean) ? 1 : 0;
    }
  });
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(answers, 300) << "fed, explained by own pieces, clean: each answered right";
}

} // namespace
} // namespace taintpool
