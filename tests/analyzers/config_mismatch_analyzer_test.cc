#include <gtest/gtest.h>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "tests/analyzers/analyzer_test_util.h"
#include "tests/analyzers/test_run.h"

namespace dsdiag::analyzers {
namespace {

using testing::Evidence;
using testing::RunOne;
using testing::TestRun;

std::vector<Finding> Analyze(const TestRun& run) {
  return RunOne(CreateConfigMismatchAnalyzer(), run.dir());
}

const Finding* BySubject(const std::vector<Finding>& findings, const std::string& subject) {
  for (const auto& f : findings)
    if (f.subject == subject) return &f;
  return nullptr;
}

TEST(ConfigMismatchAnalyzerTest, IdenticalHeadersGiveNothing) {
  TestRun run;
  for (int r = 0; r < 4; ++r) run.WriteCleanRank(TestRun::Header(r, 4), 1);
  EXPECT_TRUE(Analyze(run).empty());  // LOCAL_RANK differs, by design
}

TEST(ConfigMismatchAnalyzerTest, OddRanksAreTheMinorityAndEachKeyIsOneFinding) {
  TestRun run;
  for (int r = 0; r < 4; ++r) {
    auto h = TestRun::Header(r, 4);
    if (r == 2) {
      h.config.Set("batch_size", 16);
      h.versions["libtorch"] = "2.1.0";
      h.env["OMP_NUM_THREADS"] = "8";
      h.env["RANK"] = "2";  // per-rank by design: never compared
    }
    run.WriteCleanRank(h, 1);
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 3u);

  const Finding* batch = BySubject(findings, "config.batch_size");
  ASSERT_NE(batch, nullptr);
  EXPECT_EQ(batch->kind, kind::kConfigMismatch);
  EXPECT_EQ(batch->severity, Severity::kError);
  EXPECT_EQ(batch->ranks, std::vector<int>{2});
  EXPECT_FALSE(batch->step.has_value());
  EXPECT_EQ(Evidence(*batch, "values"),
            "[{\"value\":8,\"ranks\":[0,1,3]},{\"value\":16,\"ranks\":[2]}]");
  EXPECT_EQ(batch->summary, "config.batch_size differs: 16 on rank 2 vs 8 on ranks 0,1,3");

  const Finding* torch = BySubject(findings, "versions.libtorch");
  ASSERT_NE(torch, nullptr);
  EXPECT_EQ(torch->severity, Severity::kError);

  const Finding* omp = BySubject(findings, "env.OMP_NUM_THREADS");
  ASSERT_NE(omp, nullptr);
  EXPECT_EQ(omp->severity, Severity::kWarning);
  EXPECT_EQ(omp->ranks, std::vector<int>{2});
}

TEST(ConfigMismatchAnalyzerTest, AKeyOnSomeRanksOnlyIsADifference) {
  TestRun run;
  auto h0 = TestRun::Header(0, 2);
  auto h1 = TestRun::Header(1, 2);
  h1.env["NCCL_DEBUG"] = "INFO";
  h1.config.Set("clip_norm", 1.0);
  run.WriteCleanRank(h0, 1);
  run.WriteCleanRank(h1, 1);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 2u);
  const Finding* nccl = BySubject(findings, "env.NCCL_DEBUG");
  ASSERT_NE(nccl, nullptr);
  // One rank each: a tie, no majority, both named (at two ranks a vote blames one at random).
  EXPECT_EQ(nccl->ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(Evidence(*nccl, "majority"), "false");
  EXPECT_NE(nccl->summary.find("no majority"), std::string::npos) << nccl->summary;
  EXPECT_EQ(Evidence(*nccl, "values"),
            "[{\"value\":null,\"absent\":true,\"ranks\":[0]},{\"value\":\"INFO\",\"ranks\":[1]}]");
  EXPECT_NE(BySubject(findings, "config.clip_norm"), nullptr);
}

TEST(ConfigMismatchAnalyzerTest, WorldSizeDisagreementIsAnError) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 3), 1);
  run.WriteCleanRank(TestRun::Header(1, 3), 1);
  run.WriteCleanRank(TestRun::Header(2, 4), 1);
  const auto findings = Analyze(run);
  const Finding* ws = BySubject(findings, "world_size");
  ASSERT_NE(ws, nullptr);
  EXPECT_EQ(ws->severity, Severity::kError);
  EXPECT_EQ(ws->ranks, std::vector<int>{2});
}

// Determinism switches set by folklore on some ranks only: a warning naming the switch.
TEST(ConfigMismatchAnalyzerTest, ADeterminismSwitchOnOneRankIsAWarning) {
  TestRun run;
  for (int r = 0; r < 3; ++r) {
    auto h = TestRun::Header(r, 3);
    trace::JsonValue det = trace::JsonValue::Object();
    det.Set("cudnn_benchmark", r == 1);
    det.Set("intra_op_threads", 1);
    h.sections.Set("determinism", std::move(det));
    run.WriteCleanRank(h, 1);
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].subject, "determinism.cudnn_benchmark");
  EXPECT_EQ(findings[0].severity, Severity::kWarning);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
}

TEST(ConfigMismatchAnalyzerTest, ManyValuesAreListedUpToALimit) {
  TestRun run;
  for (int r = 0; r < 12; ++r) {
    auto h = TestRun::Header(r, 12);
    h.env["NCCL_SOCKET_IFNAME"] = "eth" + std::to_string(r);
    run.WriteCleanRank(h, 1);
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(Evidence(findings[0], "distinct_values"), "12");
  EXPECT_EQ(findings[0].evidence.Find("values")->elements().size(), 8u);
  EXPECT_EQ(findings[0].ranks.size(), 12u);  // twelve values, one rank each: no majority
}

// An even split of four: two against two names all four; three against one names the one.
TEST(ConfigMismatchAnalyzerTest, AnEvenSplitOfFourNamesEveryRankAndThreeAgainstOneTheOne) {
  for (int odd : {2, 1}) {
    TestRun run;
    for (int r = 0; r < 4; ++r) {
      auto h = TestRun::Header(r, 4);
      h.config.Set("batch_size", r >= 4 - odd ? 16 : 8);
      run.WriteCleanRank(h, 1);
    }
    const auto findings = Analyze(run);
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].ranks, odd == 2 ? (std::vector<int>{0, 1, 2, 3}) : std::vector<int>{3});
  }
}

}  // namespace
}  // namespace dsdiag::analyzers
