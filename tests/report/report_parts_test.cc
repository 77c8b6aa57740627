// The report's building blocks on their own: step bins, collective waits and arrival
// delays, the configuration diff, the loader-sweep file and HTML escaping.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/collective_waits.h"
#include "report/config_diff.h"
#include "report/html.h"
#include "report/rank_rows.h"
#include "report/step_bins.h"

namespace dsdiag::report {
namespace {

// ---- step bins ----

TEST(StepBinsTest, OneStepPerBinUntilTheBinsRunOut) {
  StepAxis axis(4);
  BinnedRows grid(&axis, 2);
  for (int64_t s = 0; s < 4; ++s) grid.Add(0, s, static_cast<double>(s), 0);
  EXPECT_EQ(axis.width(), 1);
  EXPECT_EQ(axis.bins(), 4);
  EXPECT_EQ(grid.At(0, 3).max, 3.0);
  EXPECT_TRUE(grid.At(1, 0).empty());
}

TEST(StepBinsTest, WideningMergesBinsPairwiseInEveryGrid) {
  StepAxis axis(4);
  BinnedRows a(&axis, 1), b(&axis, 1);
  for (int64_t s = 0; s < 4; ++s) a.Add(0, s, static_cast<double>(s + 1), 7);
  b.Add(0, 1, 10.0, 3);
  a.Add(0, 4, 100.0, 9);  // past bin 3: width 2, steps 0-1 | 2-3 | 4-5
  EXPECT_EQ(axis.width(), 2);
  EXPECT_EQ(axis.bins(), 3);
  EXPECT_EQ(a.At(0, 0).count, 2);
  EXPECT_EQ(a.At(0, 0).sum, 3.0);
  EXPECT_EQ(a.At(0, 1).min, 3.0);
  EXPECT_EQ(a.At(0, 1).max, 4.0);
  EXPECT_EQ(a.At(0, 1).max_step, 3);
  EXPECT_EQ(a.At(0, 2).max_rank, 9);
  EXPECT_EQ(b.At(0, 0).max, 10.0);  // the other grid was merged too
  EXPECT_EQ(b.At(0, 0).max_rank, 3);
  EXPECT_EQ(axis.FirstStep(2), 4);
  EXPECT_EQ(axis.LastStep(2), 5);
}

TEST(StepBinsTest, ALongRunStaysWithinTheBins) {
  StepAxis axis;  // kMaxStepBins
  BinnedRows grid(&axis, 1);
  for (int64_t s = 0; s < 1000000; ++s) grid.Add(0, s, 1.0, 0);
  EXPECT_LE(axis.bins(), kMaxStepBins);
  EXPECT_EQ(axis.width(), 8192);  // the smallest power of two with 10^6 steps in 200 bins
  EXPECT_EQ(axis.bins(), 123);
  int64_t total = 0;
  for (int b = 0; b < axis.bins(); ++b) total += grid.At(0, b).count;
  EXPECT_EQ(total, 1000000);
}

TEST(StepBinsTest, TheFirstStepIsTheOriginAndLowerStepsGoInTheFirstBin) {
  StepAxis axis;
  BinnedRows grid(&axis, 1);
  grid.Add(0, 1000, 1.0, 0);
  grid.Add(0, 999, 2.0, 0);  // a helper thread lagging a step
  EXPECT_EQ(axis.origin(), 1000);
  EXPECT_EQ(axis.bins(), 1);
  EXPECT_EQ(grid.At(0, 0).count, 2);
}

TEST(RankRowsTest, GroupsConsecutiveRanksBeyondTheRowLimit) {
  std::vector<int> ranks;
  for (int r = 0; r < 1024; ++r) ranks.push_back(r);
  const RankRows rows(ranks, 128);
  EXPECT_EQ(rows.per_row(), 8);
  EXPECT_EQ(rows.rows(), 128);
  EXPECT_EQ(rows.RowOf(700), 87);
  EXPECT_EQ(rows.Label(87), "696-703");
  const RankRows few({0, 2, 5}, 128);
  EXPECT_EQ(few.per_row(), 1);
  EXPECT_EQ(few.Label(2), "5");
  const RankRows odd({0, 1, 2, 3, 4}, 2);
  EXPECT_EQ(odd.per_row(), 3);
  EXPECT_EQ(odd.rows(), 2);
  EXPECT_EQ(odd.Label(1), "3,4");  // FormatRankRanges spells a pair as a list
}

// ---- collective waits ----

struct Sum {
  int index;
  int64_t step, wait, delay;
};

class WaitsTest : public ::testing::Test {
 protected:
  CollectiveWaits::Sink Sink() {
    return [this](int index, int64_t step, int64_t wait, int64_t delay) {
      sums_.push_back({index, step, wait, delay});
    };
  }
  const Sum* Find(int index, int64_t step) const {
    for (const Sum& s : sums_)
      if (s.index == index && s.step == step) return &s;
    return nullptr;
  }
  std::vector<Sum> sums_;
};

TEST_F(WaitsTest, WaitIsLastEnterMinusOwnAndDelayIsOwnMinusFirst) {
  CollectiveWaits waits(3);
  // Two collectives in step 0; rank 2 is 10 late to both, rank 1 4 late to the first.
  waits.Add(0, 0, 0, 0, 100, 50);
  waits.Add(1, 0, 0, 0, 104, 50);
  waits.Add(2, 0, 0, 0, 110, 50);
  waits.Add(0, 0, 0, 1, 200, 50);
  waits.Add(1, 0, 0, 1, 200, 50);
  waits.Add(2, 0, 0, 1, 210, 50);
  EXPECT_EQ(waits.held(), 3u);  // both settled; only the step's sums wait for StepDone
  waits.StepDone(0, Sink());
  EXPECT_TRUE(sums_.empty());  // step 0 is handed out when step 1 is done
  waits.StepDone(1, Sink());
  ASSERT_EQ(sums_.size(), 3u);
  EXPECT_EQ(Find(0, 0)->wait, 20);
  EXPECT_EQ(Find(1, 0)->wait, 16);
  EXPECT_EQ(Find(2, 0)->wait, 0);
  EXPECT_EQ(Find(0, 0)->delay, 0);
  EXPECT_EQ(Find(1, 0)->delay, 4);
  EXPECT_EQ(Find(2, 0)->delay, 20);
  EXPECT_EQ(waits.entered_last()[2], 2);
  EXPECT_EQ(waits.collectives()[0], 2);
  EXPECT_EQ(waits.held(), 0u);
}

TEST_F(WaitsTest, WaitIsClampedToTheCollectivesDuration) {
  CollectiveWaits waits(2);
  waits.Add(0, 0, 0, 0, 0, 30);  // clock error: finished before the last enter
  waits.Add(1, 0, 0, 0, 100, 5);
  waits.Finish(Sink());
  ASSERT_EQ(sums_.size(), 2u);
  EXPECT_EQ(Find(0, 0)->wait, 30);
  EXPECT_EQ(Find(1, 0)->delay, 100);
}

TEST_F(WaitsTest, ACollectiveSomeRanksNeverEnterSettlesAtTheNextStep) {
  CollectiveWaits waits(3);
  waits.Add(0, 5, 0, 40, 1000, 500);
  waits.Add(1, 5, 0, 40, 1300, 500);  // rank 2 died before it
  waits.StepDone(5, Sink());
  EXPECT_EQ(waits.held(), 2u);
  waits.StepDone(6, Sink());
  ASSERT_EQ(sums_.size(), 2u);  // no sum for rank 2: it took no part
  EXPECT_EQ(Find(0, 5)->wait, 300);
  EXPECT_EQ(Find(2, 5), nullptr);
}

TEST_F(WaitsTest, GivesUpPastTheHoldingLimit) {
  CollectiveWaits waits(2, 10);
  for (int64_t seq = 0; seq < 11; ++seq) waits.Add(0, seq, 0, seq, seq * 100, 50);
  EXPECT_TRUE(waits.abandoned());
  waits.Finish(Sink());
  EXPECT_TRUE(sums_.empty());
}

// ---- configuration diff ----

analyzers::RankInfo Rank(int rank, std::map<std::string, std::string> env) {
  analyzers::RankInfo r;
  r.rank = rank;
  r.header.rank = rank;
  r.header.versions = {{"dsdiag", "0.1.0"}};
  r.header.env = std::move(env);
  r.header.config.Set("batch_size", 8);
  return r;
}

TEST(ConfigDiffTest, SplitsDifferingFromCommonWithRankLists) {
  const std::vector<analyzers::RankInfo> ranks = {
      Rank(0, {{"NCCL_DEBUG", "WARN"}, {"NCCL_ALGO", "Ring"}}),
      Rank(1, {{"NCCL_DEBUG", "INFO"}, {"NCCL_ALGO", "Ring"}}), Rank(2, {{"NCCL_DEBUG", "WARN"}}),
      Rank(3, {{"NCCL_DEBUG", "WARN"}, {"NCCL_ALGO", "Ring"}})};
  const ConfigDiff diff = DiffConfigs(ranks);
  ASSERT_EQ(diff.differing.size(), 2u);
  const ConfigKey& algo = diff.differing[0];
  EXPECT_EQ(algo.section, "env");
  EXPECT_EQ(algo.key, "NCCL_ALGO");
  ASSERT_EQ(algo.values.size(), 2u);
  EXPECT_EQ(algo.values[0].value, "Ring");
  EXPECT_EQ(algo.values[0].ranks, (std::vector<int>{0, 1, 3}));
  EXPECT_TRUE(algo.values[1].absent);
  EXPECT_EQ(algo.values[1].ranks, (std::vector<int>{2}));
  const ConfigKey& debug = diff.differing[1];
  EXPECT_EQ(debug.values[0].value, "WARN");  // most ranks first
  EXPECT_EQ(debug.values[1].ranks, (std::vector<int>{1}));
  ASSERT_EQ(diff.common.size(), 2u);
  EXPECT_EQ(diff.common[0].section, "versions");
  EXPECT_EQ(diff.common[1].key, "batch_size");
  EXPECT_EQ(diff.common[1].values[0].value, "8");
}

// ---- HTML pieces ----

TEST(HtmlTest, EscapesMarkupAndQuotes) {
  EXPECT_EQ(Escape("<b a=\"x\">'&'</b>"), "&lt;b a=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/b&gt;");
  EXPECT_EQ(Escape("plain · text"), "plain · text");
}

TEST(HtmlTest, FormatsNumbersForPeople) {
  EXPECT_EQ(Num(2.3291), "2.3291");
  EXPECT_EQ(Num(65536), "65536");
  EXPECT_EQ(Coord(1.005), "1");
  EXPECT_EQ(Coord(12.5), "12.5");
  EXPECT_EQ(Duration(850), "850 ns");
  EXPECT_EQ(Duration(31.2e6), "31.2 ms");
  EXPECT_EQ(Duration(4.05e9), "4.05 s");
  EXPECT_EQ(Thousands(1234567), "1,234,567");
  EXPECT_EQ(StepSpan(64, 127), "steps 64-127");
}

TEST(HtmlTest, HeatColorRunsFromPaleToDark) {
  EXPECT_EQ(HeatColor(0), "#fbf6e9");
  EXPECT_EQ(HeatColor(1), "#6b040f");
  EXPECT_EQ(HeatColor(-3), HeatColor(0));
  EXPECT_NE(HeatColor(0.5), HeatColor(0.55));
}

TEST(HtmlTest, NiceTicksAreRound) {
  EXPECT_EQ(NiceTicks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(NiceTicks(3, 47, 4), (std::vector<double>{20, 40}));
  EXPECT_EQ(NiceTicks(0, 100, 5), (std::vector<double>{0, 20, 40, 60, 80, 100}));
}

}  // namespace
}  // namespace dsdiag::report
