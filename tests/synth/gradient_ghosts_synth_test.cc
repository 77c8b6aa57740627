// grad-desync and no-broadcast end to end, at scale: `dsdiag synth` writes the run, every
// analyzer of `dsdiag compare` reads it (RunCompare, in process).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzers/framework/compare.h"
#include "analyzers/framework/finding_kinds.h"
#include "tests/support/analysed_synth_run.h"

namespace dsdiag::synth {
namespace {

using analyzers::Finding;
using analyzers::Severity;
namespace kind = analyzers::kind;

using AnalysedRun = test_support::AnalysedSynthRun;

std::vector<int> AllBut0(int ranks) {
  std::vector<int> out;
  for (int r = 1; r < ranks; ++r) out.push_back(r);
  return out;
}

TEST(GradientGhostsSynthTest, CleanRunHasNoWarningOrError) {
  AnalysedRun run("--ranks 64 --steps 12");
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run.Serious(), "");
}

TEST(GradientGhostsSynthTest, GradDesyncOnAThousandRanksNamesTheRankAndTheStep) {
  AnalysedRun run("--ranks 1024 --steps 20 --inject grad-desync:rank=5,step=3");
  ASSERT_TRUE(run.ok());
  const auto d = run.Of(kind::kGradDesync);
  ASSERT_EQ(d.size(), 1u) << run.Serious();
  EXPECT_EQ(d[0].severity, Severity::kError);
  EXPECT_EQ(d[0].ranks, std::vector<int>{5});
  EXPECT_EQ(d[0].step, 3);
  EXPECT_EQ(d[0].evidence.Find("basis")->as_string(), "changed after the sync");
  // The replica drifted: first seen at the next parameter fingerprint (periodic, step 10),
  // a follow-on of the desync.
  const auto r = run.Of(kind::kReplicaDivergence);
  ASSERT_EQ(r.size(), 1u) << run.Serious();
  EXPECT_EQ(r[0].severity, Severity::kInfo);
  EXPECT_NE(r[0].evidence.Find("follow_on_of"), nullptr);
  EXPECT_EQ(r[0].ranks, std::vector<int>{5});
  EXPECT_EQ(r[0].step, 10);
  EXPECT_TRUE(run.Of(kind::kInitDivergence).empty()) << run.Serious();
}

TEST(GradientGhostsSynthTest, NoBroadcastIsInitDivergenceOfEveryRankButTheSource) {
  AnalysedRun run("--ranks 64 --steps 12 --inject no-broadcast");
  ASSERT_TRUE(run.ok());
  const auto i = run.Of(kind::kInitDivergence);
  ASSERT_EQ(i.size(), 1u) << run.Serious();
  EXPECT_EQ(i[0].severity, Severity::kError);
  EXPECT_EQ(i[0].ranks, AllBut0(64));
  EXPECT_EQ(i[0].step, 0);
  // Replicas never were equal: that is init-divergence's alone, and gradients still agree.
  EXPECT_TRUE(run.Of(kind::kReplicaDivergence).empty()) << run.Serious();
  EXPECT_TRUE(run.Of(kind::kGradDesync).empty()) << run.Serious();
}

}  // namespace
}  // namespace dsdiag::synth
