// One clock: compare, timeline and report place the same event at the same time on rank 0's
// clock (trace/rank_clock.h). Rank 1's host clock is 2 s ahead, which its header's measured
// offset corrects; a later `clock` record that measured nothing (offset_err -1) carries a
// bogus offset, which none of the three may apply. Rank 1 enters every collective 30 ms
// after rank 0 in true time: compare's straggler lateness, the timeline's wait of rank 0
// and the report's arrival delay of rank 1 must all say 30 ms.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "analyzers/framework/compare.h"
#include "analyzers/framework/registry.h"
#include "analyzers/framework/run_loader.h"
#include "report/run_collector.h"
#include "tests/analyzers/test_run.h"
#include "tests/support/json.h"
#include "timeline/timeline.h"
#include "trace/json_value.h"
#include "trace/record_types.h"

namespace dsdiag {
namespace {

using analyzers::testing::TestRun;

constexpr int64_t kMs = 1000000;
constexpr int64_t kLate = 30 * kMs;
constexpr int64_t kSkew = 2000 * kMs;  // rank 1's wall clock runs ahead by this
constexpr int kSteps = 8;

// Rank `rank`'s trace: its monotonic clock starts at `boot`; true time t is wall t (rank 0)
// or t + kSkew (rank 1). Step s starts at 1 s + s * 100 ms true time.
void WriteRank(TestRun* run, int rank) {
  const int64_t boot = rank == 0 ? 5000 * kMs : 9000 * kMs;
  const int64_t wall0 = 1796026500000000000;
  const int64_t skew = rank == 0 ? 0 : kSkew;
  trace::TraceHeader h = TestRun::Header(rank, 2);
  h.clock.mono_ns = boot;
  h.clock.wall_ns = wall0 + skew;
  h.clock.offset_ns = skew;  // measured at start: right
  h.clock.offset_err_ns = 20000;
  auto w = run->Open(h);
  // Measured nothing: must not replace the measured offset.
  w->BeginAt(trace::rec::kClock, boot + 500 * kMs)
      .line()
      .Field("when", "start")
      .Field("offset", int64_t{-5000} * kMs)
      .Field("offset_err", int64_t{-1});
  for (int s = 0; s < kSteps; ++s) {
    const int64_t start = boot + 1000 * kMs + s * 100 * kMs;
    const int64_t enter = start + 10 * kMs + (rank == 1 ? kLate : 0);
    const int64_t done = start + 10 * kMs + kLate + kMs;  // both complete together
    w->SetStep(s);
    w->BeginAt(trace::rec::kStepBegin, start).line().Field("epoch", 0);
    w->BeginAt(trace::rec::kCollective, enter)
        .line()
        .Field("pg", 0)
        .Field("seq", int64_t{s})
        .Field("op", "allreduce")
        .Field("dtype", "f32")
        .Field("n", 1024)
        .Field("bytes", 4096)
        .Field("dur", done - enter)
        .Field("tag", "grad-bucket-0");
    w->BeginAt(trace::rec::kStep, start)
        .line()
        .Field("dur", 90 * kMs)
        .Field("epoch", 0)
        .Field("loss", 1.0);
  }
  TestRun::WriteEnd(w.get(), "ok", 0);
}

TEST(OneClockTest, CompareTimelineAndReportPlaceTheSameEnterAtTheSameTime) {
  TestRun run;
  WriteRank(&run, 0);
  WriteRank(&run, 1);
  const analyzers::RunContext context = analyzers::LoadRun(run.dir());

  // compare: rank 1's mean lateness behind the earliest rank.
  std::vector<std::unique_ptr<analyzers::Analyzer>> all = analyzers::CreateAllAnalyzers();
  auto owned = std::make_unique<report::RunCollector>();
  const report::RunCollector& report = *owned;
  all.push_back(std::move(owned));
  const analyzers::CompareResult compare = analyzers::RunCompareOn(context, all);
  const analyzers::Finding* straggler = nullptr;
  for (const auto& f : compare.findings)
    if (f.kind == "straggler") straggler = &f;
  ASSERT_NE(straggler, nullptr);
  const trace::JsonValue* rows = straggler->evidence.Find("ranks");
  ASSERT_TRUE(rows && rows->is_array() && !rows->elements().empty());
  const trace::JsonValue& row = rows->elements().front();
  EXPECT_EQ(row.Find("rank")->as_int(), 1);
  EXPECT_DOUBLE_EQ(row.Find("mean_lateness_ms")->as_double(), 30.0);

  // report: rank 1's arrival delay, every step.
  const int row1 = report.rows().RowOf(1);
  const report::BinStats delay = report.delay().RowTotal(row1);
  EXPECT_EQ(delay.count, kSteps);
  EXPECT_DOUBLE_EQ(delay.min, double(kLate));
  EXPECT_DOUBLE_EQ(delay.max, double(kLate));

  // timeline: rank 0 waited in each collective for rank 1, the last to enter.
  std::ostringstream out;
  timeline::WriteTimeline(context, compare.findings, {}, out);
  const trace::JsonValue doc = test_support::ParseJson(out.str());
  int waits = 0;
  for (const trace::JsonValue& e : doc.Find("traceEvents")->elements()) {
    const trace::JsonValue* cat = e.Find("cat");
    if (!cat || cat->as_string() != "coll" || e.Find("pid")->as_int() != 0) continue;
    const trace::JsonValue* args = e.Find("args");
    EXPECT_EQ(args->Find("wait")->as_int(), kLate);
    EXPECT_EQ(args->Find("last")->as_int(), 1);
    ++waits;
  }
  EXPECT_EQ(waits, kSteps);
}

}  // namespace
}  // namespace dsdiag
