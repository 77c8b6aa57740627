// straggler, hang and collective-mismatch end to end: `dsdiag synth` writes the run, every
// analyzer of `dsdiag compare` reads it (RunCompare, in process).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzers/framework/compare.h"
#include "analyzers/framework/finding_kinds.h"
#include "tests/support/analysed_synth_run.h"

namespace dsdiag::analyzers {
namespace {

using SynthRun = test_support::AnalysedSynthRun;

int64_t EvidenceInt(const Finding& f, std::string_view key) {
  const trace::JsonValue* v = f.evidence.Find(key);
  return v ? v->as_int() : -1;
}

TEST(CollectiveGhostsSynthTest, CleanRunHasNoWarningOrError) {
  SynthRun run("--ranks 4 --steps 12");
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run.Serious(), "");
}

TEST(CollectiveGhostsSynthTest, ClockSkewAloneIsNoWarning) {
  SynthRun run("--ranks 4 --steps 12 --inject clock-skew:rank=2,ms=500");
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run.Serious(), "");
}

TEST(CollectiveGhostsSynthTest, StragglerOnTwoRanks) {
  SynthRun run("--ranks 2 --steps 10 --inject straggler:rank=1,ms=30");
  ASSERT_TRUE(run.ok());
  const auto s = run.Of(kind::kStraggler);
  ASSERT_EQ(s.size(), 1u) << run.Serious();
  EXPECT_EQ(s[0].ranks, std::vector<int>{1});
  EXPECT_EQ(s[0].evidence.Find("excess_phase")->as_string(), "backward");
}

TEST(CollectiveGhostsSynthTest, StragglerOnFourRanksWithAndWithoutClockSkew) {
  for (const std::string skew : {"", " --inject clock-skew:rank=2,ms=500"}) {
    SynthRun run("--ranks 4 --steps 10 --inject straggler:rank=1,ms=30" + skew);
    ASSERT_TRUE(run.ok());
    const auto s = run.Of(kind::kStraggler);
    ASSERT_EQ(s.size(), 1u) << skew << "\n" << run.Serious();
    EXPECT_EQ(s[0].ranks, std::vector<int>{1}) << skew;
    EXPECT_EQ(s[0].severity, Severity::kWarning) << skew;
    EXPECT_EQ(run.Serious(), "straggler " + s[0].summary + "\n") << "nothing else: " << skew;
  }
}

TEST(CollectiveGhostsSynthTest, StragglerWithSkewOnTheStragglerItself) {
  SynthRun run(
      "--ranks 4 --steps 10 --inject straggler:rank=3,ms=20 "
      "--inject clock-skew:rank=3,ms=800");
  ASSERT_TRUE(run.ok());
  const auto s = run.Of(kind::kStraggler);
  ASSERT_EQ(s.size(), 1u) << run.Serious();
  EXPECT_EQ(s[0].ranks, std::vector<int>{3});
}

TEST(CollectiveGhostsSynthTest, HangNamesTheRankTheStepAndTheCollective) {
  SynthRun run("--ranks 4 --steps 10 --inject hang:rank=2,step=5");
  ASSERT_TRUE(run.ok());
  const auto h = run.Of(kind::kHang);
  ASSERT_EQ(h.size(), 1u) << run.Serious();
  EXPECT_EQ(h[0].severity, Severity::kError);
  EXPECT_EQ(h[0].ranks, std::vector<int>{2});
  EXPECT_EQ(h[0].step, 5);
  // synth: three gradient buckets a step, so step 5's first allreduce is seq 15.
  EXPECT_EQ(EvidenceInt(h[0], "seq"), 15);
  EXPECT_EQ(h[0].subject, "allreduce pg 0 seq 15 (grad-bucket-0)");
  EXPECT_NE(h[0].summary.find("stopped writing"), std::string::npos) << h[0].summary;
  const trace::JsonValue* waiters = h[0].evidence.Find("waiters");
  EXPECT_EQ(waiters->Find("ranks")->ToJson(), "[0,1,3]");
  EXPECT_NEAR(waiters->Find("waited_max_s")->as_double(), 60.0, 0.5);
  // The culprit's death is rank-died's to report, with the hang beside it.
  bool culprit_died = false;
  for (const Finding& f : run.Of(kind::kRankDied))
    if (f.ranks == std::vector<int>{2}) culprit_died = true;
  EXPECT_TRUE(culprit_died);
}

TEST(CollectiveGhostsSynthTest, CrashIsRankDiedNotAHang) {
  SynthRun run("--ranks 4 --steps 10 --inject crash:rank=1,step=3");
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run.Of(kind::kHang).empty()) << run.Serious();
  const auto died = run.Of(kind::kRankDied);
  ASSERT_FALSE(died.empty());
  EXPECT_EQ(died[0].ranks, std::vector<int>{1});
}

TEST(CollectiveGhostsSynthTest, CollectiveMismatchNamesTheRankTheStepAndTheSeq) {
  SynthRun run("--ranks 4 --steps 8 --inject collective-mismatch:rank=2,step=4");
  ASSERT_TRUE(run.ok());
  const auto m = run.Of(kind::kCollectiveMismatch);
  ASSERT_EQ(m.size(), 1u) << run.Serious();
  EXPECT_EQ(m[0].severity, Severity::kError);
  EXPECT_EQ(m[0].ranks, std::vector<int>{2});
  EXPECT_EQ(m[0].step, 4);
  EXPECT_EQ(m[0].subject, "pg 0 seq 12");
  EXPECT_EQ(EvidenceInt(m[0], "mismatched_collectives"), 1);
  EXPECT_EQ(run.Serious(), "collective-mismatch " + m[0].summary + "\n") << "nothing else";
}

TEST(CollectiveGhostsSynthTest, ThousandRanksStragglerAndHangNameTheRightRanks) {
  SynthRun run(
      "--ranks 1024 --steps 20 --inject straggler:rank=777,ms=30 "
      "--inject hang:rank=513,step=12 --inject clock-skew:rank=5,ms=500");
  ASSERT_TRUE(run.ok());
  const auto s = run.Of(kind::kStraggler);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].ranks, std::vector<int>{777});
  const auto h = run.Of(kind::kHang);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].ranks, std::vector<int>{513});
  EXPECT_EQ(h[0].step, 12);
  EXPECT_EQ(EvidenceInt(h[0], "seq"), 36);
  EXPECT_EQ(h[0].evidence.Find("waiters")->Find("count")->as_int(), 1023);
  EXPECT_TRUE(run.Of(kind::kCollectiveMismatch).empty());
}

TEST(CollectiveGhostsSynthTest, ThousandRanksCleanIsQuiet) {
  SynthRun run("--ranks 1024 --steps 4");
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run.Serious(), "");
}

}  // namespace
}  // namespace dsdiag::analyzers
