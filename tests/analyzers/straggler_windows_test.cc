// The straggler persistence test on synthetic per-window numbers: windows aligned on step
// numbers whatever the run's length, and the sign test's tail.
#include "analyzers/kinds/straggler/straggler_windows.h"

#include <gtest/gtest.h>

namespace dsdiag::analyzers::straggler {
namespace {

TEST(StragglerWindowsTest, ShortRunsHaveOneStepPerWindow) {
  WindowSeries s;
  for (int step = 0; step < 10; ++step) s.Add(step, 1000.0 * step);
  EXPECT_EQ(s.len(), 1);
  const auto windows = s.At(1);
  ASSERT_EQ(windows.size(), 10u);
  EXPECT_EQ(windows[7].first, 7);
  EXPECT_DOUBLE_EQ(windows[7].second.sum, 7000);
  EXPECT_EQ(windows[7].second.steps, 1);
}

TEST(StragglerWindowsTest, LongRunsMergeWindowsAndKeepAtMost64) {
  WindowSeries s;
  for (int step = 0; step < 1000; ++step) s.Add(step, 1);
  EXPECT_EQ(s.len(), 16);  // 1000 steps in 63 windows of 16
  const auto windows = s.At(16);
  EXPECT_EQ(windows.size(), 63u);
  EXPECT_EQ(windows.front().second.steps, 16);
  EXPECT_EQ(windows.back().first, 62);
  EXPECT_EQ(windows.back().second.steps, 1000 - 62 * 16);
}

// A rank that joined late (a resumed run's step numbers) and one that merged further are
// compared window by window at the coarser length.
TEST(StragglerWindowsTest, RanksAreComparedOnTheSameSteps) {
  WindowSeries a, b;
  for (int step = 0; step < 100; ++step) a.Add(step, 1);
  for (int step = 40; step < 100; ++step) b.Add(step, 1);
  EXPECT_EQ(a.len(), 2);
  EXPECT_EQ(b.len(), 1);
  const auto at = b.At(2);
  EXPECT_EQ(at.begin()->first, 20);  // steps 40 and 41
  EXPECT_EQ(at.begin()->second.steps, 2);
}

TEST(StragglerWindowsTest, AStepBeforeTheFirstOneSeenIsKept) {
  WindowSeries s;
  s.Add(5, 1);
  s.Add(4, 2);
  const auto windows = s.At(1);
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_EQ(windows[0].first, 4);
  EXPECT_DOUBLE_EQ(windows[0].second.sum, 2);
}

TEST(StragglerWindowsTest, TheSignTestsTailIsTheBinomials) {
  EXPECT_DOUBLE_EQ(UpperTail(10, 10), 1.0 / 1024);
  EXPECT_NEAR(UpperTail(10, 9), 11.0 / 1024, 1e-12);
  EXPECT_NEAR(UpperTail(40, 26), 0.0403, 1e-4);
  EXPECT_DOUBLE_EQ(UpperTail(5, 0), 1);
  EXPECT_DOUBLE_EQ(UpperTail(0, 0), 1);
  EXPECT_DOUBLE_EQ(UpperTail(3, 4), 0);
}

// Three ranks, 20 windows: rank 2 later than the median in every window, ranks 0 and 1
// taking turns at being the median (a tie, left out) and below it.
TEST(StragglerWindowsTest, ARankLateInEveryWindowStandsOutOthersDoNot) {
  WindowSeries r0, r1, r2;
  for (int step = 0; step < 20; ++step) {
    r0.Add(step, step % 2 ? 3 : 1);
    r1.Add(step, 2);
    r2.Add(step, 9);
  }
  const auto p = TestPersistence({&r0, &r1, &r2});
  EXPECT_EQ(p[2].windows, 20);
  EXPECT_EQ(p[2].late, 20);
  EXPECT_LT(p[2].p, 1e-6);
  for (int r : {0, 1}) {
    EXPECT_EQ(p[r].windows, 10) << r;
    EXPECT_EQ(p[r].late, 0) << r;
  }
  EXPECT_DOUBLE_EQ(p[0].p, 1);
}

TEST(StragglerWindowsTest, RanksNotJudgedTakeNoPart) {
  WindowSeries a, b;
  for (int step = 0; step < 8; ++step) {
    a.Add(step, 5);
    b.Add(step, 1);
  }
  const auto p = TestPersistence({&a, nullptr, &b});
  EXPECT_EQ(p[0].late, 8);
  EXPECT_EQ(p[1].windows, 0);
  EXPECT_EQ(p[2].late, 0);
}

}  // namespace
}  // namespace dsdiag::analyzers::straggler
