// CollectiveWindow: what each rank recorded of a collective, handed over per collective in
// (step, pg, seq) order, whatever order the ranks' records arrive in.
#include "analyzers/kinds/common/collective_window.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dsdiag::analyzers {
namespace {

// "pg:seq@step=entries" per collective handed over.
std::vector<std::string> Flushed(CollectiveWindow<int>& window, int64_t step) {
  std::vector<std::string> out;
  window.Flush(step, [&](const CollectiveKey& k, const CollectiveSlot<int>& s) {
    std::string line =
        std::to_string(k.pg) + ":" + std::to_string(k.seq) + "@" + std::to_string(s.step) + "=";
    for (int e : s.entries) line += std::to_string(e) + ",";
    out.push_back(line);
  });
  return out;
}

// Rank after rank, each its collectives in order (the driver's window): each record lands
// in its own collective's slot, the next slot's found after the last one's.
TEST(CollectiveWindowTest, RankAfterRankGathersEachCollective) {
  CollectiveWindow<int> window;
  for (int rank = 0; rank < 3; ++rank) {
    for (int64_t seq = 1; seq <= 3; ++seq) window.Add({0, seq}, seq <= 2 ? 0 : 1, rank);
  }
  EXPECT_EQ(Flushed(window, 1), (std::vector<std::string>{"0:1@0=0,1,2,", "0:2@0=0,1,2,"}));
  EXPECT_EQ(window.size(), 1u);
  EXPECT_EQ(Flushed(window, 2), (std::vector<std::string>{"0:3@1=0,1,2,"}));
}

// Out of order, repeated, two process groups, a rank skipping one, and records after a
// flush: none is put in the slot it follows by mistake.
TEST(CollectiveWindowTest, RecordsOutOfOrderFindTheirOwnSlot) {
  CollectiveWindow<int> window;
  window.Add({0, 2}, 0, 10);
  window.Add({0, 1}, 0, 11);
  window.Add({0, 2}, 0, 12);  // after {0,1}: the next slot
  window.Add({0, 2}, 0, 13);  // the same slot again
  window.Add({1, 1}, 0, 14);
  window.Add({0, 3}, 0, 15);  // not after {1,1}
  window.Add({0, 1}, 0, 16);  // skipped back
  EXPECT_EQ(Flushed(window, 1), (std::vector<std::string>{"0:1@0=11,16,", "0:2@0=10,12,13,",
                                                          "0:3@0=15,", "1:1@0=14,"}));
  window.Add({0, 4}, 1, 17);  // the slots it came after are gone
  window.Add({0, 5}, 1, 18);
  window.Add({0, 4}, 1, 19);
  EXPECT_EQ(Flushed(window, 2), (std::vector<std::string>{"0:4@1=17,19,", "0:5@1=18,"}));
  EXPECT_EQ(window.size(), 0u);
}

}  // namespace
}  // namespace dsdiag::analyzers
