// Pins: model::IdTable, the vector DeviceModel keeps its live failures in
// (issue 13: it replaced a std::map, a node per minted failure), answers
// every question the model asks exactly as that std::map did — find, count,
// at, iteration in ascending id, erase and erase_if — and refuses an id that
// would break its order.
//
// Why: the model decides which failures are live (R1–R3) and walks them in
// id order for its comparisons and messages; a table that lost an entry, kept
// a buried one or iterated out of order would make the D1 oracle wrong in a
// way the fuzzers could only blame on core.
#include <taintpool/model/id_table.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace taintpool::model {
namespace {

void expect_same(const IdTable<std::string>& table, const std::map<std::uint64_t, std::string>& map,
                 std::uint64_t highest) {
  ASSERT_EQ(table.size(), map.size());
  EXPECT_EQ(table.empty(), map.empty());
  EXPECT_TRUE(std::equal(table.begin(), table.end(), map.begin(), map.end(),
                         [](const auto& held, const auto& mapped) {
                           return held.first == mapped.first && held.second == mapped.second;
                         }))
      << "the same entries, in ascending id";
  for (std::uint64_t id = 0; id <= highest + 1; ++id) {
    ASSERT_EQ(table.count(id), map.count(id)) << "id " << id;
    const auto found = table.find(id);
    if (map.count(id) != 0) {
      ASSERT_NE(found, table.end()) << "id " << id;
      EXPECT_EQ(found->first, id);
      EXPECT_EQ(found->second, map.at(id));
      EXPECT_EQ(table.at(id), map.at(id));
    } else {
      EXPECT_EQ(found, table.end()) << "id " << id;
      EXPECT_THROW(static_cast<void>(table.at(id)), std::out_of_range) << "id " << id;
    }
  }
}

TEST(ModelIdTable, R3_AnswersEveryLookupAsTheStdMapItReplacedDoes) {
  // Mint ids with gaps, bury some one by one (erase) and some in one pass
  // (erase_if), change values in place (at), and compare after every step.
  IdTable<std::string> table;
  std::map<std::uint64_t, std::string> map;
  std::uint64_t next = 1;
  std::uint32_t state = 12345;
  const auto roll = [&](std::uint32_t below) {
    state = state * 1103515245u + 12345u;
    return (state >> 16) % below;
  };
  for (int step = 0; step < 400; ++step) {
    const std::uint32_t op = roll(10);
    if (op < 5) {
      next += roll(3); // Ids skip, as a model's do when core mints some it never sees.
      const std::string value = "failure " + std::to_string(next) + std::string(roll(40), 'x');
      table.emplace(next, value);
      map.emplace(next, value);
      ++next;
    } else if (op < 7 && !map.empty()) {
      const auto victim = std::next(
          map.begin(), static_cast<std::ptrdiff_t>(roll(static_cast<std::uint32_t>(map.size()))));
      const auto after = table.erase(table.find(victim->first));
      const auto map_after = map.erase(victim);
      if (map_after == map.end()) {
        EXPECT_EQ(after, table.end());
      } else {
        ASSERT_NE(after, table.end());
        EXPECT_EQ(after->first, map_after->first) << "erase returns the entry after it";
      }
    } else if (op < 8) {
      const std::uint32_t modulus = 2 + roll(4);
      table.erase_if([&](std::uint64_t id, const std::string&) { return id % modulus == 0; });
      std::erase_if(map, [&](const auto& entry) { return entry.first % modulus == 0; });
    } else if (!map.empty()) {
      const std::uint64_t id =
          std::next(map.begin(),
                    static_cast<std::ptrdiff_t>(roll(static_cast<std::uint32_t>(map.size()))))
              ->first;
      table.at(id) += "!";
      map.at(id) += "!";
    }
    expect_same(table, map, next);
    if (testing::Test::HasFatalFailure()) {
      return;
    }
  }
}

TEST(ModelIdTable, R3_AnIdNotAboveTheLastIsRefusedAndChangesNothing) {
  IdTable<std::string> table;
  table.emplace(3, "three");
  table.emplace(7, "seven");
  EXPECT_THROW(table.emplace(7, "again"), std::logic_error);
  EXPECT_THROW(table.emplace(5, "between"), std::logic_error);
  const std::vector<std::pair<std::uint64_t, std::string>> held(table.begin(), table.end());
  EXPECT_EQ(held, (std::vector<std::pair<std::uint64_t, std::string>>{{3, "three"}, {7, "seven"}}));
  table.erase(table.find(7));
  table.emplace(8, "eight"); // Above the last held: in order again.
  EXPECT_EQ(table.at(8), "eight");
  EXPECT_EQ(table.size(), 2u);
}

} // namespace
} // namespace taintpool::model
