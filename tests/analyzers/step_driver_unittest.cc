#include "analyzers/step_driver.h"

#include <gtest/gtest.h>

#include "analyzers/run_loader.h"
#include "tests/analyzers/test_run.h"
#include "trace/record_types.h"

namespace dsdiag::analyzers {
namespace {

using testing::TestRun;

// Logs every call as a short string: "r<rank>:<type>@<step>", "done <step>", "end r<rank>".
class LoggingAnalyzer : public Analyzer {
 public:
  explicit LoggingAnalyzer(std::vector<std::string>* log, bool records = true)
      : log_(log), records_(records) {}
  std::string_view name() const override { return "logging"; }
  bool wants_records() const override { return records_; }
  void Begin(const RunContext& run) override {
    log_->push_back("begin " + std::to_string(run.ranks.size()));
  }
  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    // Phases are noise for these tests; keep step boundaries and custom records.
    if (r.type() == trace::rec::kPhase || r.type() == trace::rec::kStep) return;
    log_->push_back("r" + std::to_string(rank.rank) + ":" + std::string(r.type()) + "@" +
                    std::to_string(r.step()));
  }
  void OnRankEnd(const RankInfo& rank, const RankEnd&) override {
    log_->push_back("end r" + std::to_string(rank.rank));
  }
  void OnStepDone(int64_t step) override { log_->push_back("done " + std::to_string(step)); }
  void Finish(const RunContext&, std::vector<Finding>*) override {}

 private:
  std::vector<std::string>* log_;
  bool records_;
};

std::vector<std::string> Drive(const std::string& dir, const DriveOptions& options,
                               DriveResult* result = nullptr, bool records = true) {
  std::vector<std::string> log;
  std::vector<std::unique_ptr<Analyzer>> analyzers;
  analyzers.push_back(std::make_unique<LoggingAnalyzer>(&log, records));
  const RunContext run = LoadRun(dir);
  DriveResult r = DriveRun(run, analyzers, options);
  if (result) *result = std::move(r);
  return log;
}

TEST(StepDriverTest, RanksAdvanceTogetherStepByStep) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 2);
  {
    auto w = run.Open(TestRun::Header(1, 2));
    TestRun::WriteSteps(w.get(), 0, 1);  // rank 1 stops after step 0, no end
  }
  const std::vector<std::string> want = {
      "begin 2",         "r0:step_begin@0", "r1:step_begin@0", "end r1", "done 0",
      "r0:step_begin@1", "done 1",          "r0:end@2",        "end r0", "done 2",
  };
  EXPECT_EQ(Drive(run.dir(), {}), want);
}

TEST(StepDriverTest, LaggingHelperRecordsAreDeliveredAndStepsNeverGoBack) {
  TestRun run;
  {
    auto w = run.Open(TestRun::Header(0, 1));
    TestRun::WriteSteps(w.get(), 0, 2);
    w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);  // step 2
    // A helper thread stamps the step it last saw: one behind the main thread.
    w->SetStep(1);
    w->Begin(trace::rec::kCustom).line().Field("name", "late");
    w->SetStep(5);  // a resumed run jumps ahead: steps 3..4 have no records
    w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
  const std::vector<std::string> want = {
      "begin 1",         "r0:step_begin@0", "done 0",      "r0:step_begin@1",
      "done 1",          "r0:step_begin@2", "r0:custom@1", "done 2",
      "r0:step_begin@5", "r0:end@5",        "end r0",      "done 5",
  };
  EXPECT_EQ(Drive(run.dir(), {}), want);
}

TEST(StepDriverTest, RankEndSaysHowTheTraceStopped) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 3);
  {
    auto w = run.Open(TestRun::Header(1, 2));
    TestRun::WriteSteps(w.get(), 0, 1);
    w->SetStep(1);
    w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
    w->Begin(trace::rec::kPhase).line().Field("name", "forward").Field("dur", int64_t{5});
  }
  run.AppendRaw("rank-00001.jsonl", "{\"type\":\"pha");
  DriveResult result;
  Drive(run.dir(), {}, &result, /*records=*/false);
  ASSERT_EQ(result.ends.size(), 2u);
  const RankEnd& clean = result.ends[0];
  EXPECT_TRUE(clean.end_seen);
  EXPECT_EQ(clean.reason, "ok");
  EXPECT_EQ(clean.status, 0);
  EXPECT_EQ(clean.last_step_begun, 2);
  EXPECT_EQ(clean.last_step_done, 2);
  EXPECT_EQ(clean.issue_count, 0);

  const RankEnd& died = result.ends[1];
  EXPECT_FALSE(died.end_seen);
  EXPECT_EQ(died.last_step_begun, 1);
  EXPECT_EQ(died.last_step_done, 0);
  EXPECT_EQ(died.last_phase, "forward");
  EXPECT_TRUE(died.truncated_tail);
  EXPECT_EQ(died.issue_count, 1);
  EXPECT_EQ(died.records, 1 + 7 + 2);  // header, step 0 (begin, 5 phases, step), step 1's two
  EXPECT_TRUE(died.last_ts.has_value());
}

TEST(StepDriverTest, FallsBackToPerRankPassesAboveTheOpenFileLimit) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 2);
  run.WriteCleanRank(TestRun::Header(1, 2), 1);
  DriveOptions options;
  options.max_open_files = 1;
  DriveResult result;
  const std::vector<std::string> want = {
      "begin 2",  "r0:step_begin@0", "r0:step_begin@1", "r0:end@2", "end r0", "r1:step_begin@0",
      "r1:end@1", "end r1",          "done 0",          "done 1",   "done 2",
  };
  EXPECT_EQ(Drive(run.dir(), options, &result), want);
  EXPECT_FALSE(result.lockstep);
  EXPECT_EQ(result.steps_done, 3);
}

}  // namespace
}  // namespace dsdiag::analyzers
