#include "analyzers/framework/step_driver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <tuple>

#include "analyzers/framework/input_error.h"
#include "analyzers/framework/run_loader.h"
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

std::vector<std::string> DriveWithJobs(const std::string& dir, DriveOptions options, int jobs,
                                       DriveResult* result = nullptr, bool records = true) {
  options.jobs = jobs;
  std::vector<std::string> log;
  std::vector<std::unique_ptr<Analyzer>> analyzers;
  analyzers.push_back(std::make_unique<LoggingAnalyzer>(&log, records));
  const RunContext run = LoadRun(dir);
  DriveResult r = DriveRun(run, analyzers, options);
  if (result) *result = std::move(r);
  return log;
}

// Drives on the driver thread alone (jobs 1) in lockstep (unless `options` asks for another
// window), then with reader threads (jobs 2 and 3), then read ahead on one thread in the same
// window (parse_ahead.h): all must call the analyzers alike. Returns the serial log.
std::vector<std::string> Drive(const std::string& dir, DriveOptions options,
                               DriveResult* result = nullptr, bool records = true) {
  if (options.step_window == 0) options.step_window = 1;
  DriveResult serial;
  std::vector<std::string> log = DriveWithJobs(dir, options, 1, &serial, records);
  EXPECT_EQ(serial.reader_threads, 0);
  for (int jobs : {2, 3, 0}) {  // 0: read ahead
    DriveResult threaded;
    DriveOptions variant = options;
    variant.force_parse_ahead = jobs == 0;
    EXPECT_EQ(DriveWithJobs(dir, variant, jobs, &threaded, records), log) << "jobs " << jobs;
    // Threaded lockstep, or else the windows read ahead.
    EXPECT_NE(threaded.parse_ahead, threaded.reader_threads > 1) << "jobs " << jobs;
    if (jobs == 0) EXPECT_TRUE(threaded.parse_ahead);
    EXPECT_EQ(threaded.steps_done, serial.steps_done) << "jobs " << jobs;
    EXPECT_EQ(threaded.ends.size(), serial.ends.size());
    for (size_t i = 0; i < serial.ends.size() && i < threaded.ends.size(); ++i) {
      const RankEnd& a = serial.ends[i];
      const RankEnd& b = threaded.ends[i];
      EXPECT_EQ(std::tie(a.records, a.lines_read, a.bytes_read, a.end_seen, a.reason, a.status,
                         a.detail, a.end_step, a.last_step_begun, a.last_step_done, a.max_step,
                         a.last_phase, a.last_ts, a.last_line, a.issue_count, a.truncated_tail),
                std::tie(b.records, b.lines_read, b.bytes_read, b.end_seen, b.reason, b.status,
                         b.detail, b.end_step, b.last_step_begun, b.last_step_done, b.max_step,
                         b.last_phase, b.last_ts, b.last_line, b.issue_count, b.truncated_tail))
          << "rank index " << i << ", jobs " << jobs;
      EXPECT_EQ(a.issues.size(), b.issues.size());
    }
  }
  if (result) *result = std::move(serial);
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

TEST(StepDriverTest, AWholeRunWindowReadsOneRankAfterAnother) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 2);
  run.WriteCleanRank(TestRun::Header(1, 2), 1);
  DriveOptions options;
  options.step_window = kWholeRun;
  DriveResult result;
  const std::vector<std::string> want = {
      "begin 2",  "r0:step_begin@0", "r0:step_begin@1", "r0:end@2", "end r0", "r1:step_begin@0",
      "r1:end@1", "end r1",          "done 0",          "done 1",   "done 2",
  };
  EXPECT_EQ(DriveWithJobs(run.dir(), options, 1, &result), want);
  EXPECT_EQ(result.step_window, kWholeRun);
  EXPECT_EQ(result.steps_done, 3);
}

TEST(StepDriverTest, WindowsDeliverKStepsOfEachRankThenTheirStepsDone) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 3);  // steps 0..2, the end at 3
  {
    auto w = run.Open(TestRun::Header(1, 2));
    TestRun::WriteSteps(w.get(), 0, 3);
    w->SetStep(1);  // a helper thread a step late, read in the next window
    w->Begin(trace::rec::kCustom).line().Field("name", "late");
    w->SetStep(7);  // a jump: the next window starts at 7, not at 4
    w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
  }
  DriveOptions options;
  options.step_window = 2;
  DriveResult result;
  const std::vector<std::string> want = {
      "begin 2",         "r0:step_begin@0", "r0:step_begin@1", "r1:step_begin@0", "r1:step_begin@1",
      "done 0",          "done 1",          "r0:step_begin@2", "r0:end@3",        "end r0",
      "r1:step_begin@2", "r1:custom@1",     "done 2",          "done 3",          "r1:step_begin@7",
      "end r1",          "done 7",
  };
  EXPECT_EQ(DriveWithJobs(run.dir(), options, 1, &result), want);
  EXPECT_EQ(result.step_window, 2);
  EXPECT_EQ(result.steps_done, 5);
}

TEST(StepDriverTest, ClosesFilesBetweenWindowsAboveTheOpenFileLimit) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 2);
  run.WriteCleanRank(TestRun::Header(1, 2), 1);
  DriveOptions options;
  DriveResult open;
  const std::vector<std::string> want = Drive(run.dir(), options, &open);
  EXPECT_TRUE(open.files_kept_open);
  options.max_open_files = 1;
  DriveResult closed;
  EXPECT_EQ(Drive(run.dir(), options, &closed), want);
  EXPECT_FALSE(closed.files_kept_open);
  EXPECT_EQ(closed.steps_done, 3);
  EXPECT_EQ(closed.ends[0].bytes_read, open.ends[0].bytes_read);
  EXPECT_EQ(closed.ends[1].lines_read, open.ends[1].lines_read);
}

TEST(StepDriverTest, ReaderThreadsGiveWayToWindowsAboveTheOpenFileLimit) {
  TestRun run;
  for (int r = 0; r < 3; ++r) run.WriteCleanRank(TestRun::Header(r, 3), 2);
  DriveOptions options;
  options.max_open_files = 2;
  DriveResult result;
  DriveWithJobs(run.dir(), options, 2, &result);
  EXPECT_EQ(result.reader_threads, 1);  // windows, read ahead on one thread
  EXPECT_TRUE(result.parse_ahead);
  EXPECT_FALSE(result.files_kept_open);
  EXPECT_EQ(result.steps_done, 3);
  options.max_open_files = 3;
  DriveWithJobs(run.dir(), options, 2, &result);
  EXPECT_EQ(result.reader_threads, 2);
  EXPECT_EQ(result.step_window, 1);
  EXPECT_TRUE(result.files_kept_open);
}

TEST(StepDriverTest, ABadStepWindowInTheEnvironmentIsAClearError) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 1), 1);
  ::setenv("DSDIAG_STEP_WINDOW", "eight", 1);
  try {
    DriveWithJobs(run.dir(), {}, 1);
    ADD_FAILURE() << "no error";
  } catch (const RunInputError& e) {
    EXPECT_NE(std::string(e.what()).find("DSDIAG_STEP_WINDOW must be a positive number"),
              std::string::npos)
        << e.what();
  }
  ::setenv("DSDIAG_STEP_WINDOW", "all", 1);
  DriveResult result;
  DriveWithJobs(run.dir(), {}, 1, &result);
  EXPECT_EQ(result.step_window, kWholeRun);
  ::unsetenv("DSDIAG_STEP_WINDOW");
}

TEST(StepDriverTest, TheAutomaticWindowIsShortWhateverTheRankStepBudgetAllows) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 2);
  run.WriteCleanRank(TestRun::Header(1, 2), 1);
  DriveResult result;
  DriveWithJobs(run.dir(), {}, 1, &result);
  static_assert(kRankStepBudget / 2 > kMaxAutoWindowSteps);
  EXPECT_EQ(result.step_window, kMaxAutoWindowSteps);
}

TEST(StepDriverTest, ReaderThreadsRunOnlyWhenJobsAllow) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 2);
  run.WriteCleanRank(TestRun::Header(1, 2), 2);
  DriveResult result;
  DriveWithJobs(run.dir(), {}, 1, &result);
  EXPECT_EQ(result.reader_threads, 0);
  DriveWithJobs(run.dir(), {}, 2, &result);
  EXPECT_EQ(result.reader_threads, 2);
  DriveWithJobs(run.dir(), {}, 64, &result);
  EXPECT_LE(result.reader_threads, 2);  // not more threads than ranks
}

TEST(StepDriverTest, ThreadedDriveDeliversLongStepsAndEmptyRanksInOrder) {
  TestRun run;
  {
    // Far more records in one step than a reader thread queues at once, some of them a
    // step late, then a jump.
    auto w = run.Open(TestRun::Header(0, 3));
    TestRun::WriteSteps(w.get(), 0, 1);
    w->SetStep(1);
    for (int i = 0; i < 700; ++i) {
      w->SetStep(i % 3 == 0 ? 0 : 1);
      w->Begin(trace::rec::kCustom).line().Field("name", "burst").Field("i", i);
    }
    w->SetStep(4);
    w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
  run.Open(TestRun::Header(1, 3));  // a header and nothing else
  {
    auto w = run.Open(TestRun::Header(2, 3));
    TestRun::WriteSteps(w.get(), 0, 3);
  }
  run.AppendRaw("rank-00002.jsonl", "not json\n{\"type\":\"step_be");
  const std::vector<std::string> log = Drive(run.dir(), {});
  EXPECT_EQ(std::count(log.begin(), log.end(), "r0:custom@1"), 466);
  EXPECT_EQ(std::count(log.begin(), log.end(), "r0:custom@0"), 234);
}

}  // namespace
}  // namespace dsdiag::analyzers
