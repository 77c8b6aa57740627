// RankSlots: the flat per-step (rank, value) table that stands in for std::map<int, T>.
#include "analyzers/kinds/common/rank_slots.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace dsdiag::analyzers {
namespace {

std::vector<int> Ranks(const RankSlots<std::string>& slots) {
  std::vector<int> ranks;
  for (const auto& [rank, value] : slots) ranks.push_back(rank);
  return ranks;
}

TEST(RankSlotsTest, RanksInOrderAppend) {
  RankSlots<std::string> slots;
  for (int r : {0, 1, 5, 9}) slots.Set(r, "v" + std::to_string(r));
  EXPECT_EQ(Ranks(slots), (std::vector<int>{0, 1, 5, 9}));
  EXPECT_EQ(slots.begin()->second, "v0");
  EXPECT_EQ(slots.at(5), "v5");
  EXPECT_EQ(slots.count(4), 0u);
  EXPECT_EQ(slots.find(4), slots.end());
  EXPECT_THROW(slots.at(4), std::out_of_range);
}

// A late record (a helper thread's) or a repeated one: the map's operator[] semantics.
TEST(RankSlotsTest, ARankOutOfOrderIsInsertedInPlaceAndARepeatReplaces) {
  RankSlots<std::string> slots;
  slots.Set(3, "a");
  slots.Set(7, "b");
  slots.Set(1, "c");  // below the last: inserted before
  slots.Set(5, "d");
  slots.Set(7, "e");  // the last again
  slots.Set(1, "f");  // an earlier one again
  EXPECT_EQ(Ranks(slots), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(slots.size(), 4u);
  EXPECT_EQ(slots.at(1), "f");
  EXPECT_EQ(slots.at(7), "e");
  EXPECT_EQ(slots.begin()->first, 1);
}

}  // namespace
}  // namespace dsdiag::analyzers
