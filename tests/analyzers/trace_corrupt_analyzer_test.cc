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
  return RunOne(CreateTraceCorruptAnalyzer(), run.dir());
}

TEST(TraceCorruptAnalyzerTest, CleanTracesGiveNothing) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 2);
  run.WriteCleanRank(TestRun::Header(1, 2), 2);
  EXPECT_TRUE(Analyze(run).empty());
}

TEST(TraceCorruptAnalyzerTest, MidFileDamageIsAWarningWithExamples) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 1);
  {
    auto w = run.Open(TestRun::Header(1, 2));
    TestRun::WriteSteps(w.get(), 0, 1);
  }
  run.AppendRaw("rank-00001.jsonl", "{\"type\":\"step\",\"ts\":\"late\",\"step\":1}\nnot json\n");
  {
    // The rank goes on writing after the damage: reading must go on too.
    run.AppendRaw("rank-00001.jsonl",
                  "{\"type\":\"end\",\"ts\":9,\"step\":1,\"reason\":\"ok\",\"status\":0}\n");
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kTraceCorrupt);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(f.subject, "rank-00001.jsonl");
  EXPECT_EQ(Evidence(f, "malformed_lines"), "2");
  EXPECT_EQ(Evidence(f, "truncated_tail"), "false");
  // header + step 0 (7 records) = lines 1..8; the bad lines are 9 and 10.
  const std::string examples = Evidence(f, "examples");
  EXPECT_NE(examples.find("rank-00001.jsonl:9:"), std::string::npos) << examples;
  EXPECT_NE(examples.find("integer field \\\"ts\\\""), std::string::npos) << examples;
  EXPECT_NE(examples.find("rank-00001.jsonl:10:1"), std::string::npos) << examples;
  EXPECT_NE(f.summary.find("first at line 9"), std::string::npos) << f.summary;
}

TEST(TraceCorruptAnalyzerTest, TruncatedTailAloneIsInfo) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 1);
  {
    auto w = run.Open(TestRun::Header(1, 2));
    TestRun::WriteSteps(w.get(), 0, 1);
  }
  run.AppendRaw("rank-00001.jsonl", "{\"type\":\"step_begin\",\"ts\":4");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kInfo);
  EXPECT_EQ(Evidence(findings[0], "line"), "9");
  EXPECT_EQ(Evidence(findings[0], "end_record"), "false");
}

TEST(TraceCorruptAnalyzerTest, ExcludedFilesAreErrorsNamingFileAndLine) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 3), 1);
  run.WriteCleanRank(TestRun::Header(1, 3), 1);
  run.WriteFile("rank-00002.jsonl", "garbage\n{\"type\":\"end\",\"ts\":1,\"step\":0}\n");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(f.subject, "rank-00002.jsonl");
  EXPECT_EQ(Evidence(f, "reason"), "\"no-header\"");
  EXPECT_EQ(Evidence(f, "line"), "1");
  EXPECT_EQ(Evidence(f, "column"), "1");
  EXPECT_FALSE(f.hint.empty());
}

TEST(TraceCorruptAnalyzerTest, ForeignRunIdIsAnError) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 3), 1);
  run.WriteCleanRank(TestRun::Header(1, 3), 1);
  auto stray = TestRun::Header(2, 3);
  stray.run_id = "yesterday";
  run.WriteCleanRank(stray, 1);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(Evidence(findings[0], "reason"), "\"foreign-run-id\"");
  EXPECT_NE(findings[0].summary.find("yesterday"), std::string::npos) << findings[0].summary;
}

}  // namespace
}  // namespace dsdiag::analyzers
