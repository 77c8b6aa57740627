// The timeline library on small runs written with the real TraceWriter at chosen times:
// structure (processes, threads, spans, counters, instants), clock alignment, collective
// waits, findings placement, --steps/--ranks selection and damaged traces.
#include "timeline/timeline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <thread>

#include "analyzers/framework/finding.h"
#include "analyzers/framework/run_loader.h"
#include "tests/timeline/timeline_test_util.h"
#include "timeline/chrome_trace_writer.h"
#include "timeline/rank_events.h"

namespace dsdiag::timeline {
namespace {

using analyzers::Finding;
using analyzers::Severity;
using testing::Header;
using testing::RankTrace;
using testing::TempDir;
using testing::Timeline;
using trace::JsonValue;

constexpr int64_t kMs = 1000000;
constexpr int64_t kWall = int64_t{1796026500} * 1000000000;  // rank 0's wall clock at T = 0
constexpr int64_t kBoot0 = 3 * 1000 * kMs;                   // rank 0's monotonic clock at T = 0
constexpr int64_t kBoot1 = 7777 * kMs;                       // rank 1's
constexpr int64_t kSkew1 = 500 * kMs;                        // rank 1's wall clock runs ahead
constexpr int64_t kStepNs = 10 * kMs;
constexpr int64_t kPhaseNs = 1 * kMs;
constexpr int64_t kLateEnter = 200000;  // rank 1 enters each allreduce 200 us after rank 0

// True time T (ns since launch) of step s's start.
int64_t StepStart(int64_t s) { return 20 * kMs + s * kStepNs; }

// A run of 3 ranks, 3 steps, of which rank 2 left no trace. Rank 1's wall clock runs 500 ms
// ahead; its header has no measured offset (as before the process group is up) and a
// `clock` record right after the header gives it. A helper thread of rank 1 names itself
// and leaves a mark.
class TimelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    {
      RankTrace r0(dir_.path(), Header(0, 3, kBoot0 + kMs, kWall + kMs, 0, "alpha"));
      for (int64_t s = 0; s < 3; ++s) {
        r0.Step(s, kBoot0 + StepStart(s), kPhaseNs, s, 0, kLateEnter + 300000, 2.5 - 0.5 * s);
      }
      r0.At(trace::rec::kGradient, kBoot0 + StepStart(1) + 3 * kPhaseNs, 1)
          .line()
          .Field("norm", 1.75);
      r0.At(trace::rec::kScaler, kBoot0 + StepStart(1) + 4 * kPhaseNs, 1)
          .line()
          .Field("scale", 65536.0);
      r0.At(trace::rec::kError, kBoot0 + StepStart(2) + kPhaseNs, 2)
          .line()
          .Field("where", "watchdog")
          .Field("message", "something odd");
      r0.At(trace::rec::kSignal, kBoot0 + StepStart(3), 3)
          .line()
          .Field("signal", "SIGTERM")
          .Field("signo", 15);
      r0.End(kBoot0 + StepStart(3) + kMs, 3);
    }
    {
      trace::TraceHeader h = Header(1, 3, kBoot1 + kMs, kWall + kSkew1 + kMs, 0, "beta");
      h.clock.offset_err_ns = -1;
      RankTrace r1(dir_.path(), h);
      r1.At(trace::rec::kClock, kBoot1 + 2 * kMs, 0)
          .line()
          .Field("when", "start")
          .Field("offset", kSkew1)
          .Field("offset_err", int64_t{20000});
      std::thread helper([&] {
        helper_tid_ = trace::ThisThreadIndex();
        r1.writer()->NameThisThread("loader-worker-0");
        r1.writer()
            ->BeginAt(trace::rec::kMark, kBoot1 + StepStart(0) - kPhaseNs / 2)
            .line()
            .Field("name", "slow-batch")
            .Field("message", "batch took long");
      });
      helper.join();
      for (int64_t s = 0; s < 3; ++s) {
        r1.Step(s, kBoot1 + StepStart(s), kPhaseNs, s, kLateEnter, 300000, 2.4 - 0.5 * s);
      }
      r1.End(kBoot1 + StepStart(3) + kMs, 3);
    }
  }

  std::string Write(const TimelineOptions& options, const std::vector<Finding>& findings = {}) {
    const analyzers::RunContext run = analyzers::LoadRun(dir_.path());
    std::ostringstream out;
    stats_ = WriteTimeline(run, findings, options, out);
    return out.str();
  }

  // ts of an event in ns (the output is in us).
  static int64_t TsNs(const JsonValue& e) { return std::llround(Timeline::Num(e, "ts") * 1000); }
  static int64_t DurNs(const JsonValue& e) { return std::llround(Timeline::Num(e, "dur") * 1000); }

  TempDir dir_;
  int helper_tid_ = -1;
  TimelineStats stats_;
};

TEST_F(TimelineTest, ProcessesAndThreadsAreNamed) {
  Timeline t(Write({}));
  ASSERT_TRUE(t.valid());
  EXPECT_EQ(t.MetaName("process_name", 0), "rank 0 (alpha)");
  EXPECT_EQ(t.MetaName("process_name", 1), "rank 1 (beta)");
  EXPECT_EQ(t.MetaName("thread_name", 0, 0), "main");
  EXPECT_EQ(t.MetaName("thread_name", 1, 0), "main");
  ASSERT_GT(helper_tid_, 0);
  EXPECT_EQ(t.MetaName("thread_name", 1, helper_tid_), "loader-worker-0");
  EXPECT_EQ(t.MetaName("thread_name", 0, kLaneTidBase), "collectives");
  for (int pid : {0, 1}) {
    auto sort = t.Where([&](const JsonValue& e) {
      return Timeline::Str(e, "name") == "process_sort_index" && Timeline::Int(e, "pid") == pid;
    });
    ASSERT_EQ(sort.size(), 1u);
    EXPECT_EQ(Timeline::Int(Timeline::Args(*sort[0]), "sort_index"), pid);
  }
  // The mark of the helper thread sits on that thread.
  const JsonValue* mark = t.One("i", "mark: slow-batch", 1);
  ASSERT_NE(mark, nullptr);
  EXPECT_EQ(Timeline::Int(*mark, "tid"), helper_tid_);
  EXPECT_EQ(Timeline::Str(Timeline::Args(*mark), "message"), "batch took long");
  EXPECT_EQ(stats_.ranks, 2);
}

TEST_F(TimelineTest, StepsPhasesAndCollectivesAreSpansWithArgs) {
  Timeline t(Write({}));
  ASSERT_TRUE(t.valid());
  for (int pid : {0, 1}) {
    for (int s = 0; s < 3; ++s) {
      const JsonValue* step = t.One("X", "step " + std::to_string(s), pid);
      ASSERT_NE(step, nullptr);
      EXPECT_EQ(Timeline::Str(*step, "cat"), "step");
      EXPECT_EQ(Timeline::Int(*step, "tid"), 0);
      EXPECT_EQ(DurNs(*step), 5 * kPhaseNs);
      EXPECT_EQ(Timeline::Int(Timeline::Args(*step), "samples"), 32);
      // The phases tile the step: data starts with it, optimizer ends with it.
      auto phases = t.Where([&](const JsonValue& e) {
        return Timeline::Str(e, "cat") == "phase" && Timeline::Int(e, "pid") == pid &&
               Timeline::Int(Timeline::Args(e), "step") == s;
      });
      ASSERT_EQ(phases.size(), 5u);
      EXPECT_EQ(Timeline::Str(*phases.front(), "name"), "data");
      EXPECT_EQ(TsNs(*phases.front()), TsNs(*step));
      EXPECT_EQ(Timeline::Str(*phases.back(), "name"), "optimizer");
      EXPECT_EQ(TsNs(*phases.back()) + DurNs(*phases.back()), TsNs(*step) + DurNs(*step));
    }
  }
  auto colls = t.Where([](const JsonValue& e) { return Timeline::Str(e, "cat") == "coll"; });
  ASSERT_EQ(colls.size(), 6u);
  for (const JsonValue* c : colls) {
    const JsonValue& a = Timeline::Args(*c);
    EXPECT_EQ(Timeline::Str(*c, "name"), "allreduce");
    EXPECT_EQ(Timeline::Int(*c, "tid"), kLaneTidBase);
    EXPECT_EQ(Timeline::Int(a, "pg"), 0);
    EXPECT_EQ(Timeline::Str(a, "op"), "allreduce");
    EXPECT_EQ(Timeline::Str(a, "tag"), "grad-bucket-0");
    EXPECT_EQ(Timeline::Int(a, "bytes"), 4096);
    EXPECT_EQ(Timeline::Int(a, "n"), 1024);
    EXPECT_EQ(Timeline::Int(a, "ranks"), 2);
    EXPECT_EQ(Timeline::Int(a, "last"), 1);
    // Rank 0 waited for rank 1, who came 200 us later; rank 1 waited for nobody.
    EXPECT_EQ(Timeline::Int(a, "wait"), Timeline::Int(*c, "pid") == 0 ? kLateEnter : 0);
  }
  EXPECT_EQ(stats_.collectives, 3);
}

TEST_F(TimelineTest, SkewedRankIsAlignedOnRankZerosClock) {
  Timeline t(Write({}));
  ASSERT_TRUE(t.valid());
  // Both ranks started each step at the same true time; rank 1's wall clock is 500 ms
  // ahead and its `clock` record says so.
  for (int s = 0; s < 3; ++s) {
    const JsonValue* a = t.One("X", "step " + std::to_string(s), 0);
    const JsonValue* b = t.One("X", "step " + std::to_string(s), 1);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(TsNs(*a), TsNs(*b)) << "step " << s;
  }
  // Timestamps start at the earliest event (rank 1's mark, half a phase before step 0).
  const JsonValue* mark = t.One("i", "mark: slow-batch", 1);
  ASSERT_NE(mark, nullptr);
  EXPECT_EQ(TsNs(*mark), 0);
  EXPECT_EQ(TsNs(*t.One("X", "step 0", 0)), kPhaseNs / 2);
  EXPECT_EQ(stats_.origin_unix_ns, kWall + StepStart(0) - kPhaseNs / 2);
  EXPECT_EQ(Timeline::Int(*t.root().Find("otherData"), "origin_unix_ns"), stats_.origin_unix_ns);
}

TEST_F(TimelineTest, CountersAndInstants) {
  Timeline t(Write({}));
  ASSERT_TRUE(t.valid());
  auto counter = [&](const std::string& name, int pid) {
    return t.Where([&](const JsonValue& e) {
      return Timeline::Str(e, "ph") == "C" && Timeline::Str(e, "name") == name &&
             Timeline::Int(e, "pid") == pid;
    });
  };
  auto loss = counter("loss", 0);
  ASSERT_EQ(loss.size(), 3u);
  EXPECT_DOUBLE_EQ(Timeline::Num(Timeline::Args(*loss[1]), "value"), 2.0);
  EXPECT_EQ(counter("lr", 1).size(), 3u);
  auto rate = counter("samples/s", 0);
  ASSERT_EQ(rate.size(), 3u);
  EXPECT_DOUBLE_EQ(Timeline::Num(Timeline::Args(*rate[0]), "value"), 32 / 0.005);
  auto norm = counter("grad norm", 0);
  ASSERT_EQ(norm.size(), 1u);
  EXPECT_DOUBLE_EQ(Timeline::Num(Timeline::Args(*norm[0]), "value"), 1.75);
  EXPECT_EQ(counter("loss scale", 0).size(), 1u);
  // Rank 0 entered each allreduce first and spent 0.5 ms in it, 0.4 of it waiting.
  auto in_coll = counter("collectives ms", 0);
  ASSERT_EQ(in_coll.size(), 3u);
  EXPECT_DOUBLE_EQ(Timeline::Num(Timeline::Args(*in_coll[2]), "value"), 0.5);
  auto waited = counter("collective wait ms", 1);
  ASSERT_EQ(waited.size(), 3u);
  EXPECT_DOUBLE_EQ(Timeline::Num(Timeline::Args(*waited[0]), "value"), 0.2);
  auto probes = counter("probes ms", 1);
  ASSERT_EQ(probes.size(), 3u);
  EXPECT_DOUBLE_EQ(Timeline::Num(Timeline::Args(*probes[2]), "value"), 0.15);
  const JsonValue& step_args = Timeline::Args(*t.One("X", "step 1", 0));
  EXPECT_EQ(Timeline::Int(step_args, "coll_n"), 1);
  EXPECT_EQ(Timeline::Int(step_args, "coll_bytes"), 4096);
  EXPECT_TRUE(counter("gloss", 0).empty());  // no record had one

  const JsonValue* error = t.One("i", "error (watchdog)", 0);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(Timeline::Str(*error, "s"), "p");
  EXPECT_EQ(Timeline::Str(Timeline::Args(*error), "message"), "something odd");
  const JsonValue* signal = t.One("i", "signal SIGTERM", 0);
  ASSERT_NE(signal, nullptr);
  EXPECT_EQ(Timeline::Int(Timeline::Args(*signal), "signo"), 15);
  EXPECT_NE(t.One("i", "end: ok", 0), nullptr);
  EXPECT_NE(t.One("i", "end: ok", 1), nullptr);
}

std::vector<Finding> SomeFindings() {
  std::vector<Finding> findings(4);
  Finding& timed = findings[0];  // knows its moment on rank 1
  timed.kind = "straggler";
  timed.severity = Severity::kWarning;
  timed.ranks = {1};
  timed.step = 1;
  timed.summary = "rank 1 is slow";
  timed.ts_ns = kBoot1 + StepStart(1) + 3 * kPhaseNs;
  timed.ts_rank = 1;
  Finding& stepped = findings[1];  // only its step
  stepped.kind = "grad-desync";
  stepped.severity = Severity::kError;
  stepped.ranks = {0};
  stepped.step = 2;
  stepped.subject = "fc.weight";
  stepped.summary = "gradients differ";
  stepped.hint = "look";
  Finding& global = findings[2];  // no rank, no step
  global.kind = "config-mismatch";
  global.severity = Severity::kWarning;
  global.summary = "settings differ";
  Finding& traceless = findings[3];  // about the rank without a trace
  traceless.kind = "rank-died";
  traceless.severity = Severity::kError;
  traceless.ranks = {2};
  traceless.step = 1;
  traceless.summary = "rank 2 left no trace";
  return findings;
}

TEST_F(TimelineTest, EveryFindingIsAnInstantAtItsRankAndTime) {
  const std::vector<Finding> findings = SomeFindings();
  Timeline t(Write({}, findings));
  ASSERT_TRUE(t.valid());
  ASSERT_EQ(t.Where([](const JsonValue& e) { return Timeline::Str(e, "cat") == "finding"; }).size(),
            4u);
  EXPECT_EQ(stats_.findings, 4);
  const int64_t step0 = TsNs(*t.One("X", "step 0", 0));

  const JsonValue* timed = t.One("i", "warning: straggler", 1);
  ASSERT_NE(timed, nullptr);
  EXPECT_EQ(Timeline::Str(*timed, "s"), "p");
  EXPECT_EQ(TsNs(*timed), step0 + kStepNs + 3 * kPhaseNs);  // ts_ns on rank 1's clock, mapped
  EXPECT_EQ(Timeline::Str(Timeline::Args(*timed), "summary"), "rank 1 is slow");
  EXPECT_EQ(Timeline::Str(Timeline::Args(*timed), "severity"), "warning");
  EXPECT_EQ(Timeline::Int(Timeline::Args(*timed), "step"), 1);

  const JsonValue* stepped = t.One("i", "error: grad-desync", 0);
  ASSERT_NE(stepped, nullptr);
  EXPECT_EQ(TsNs(*stepped), step0 + 2 * kStepNs);  // step_begin of step 2 on rank 0
  EXPECT_EQ(Timeline::Str(Timeline::Args(*stepped), "subject"), "fc.weight");
  EXPECT_EQ(Timeline::Str(Timeline::Args(*stepped), "kind"), "grad-desync");
  EXPECT_EQ(Timeline::Str(Timeline::Args(*stepped), "hint"), "look");

  const JsonValue* global = t.One("i", "warning: config-mismatch", 0);
  ASSERT_NE(global, nullptr);
  EXPECT_EQ(Timeline::Str(*global, "s"), "g");
  EXPECT_TRUE(Timeline::Args(*global).Find("subject")->is_null());

  const JsonValue* traceless = t.One("i", "error: rank-died", 2);
  ASSERT_NE(traceless, nullptr);
  EXPECT_EQ(TsNs(*traceless), step0 + kStepNs);  // step 1 as rank 0 began it
  EXPECT_EQ(t.MetaName("process_name", 2), "rank 2 (no usable trace)");
}

TEST_F(TimelineTest, StepsSelectionKeepsOnlyThoseSteps) {
  TimelineOptions options;
  options.selection.steps.first = 1;
  options.selection.steps.last = 1;
  const std::vector<Finding> findings = SomeFindings();
  Timeline t(Write(options, findings));
  ASSERT_TRUE(t.valid());
  for (const JsonValue& e : t.events()) {
    const std::string ph = Timeline::Str(e, "ph");
    if (ph == "M" || Timeline::Str(e, "cat") == "finding") continue;
    EXPECT_EQ(Timeline::Int(Timeline::Args(e), "step"), ph == "C" ? -1 : 1)
        << Timeline::Str(e, "name");
  }
  EXPECT_NE(t.One("X", "step 1", 0), nullptr);
  EXPECT_TRUE(
      t.Where([](const JsonValue& e) { return Timeline::Str(e, "name") == "step 0"; }).empty());
  // Findings of other steps are left out; one without a step stays.
  auto kinds = t.Where([](const JsonValue& e) { return Timeline::Str(e, "cat") == "finding"; });
  std::vector<std::string> names;
  for (auto* k : kinds) names.push_back(Timeline::Str(*k, "name"));
  EXPECT_EQ(names, (std::vector<std::string>{"warning: straggler", "warning: config-mismatch",
                                             "error: rank-died"}));
  // The origin is the selection's first event: step 1 starts at 0.
  EXPECT_EQ(TsNs(*t.One("X", "step 1", 0)), 0);
}

TEST_F(TimelineTest, RanksSelectionKeepsOnlyThoseProcessesButWaitsCountEveryRank) {
  TimelineOptions options;
  std::string error;
  options.selection.ranks = *RankSet::Parse("1", &error);
  Timeline t(Write(options, SomeFindings()));
  ASSERT_TRUE(t.valid());
  for (const JsonValue& e : t.events()) {
    if (Timeline::Str(e, "cat") == "finding" && Timeline::Str(e, "s") == "g") continue;
    const int64_t pid = Timeline::Int(e, "pid");
    EXPECT_TRUE(pid == 1 || (pid == 2 && Timeline::Str(e, "cat") == "finding") ||
                (pid == 2 && Timeline::Str(e, "ph") == "M"))
        << Timeline::Str(e, "name") << " pid " << pid;
  }
  auto colls = t.Where([](const JsonValue& e) { return Timeline::Str(e, "cat") == "coll"; });
  ASSERT_EQ(colls.size(), 3u);
  for (auto* c : colls) EXPECT_EQ(Timeline::Int(Timeline::Args(*c), "ranks"), 2);
  // grad-desync (rank 0) is left out; rank-died (rank 2) is not selected either.
  EXPECT_TRUE(t.Where([](const JsonValue& e) {
                 return Timeline::Str(e, "name") == "error: grad-desync";
               }).empty());
  EXPECT_EQ(stats_.ranks, 1);
}

// `dsdiag timeline` reads every trace once: compare's analyzers and the timeline's collector
// ride one pass, and the findings drawn are compare's.
TEST_F(TimelineTest, OnePassReadsEachTraceOnceAndDrawsCompareFindings) {
  const analyzers::RunContext run = analyzers::LoadRun(dir_.path());
  int64_t lines = 0;
  for (const auto& r : run.ranks)
    lines += static_cast<int64_t>(testing::SplitLines(testing::ReadFile(r.path)).size());
  const int64_t before = trace::TraceReader::LinesReadByClosedReaders();
  std::ostringstream out;
  const TimelineResult result = WriteTimeline(run, TimelineOptions{}, out);
  EXPECT_EQ(trace::TraceReader::LinesReadByClosedReaders() - before, lines);
  ASSERT_FALSE(result.compare.findings.empty());
  EXPECT_EQ(result.stats.findings, static_cast<int64_t>(result.compare.findings.size()));
  // The same bytes as drawing those findings from a pass of the collector alone.
  std::ostringstream again;
  WriteTimeline(run, result.compare.findings, TimelineOptions{}, again);
  EXPECT_EQ(out.str(), again.str());
}

TEST(TimelineClockTest, RecordsBeforeAClockRecordUseTheHeaderOffset) {
  TempDir dir;
  {
    RankTrace r0(dir.path(), Header(0, 2, kBoot0, kWall, 0));
    r0.Step(0, kBoot0 + StepStart(0), kPhaseNs, 0, 0, 1000, 1.0);
  }
  {
    // Header offset 0 although the wall clock is 500 ms ahead; the clock record fixes it
    // from then on. The mark before it is drawn with the header's (wrong) offset.
    RankTrace r1(dir.path(), Header(1, 2, kBoot1, kWall + kSkew1, 0));
    r1.At(trace::rec::kMark, kBoot1 + StepStart(0), 0).line().Field("name", "early");
    r1.At(trace::rec::kClock, kBoot1 + StepStart(0), 0)
        .line()
        .Field("offset", kSkew1)
        .Field("offset_err", int64_t{50});
    r1.Step(0, kBoot1 + StepStart(0), kPhaseNs, 0, 0, 1000, 1.0);
  }
  const analyzers::RunContext run = analyzers::LoadRun(dir.path());
  std::ostringstream out;
  WriteTimeline(run, {}, {}, out);
  Timeline t(out.str());
  ASSERT_TRUE(t.valid());
  const JsonValue* a = t.One("X", "step 0", 0);
  const JsonValue* b = t.One("X", "step 0", 1);
  const JsonValue* early = t.One("i", "mark: early", 1);
  ASSERT_TRUE(a && b && early);
  EXPECT_EQ(Timeline::Num(*a, "ts"), Timeline::Num(*b, "ts"));
  EXPECT_DOUBLE_EQ(Timeline::Num(*early, "ts") - Timeline::Num(*a, "ts"), kSkew1 / 1000.0);
}

TEST(TimelineDamageTest, CorruptAndTruncatedTracesStillGiveValidJson) {
  TempDir dir;
  std::string path;
  {
    RankTrace r0(dir.path(), Header(0, 1, kBoot0, kWall, 0));
    r0.Step(0, kBoot0 + StepStart(0), kPhaseNs, 0, 0, 1000, 1.0);
    path = r0.path();
  }
  testing::AppendFile(path, "this is not json\n{\"type\":\"step\",\"ts\":\"x\"}\n");
  {
    // A good step after the damage, then a record cut short (no '\n').
    std::string good;
    trace::JsonLine(&good)
        .Field("type", "step")
        .Field("ts", kBoot0 + StepStart(1))
        .Field("step", int64_t{1})
        .Field("dur", int64_t{5000})
        .Finish();
    testing::AppendFile(path, good + "{\"type\":\"phase\",\"ts\":12,\"st");
  }
  const analyzers::RunContext run = analyzers::LoadRun(dir.path());
  std::ostringstream out;
  WriteTimeline(run, {}, {}, out);
  Timeline t(out.str());
  ASSERT_TRUE(t.valid());
  EXPECT_NE(t.One("X", "step 0", 0), nullptr);
  EXPECT_NE(t.One("X", "step 1", 0), nullptr);
}

TEST(TimelineUnfinishedTest, AStepThatNeverClosesEndsAtTheRanksLastEvent) {
  TempDir dir;
  {
    RankTrace r0(dir.path(), Header(0, 1, kBoot0, kWall, 0));
    r0.Step(0, kBoot0 + StepStart(0), kPhaseNs, 0, 0, 1000, 1.0);
    r0.At(trace::rec::kStepBegin, kBoot0 + StepStart(1), 1).line().Field("epoch", int64_t{0});
    r0.At(trace::rec::kPhase, kBoot0 + StepStart(1), 1)
        .line()
        .Field("name", "data")
        .Field("dur", 3 * kPhaseNs);
  }
  const analyzers::RunContext run = analyzers::LoadRun(dir.path());
  std::ostringstream out;
  WriteTimeline(run, {}, {}, out);
  Timeline t(out.str());
  ASSERT_TRUE(t.valid());
  const JsonValue* open = t.One("X", "step 1 (unfinished)", 0);
  ASSERT_NE(open, nullptr);
  EXPECT_EQ(std::llround(Timeline::Num(*open, "dur") * 1000), 3 * kPhaseNs);
  EXPECT_TRUE(Timeline::Args(*open).Find("unfinished")->as_bool());
}

TEST(TimelineLanesTest, OverlappingCollectivesGetTracksOfTheirOwn) {
  TempDir dir;
  {
    RankTrace r0(dir.path(), Header(0, 1, kBoot0, kWall, 0));
    auto coll = [&](int64_t seq, int64_t enter, int64_t dur) {
      r0.At(trace::rec::kCollective, kBoot0 + enter, 0)
          .line()
          .Field("pg", int64_t{0})
          .Field("seq", seq)
          .Field("op", "allreduce")
          .Field("dur", dur);
    };
    // Written in completion order: seq 0 [0, 10 ms], seq 1 [2, 12 ms] overlaps it,
    // seq 2 [11, 13 ms] fits after seq 0.
    coll(0, 0, 10 * kMs);
    coll(1, 2 * kMs, 10 * kMs);
    coll(2, 11 * kMs, 2 * kMs);
  }
  const analyzers::RunContext run = analyzers::LoadRun(dir.path());
  std::ostringstream out;
  WriteTimeline(run, {}, {}, out);
  Timeline t(out.str());
  ASSERT_TRUE(t.valid());
  auto colls = t.Where([](const JsonValue& e) { return Timeline::Str(e, "cat") == "coll"; });
  ASSERT_EQ(colls.size(), 3u);
  EXPECT_EQ(Timeline::Int(*colls[0], "tid"), kLaneTidBase);
  EXPECT_EQ(Timeline::Int(*colls[1], "tid"), kLaneTidBase + 1);
  EXPECT_EQ(Timeline::Int(*colls[2], "tid"), kLaneTidBase);
  EXPECT_EQ(t.MetaName("thread_name", 0, kLaneTidBase + 1), "collectives 2");
}

TEST(ChromeTraceWriterTest, WritesAsItGoesNotAtTheEnd) {
  std::ostringstream out;
  ChromeTraceWriter w(&out);
  for (int i = 0; i < 50000; ++i) {
    auto e = w.Complete("span", "test", 0, 0, i * 1000, 500);
  }
  // Most of the events are in the stream before Finish: the writer holds about a megabyte.
  EXPECT_GT(out.str().size(), size_t{2} << 20);
  w.Finish(JsonValue::Object());
  Timeline t(out.str());
  ASSERT_TRUE(t.valid());
  EXPECT_EQ(t.events().size(), 50000u);
  EXPECT_EQ(w.events(), 50000);
}

TEST(ChromeTraceWriterTest, EmptyTimelineIsValidJson) {
  std::ostringstream out;
  ChromeTraceWriter w(&out);
  w.Finish(JsonValue::Object());
  Timeline t(out.str());
  ASSERT_TRUE(t.valid());
  EXPECT_TRUE(t.events().empty());
}

}  // namespace
}  // namespace dsdiag::timeline
