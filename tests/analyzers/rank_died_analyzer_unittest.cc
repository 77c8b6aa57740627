#include <gtest/gtest.h>

#include "analyzers/analyzer_factories.h"
#include "analyzers/finding_kinds.h"
#include "tests/analyzers/analyzer_test_util.h"
#include "tests/analyzers/test_run.h"
#include "trace/record_types.h"

namespace dsdiag::analyzers {
namespace {

using testing::Evidence;
using testing::RunOne;
using testing::TestRun;

std::vector<Finding> Analyze(const TestRun& run) {
  return RunOne(CreateRankDiedAnalyzer(), run.dir());
}

// A rank that runs `steps` steps, begins one more, finishes `phase` in it and stops dead.
void WriteDeadRank(TestRun* run, int rank, int world_size, int steps, std::string_view phase) {
  auto w = run->Open(TestRun::Header(rank, world_size));
  TestRun::WriteSteps(w.get(), 0, steps);
  w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
  w->Begin(trace::rec::kPhase).line().Field("name", phase).Field("dur", int64_t{10});
}

void WriteEndedRank(TestRun* run, int rank, int world_size, int steps, std::string_view reason,
                    int status, std::string_view key = {}, std::string_view detail = {}) {
  auto w = run->Open(TestRun::Header(rank, world_size));
  TestRun::WriteSteps(w.get(), 0, steps);
  TestRun::WriteEnd(w.get(), reason, status, key, detail);
}

TEST(RankDiedAnalyzerTest, CleanRunGivesNothing) {
  TestRun run;
  for (int r = 0; r < 3; ++r) run.WriteCleanRank(TestRun::Header(r, 3), 2);
  EXPECT_TRUE(Analyze(run).empty());
}

TEST(RankDiedAnalyzerTest, TraceWithoutEndIsAnErrorAtTheLastStepBegun) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 5);
  WriteDeadRank(&run, 1, 2, 3, "forward");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kRankDied);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(f.step, 3);
  EXPECT_EQ(f.summary,
            "rank 1 stopped during step 3 without an end record (last phase done: forward)");
  EXPECT_EQ(Evidence(f, "file"), "\"rank-00001.jsonl\"");
  EXPECT_EQ(Evidence(f, "last_step_done"), "2");
  EXPECT_EQ(Evidence(f, "last_phase_done"), "\"forward\"");
  EXPECT_EQ(Evidence(f, "peers_max_step"), "4");
  EXPECT_EQ(Evidence(f, "pid"), "101");
  EXPECT_EQ(f.ts_rank, 1);
  EXPECT_TRUE(f.ts_ns.has_value());
}

TEST(RankDiedAnalyzerTest, MissingRanksAreOneErrorSayingThereIsNoFile) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 4), 1);
  run.WriteCleanRank(TestRun::Header(2, 4), 1);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kError);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{1, 3}));
  EXPECT_FALSE(findings[0].step.has_value());
  EXPECT_EQ(Evidence(findings[0], "expected_files"), "[\"rank-00001.jsonl\",\"rank-00003.jsonl\"]");
  EXPECT_NE(findings[0].summary.find("no trace"), std::string::npos);
}

TEST(RankDiedAnalyzerTest, SignalAndErrorEndsAreErrorsNamingTheCause) {
  TestRun run;
  WriteEndedRank(&run, 0, 3, 2, "signal", 143, "signal", "SIGTERM");
  WriteEndedRank(&run, 1, 3, 1, "error", 1, "error", "CUDA out of memory");
  run.WriteCleanRank(TestRun::Header(2, 3), 2);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 2u);
  // Rank 1 failed during step 0, rank 0 during step 1: by step.
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
  EXPECT_NE(findings[0].summary.find("CUDA out of memory"), std::string::npos);
  EXPECT_EQ(Evidence(findings[0], "error"), "\"CUDA out of memory\"");
  EXPECT_EQ(findings[1].ranks, std::vector<int>{0});
  EXPECT_EQ(findings[1].severity, Severity::kError);
  EXPECT_NE(findings[1].summary.find("SIGTERM"), std::string::npos) << findings[1].summary;
  EXPECT_EQ(Evidence(findings[1], "status"), "143");
}

TEST(RankDiedAnalyzerTest, SigtermAfterASilentDeathIsAFollowOnInfo) {
  TestRun run;
  WriteEndedRank(&run, 0, 3, 5, "signal", 143, "signal", "SIGTERM");
  WriteDeadRank(&run, 1, 3, 4, "forward");
  WriteEndedRank(&run, 2, 3, 5, "signal", 143, "signal", "SIGKILL");
  auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 3u);
  // The silent death and the SIGKILL are errors; the SIGTERM the launcher sent is not.
  EXPECT_EQ(findings[0].severity, Severity::kError);
  EXPECT_EQ(findings[1].severity, Severity::kError);
  const Finding& follow_on = findings[2];
  EXPECT_EQ(follow_on.severity, Severity::kInfo);
  EXPECT_EQ(follow_on.ranks, std::vector<int>{0});
  EXPECT_EQ(Evidence(follow_on, "after_deaths_of"), "[1]");
  // The dead rank's finding says what the others saw.
  EXPECT_EQ(Evidence(findings[0], "survivors"),
            "[{\"rank\":0,\"ended\":\"signal\",\"detail\":\"SIGTERM\",\"last_step_begun\":4},"
            "{\"rank\":2,\"ended\":\"signal\",\"detail\":\"SIGKILL\",\"last_step_begun\":4}]");
  EXPECT_NE(follow_on.summary.find("follow-on"), std::string::npos) << follow_on.summary;
}

TEST(RankDiedAnalyzerTest, ManyRanksEndingAlikeAreOneFinding) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 12), 3);
  for (int r = 1; r < 12; ++r)
    WriteEndedRank(&run, r, 12, 3, "error", 1, "error", "collective timeout: allreduce seq 9");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks.size(), 11u);
  EXPECT_EQ(findings[0].severity, Severity::kError);
  EXPECT_NE(findings[0].summary.find("11 ranks (1-11)"), std::string::npos) << findings[0].summary;
  EXPECT_NE(findings[0].summary.find("collective timeout"), std::string::npos);
  EXPECT_EQ(Evidence(findings[0], "ranks_alike"), "11");
}

TEST(RankDiedAnalyzerTest, PeerFailureIsInfoWhenTheFailureIsHere) {
  TestRun run;
  WriteEndedRank(&run, 0, 3, 2, "peer-failure", 1);
  WriteDeadRank(&run, 1, 3, 2, "backward");
  WriteEndedRank(&run, 2, 3, 2, "peer-failure", 1);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 2u);
  const Finding& peers = findings[1].severity == Severity::kInfo ? findings[1] : findings[0];
  EXPECT_EQ(peers.severity, Severity::kInfo);
  EXPECT_EQ(peers.ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(Evidence(peers, "failed_ranks"), "[1]");
}

TEST(RankDiedAnalyzerTest, PeerFailureWithoutAFailedRankIsAWarning) {
  TestRun run;
  WriteEndedRank(&run, 0, 2, 2, "peer-failure", 1);
  run.WriteCleanRank(TestRun::Header(1, 2), 2);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kWarning);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{0});
}

TEST(RankDiedAnalyzerTest, EveryRankStoppingSilentlyIsOneFinding) {
  TestRun run;
  WriteDeadRank(&run, 0, 3, 4, "sync");
  WriteDeadRank(&run, 1, 3, 2, "forward");
  WriteDeadRank(&run, 2, 3, 4, "sync");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(f.step, 2);  // the earliest
  EXPECT_EQ(f.summary.rfind("all 3 ranks", 0), 0u) << f.summary;
  EXPECT_EQ(Evidence(f, "count"), "3");
  // The rank that stopped first is listed first.
  EXPECT_EQ(Evidence(f, "earliest").rfind("[{\"rank\":1,", 0), 0u) << Evidence(f, "earliest");
}

TEST(RankDiedAnalyzerTest, UnknownEndReasonIsAWarning) {
  TestRun run;
  WriteEndedRank(&run, 0, 2, 1, "destroyed", 0);
  run.WriteCleanRank(TestRun::Header(1, 2), 1);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kWarning);
  EXPECT_EQ(Evidence(findings[0], "reason"), "\"destroyed\"");
}

}  // namespace
}  // namespace dsdiag::analyzers
