// WriteReport on small runs written with the real TraceWriter at chosen times: every
// section, the values behind the charts (waits, delays, phases, loss, loss scale), the
// configuration diff, the loader sweep, escaping, self-containment and binning.
#include "report/report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "analyzers/framework/input_error.h"
#include "tests/report/report_test_util.h"
#include "trace/loader_sweep_file.h"

namespace dsdiag::report {
namespace {

using testing::Contains;
using testing::Count;
using testing::Header;
using testing::RankTrace;
using testing::Row;
using testing::Rows;
using testing::Section;
using testing::TempDir;

constexpr int64_t kMs = 1000000;
constexpr int64_t kWall = int64_t{1796026500} * 1000000000;  // rank 0's wall clock at T = 0
constexpr int64_t kStepNs = 100 * kMs;
constexpr int64_t kEnterNs = 50 * kMs;  // when a rank on time enters the step's allreduce
constexpr int64_t kLate[] = {0, 3 * kMs, 10 * kMs};               // rank 2 is the straggler
constexpr int64_t kBoot[] = {3000 * kMs, 7777 * kMs, 123 * kMs};  // monotonic clocks at T = 0
constexpr int64_t kSkew[] = {0, 500 * kMs, -20 * kMs};            // wall clocks ahead of rank 0's
constexpr int kSteps = 4;

double Loss(int rank, int64_t step) { return 2.5 - 0.25 * step + 0.125 * rank; }

std::string Render(const std::string& dir, ReportOptions options = {}) {
  std::ostringstream out;
  WriteReport(dir, options, out);
  return out.str();
}

const Row* FindRow(const std::vector<Row>& rows, const std::string& ranks) {
  for (const Row& r : rows)
    if (r.ranks == ranks) return &r;
  return nullptr;
}

// 3 ranks, 4 steps. Every rank's clock reads differently; rank 1's header does not know its
// offset yet (a `clock` record gives it), rank 2's does. Each step has one allreduce that
// rank 1 enters 3 ms and rank 2 10 ms after rank 0 (true time); it completes for everyone
// 0.1 ms after rank 2 enters. Rank 1 runs with another NCCL_DEBUG, whose value needs escaping.
// The probes took 1 ms of rank 0's steps and 3 ms of rank 1's; rank 2's trace does not say.
class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int r = 0; r < 3; ++r) {
      const int64_t header_offset = r == 1 ? 0 : kSkew[r];
      trace::TraceHeader h = Header(r, 3, kBoot[r], kWall + kSkew[r], header_offset);
      h.env["NCCL_DEBUG"] = r == 1 ? "<i>INFO</i> & co" : "WARN";
      RankTrace t(dir_.path(), h);
      if (r == 1) {
        t.At(trace::rec::kClock, kBoot[r] + kMs, 0)
            .line()
            .Field("when", "start")
            .Field("offset", kSkew[r])
            .Field("offset_err", int64_t{1000});
      }
      for (int64_t s = 0; s < kSteps; ++s) {
        const int64_t t0 = kBoot[r] + 20 * kMs + s * kStepNs;
        const int64_t dur = (r == 2 ? 90 : 80) * kMs;
        const int64_t probe_ns = r == 2 ? -1 : (r == 0 ? 1 : 3) * kMs;
        t.Step(s, t0, dur, s, kEnterNs + kLate[r], kLate[2] - kLate[r] + kMs / 10, Loss(r, s),
               probe_ns);
        t.At(trace::rec::kScaler, t0 + 60 * kMs, s)
            .line()
            .Field("scale", s < 2 ? 65536.0 : 32768.0)
            .Field("skipped", false);
      }
      t.End(kBoot[r] + 20 * kMs + kSteps * kStepNs, kSteps - 1);
    }
    testing::WriteFile(dir_ / trace::kLoaderSweepFileName, R"({"schema":"dsdiag.loader-sweep/1",
      "points":[{"workers":0,"batch_size":8,"samples_per_s_median":210.5,"first_batch_ms":12},
                {"workers":2,"batch_size":8,"samples_per_s_median":640,"samples_per_s_min":610,
                 "samples_per_s_max":655,"peak_rss_mb":1200},
                {"workers":4,"batch_size":8,"samples_per_s_median":812.5}],
      "recommendation":{"workers":4,"reason":"<fast> & cheap"}})");
    html_ = Render(dir_.path());
  }

  TempDir dir_;
  std::string html_;
};

TEST_F(ReportTest, HasEverySectionFindingsFirst) {
  const char* ids[] = {"findings", "heatmap",    "heatmap-delay", "phases",
                       "loss",     "loss-scale", "loader-sweep",  "config"};
  size_t last = 0;
  for (const char* id : ids) {
    const size_t at = html_.find("<section id=\"" + std::string(id) + "\">");
    ASSERT_NE(at, std::string::npos) << id;
    EXPECT_GT(at, last) << id << " out of order";
    last = at;
  }
  EXPECT_EQ(html_.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_TRUE(Contains(html_, "</html>"));
}

TEST_F(ReportTest, IsSelfContained) {
  EXPECT_FALSE(Contains(html_, "http://"));
  EXPECT_FALSE(Contains(html_, "https://"));
  EXPECT_FALSE(Contains(html_, "<script src"));
  EXPECT_FALSE(Contains(html_, "<link"));
  EXPECT_FALSE(Contains(html_, "@import"));
  EXPECT_FALSE(Contains(html_, "url(http"));
  // The one script element is data, not code.
  EXPECT_EQ(Count(html_, "<script"), 1u);
  EXPECT_TRUE(Contains(html_, "<script type=\"application/json\" id=\"findings-json\">"));
}

TEST_F(ReportTest, WaitsOnRankZerosClock) {
  const std::vector<Row> wait = Rows(Section(html_, "heatmap"), "hm-row");
  ASSERT_EQ(wait.size(), 3u);
  // Everyone waits for rank 2 to enter: 10 ms, 7 ms and nothing, whatever their clocks read.
  EXPECT_EQ(FindRow(wait, "0")->data.at("mean-ns"), 10.0 * kMs);
  EXPECT_EQ(FindRow(wait, "1")->data.at("mean-ns"), 7.0 * kMs);
  EXPECT_EQ(FindRow(wait, "2")->data.at("mean-ns"), 0.0);
  const std::vector<Row> delay = Rows(Section(html_, "heatmap-delay"), "hm-row");
  ASSERT_EQ(delay.size(), 3u);
  EXPECT_EQ(FindRow(delay, "0")->data.at("mean-ns"), 0.0);
  EXPECT_EQ(FindRow(delay, "1")->data.at("mean-ns"), 3.0 * kMs);
  EXPECT_EQ(FindRow(delay, "2")->data.at("max-ns"), 10.0 * kMs);
  // One cell per rank and step, each with its value in a tooltip.
  EXPECT_EQ(Count(Section(html_, "heatmap"), "<rect x="), 3u * kSteps);
  EXPECT_TRUE(Contains(Section(html_, "heatmap-delay"),
                       "<title>rank 2 · step 3: delay 10 ms per step</title>"));
  EXPECT_TRUE(Contains(Section(html_, "heatmap"), "rank 2 entered last in 4 of 4 collectives"));
}

TEST_F(ReportTest, PerRankFallbackGivesTheSameWaits) {
  ReportOptions options;
  options.drive.max_open_files = 1;  // one rank after the other
  const std::string html = Render(dir_.path(), options);
  const std::vector<Row> wait = Rows(Section(html, "heatmap"), "hm-row");
  ASSERT_EQ(wait.size(), 3u);
  EXPECT_EQ(FindRow(wait, "0")->data.at("mean-ns"), 10.0 * kMs);
  EXPECT_EQ(FindRow(wait, "2")->data.at("mean-ns"), 0.0);
}

TEST_F(ReportTest, TooManyHeldEntersFallsBackToTimeInCollectives) {
  ReportOptions options;
  options.drive.max_open_files = 1;
  options.max_held_enters = 2;
  const std::string html = Render(dir_.path(), options);
  const std::string map = Section(html, "heatmap");
  EXPECT_TRUE(Contains(map, "<h2>Time in collectives</h2>"));
  const std::vector<Row> rows = Rows(map, "hm-row");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(FindRow(rows, "0")->data.at("mean-ns"), 101.0 * kMs / 10);  // the allreduce's dur
  EXPECT_TRUE(Contains(Section(html, "heatmap-delay"), "Not available"));
}

TEST_F(ReportTest, PhaseBarsAreTheMeansOfTheStepRecords) {
  const std::string phases = Section(html_, "phases");
  const std::vector<Row> bars = Rows(phases, "bar");
  ASSERT_EQ(bars.size(), 3u);
  EXPECT_EQ(FindRow(bars, "0")->data.at("step-ns"), 80.0 * kMs);
  EXPECT_EQ(FindRow(bars, "2")->data.at("step-ns"), 90.0 * kMs);
  EXPECT_TRUE(Contains(phases, "data-phase=\"backward\" data-ns=\"45000000\""));  // rank 2
  EXPECT_TRUE(Contains(phases, "rank 2 · backward: 45 ms per step (50%)"));
  // The order a step runs them in, whatever the records' key order.
  EXPECT_LT(phases.find("data-phase=\"data\""), phases.find("data-phase=\"backward\""));
  EXPECT_LT(phases.find("data-phase=\"backward\""), phases.find("data-phase=\"sync\""));
}

// Under the phase bars: the probes' own share of the steps of the ranks that recorded it.
TEST_F(ReportTest, ProbeCostIsTheShareOfStepTimeInProbes) {
  const std::string phases = Section(html_, "phases");
  // (1 + 3) ms of (80 + 80) ms; rank 1: 3 of 80.
  EXPECT_TRUE(Contains(phases, "</code>): 2.5% of step time over 2 ranks, at most 3.75% (rank 1)."))
      << phases;
}

TEST_F(ReportTest, LossAndScaleValuesAreOnTheCurves) {
  const std::string loss = Section(html_, "loss");
  EXPECT_EQ(Count(loss, "<circle"), 3u * kSteps);
  EXPECT_TRUE(Contains(loss, "<title>rank 1 · step 2: loss 2.125</title>"));
  EXPECT_TRUE(Contains(loss, "data-value=\"2.125\""));
  EXPECT_FALSE(Contains(loss, "class=\"band\""));  // nothing aggregated
  const std::string scale = Section(html_, "loss-scale");
  EXPECT_TRUE(Contains(scale, "<title>rank 0 · step 1: loss scale 65536</title>"));
  EXPECT_TRUE(Contains(scale, "<title>rank 2 · step 3: loss scale 32768</title>"));
}

TEST_F(ReportTest, ConfigDiffShowsWhoHoldsWhichValueEscaped) {
  const std::string config = Section(html_, "config");
  EXPECT_TRUE(Contains(config, "<h3>Settings that differ (1)</h3>"));
  EXPECT_TRUE(Contains(config, "<code>env.NCCL_DEBUG</code>"));
  EXPECT_TRUE(Contains(config, "<code>&lt;i&gt;INFO&lt;/i&gt; &amp; co</code></td><td>1</td>"));
  EXPECT_TRUE(Contains(config, "<code>WARN</code></td><td>0,2</td>"));
  EXPECT_TRUE(Contains(config, "<details class=\"common\"><summary>"));
  EXPECT_TRUE(Contains(config, "<code>config.amp</code></th><td><code>fp16</code>"));
  EXPECT_FALSE(Contains(html_, "<i>INFO</i>"));
}

TEST_F(ReportTest, FindingsAreThoseOfCompareEscaped) {
  const std::string findings = Section(html_, "findings");
  EXPECT_TRUE(Contains(findings, "data-kind=\"config-mismatch\""));
  EXPECT_TRUE(Contains(findings, "&lt;i&gt;INFO&lt;/i&gt; &amp; co"));
  EXPECT_TRUE(Contains(findings, "<p class=\"hint\">"));
  EXPECT_TRUE(Contains(findings, "<table class=\"evidence\">"));
  // The JSON copy cannot close its script element early.
  const size_t json = html_.find("id=\"findings-json\">");
  ASSERT_NE(json, std::string::npos);
  const std::string tail = html_.substr(json);
  EXPECT_TRUE(Contains(tail, "\"schema\":\"dsdiag.findings/1\""));
  EXPECT_TRUE(Contains(tail, "\\u003ci>INFO\\u003c/i>"));
  EXPECT_EQ(Count(tail, "</"), 3u);  // </script>, </body>, </html>
}

TEST_F(ReportTest, LoaderSweepTableAndCurve) {
  const std::string sweep = Section(html_, "loader-sweep");
  EXPECT_TRUE(Contains(sweep, "<b>Recommended: 4 workers</b> — &lt;fast&gt; &amp; cheap"));
  EXPECT_TRUE(Contains(sweep, "<tr class=\"recommended\"><td>4</td><td>8</td><td>812.5</td>"));
  EXPECT_TRUE(Contains(sweep, "<td>2</td><td>8</td><td>640</td><td>610</td><td>655</td>"));
  EXPECT_EQ(Count(sweep, "<circle"), 3u);
  EXPECT_EQ(Count(sweep, "class=\"whisker\""), 1u);  // only the point with min and max
  EXPECT_TRUE(Contains(sweep, "recommended: 4"));
}

TEST_F(ReportTest, ABrokenSweepFileIsReportedInItsSection) {
  testing::WriteFile(dir_ / trace::kLoaderSweepFileName, "{\"schema\":\"dsdiag.loader-sweep/1\",");
  const std::string sweep = Section(Render(dir_.path()), "loader-sweep");
  EXPECT_TRUE(Contains(sweep, "class=\"error\""));
  EXPECT_TRUE(Contains(sweep, "loader-sweep.json:1:"));
}

TEST_F(ReportTest, TitleIsEscaped) {
  ReportOptions options;
  options.title = "run <7> & co";
  const std::string html = Render(dir_.path(), options);
  EXPECT_TRUE(Contains(html, "<title>run &lt;7&gt; &amp; co</title>"));
  EXPECT_TRUE(Contains(Render(dir_.path()), "<title>dsdiag report: report-test</title>"));
}

TEST(ReportInputTest, AMissingRunDirIsAnInputError) {
  std::ostringstream out;
  EXPECT_THROW(WriteReport("/nonexistent-dsdiag-run", {}, out), analyzers::RunInputError);
  EXPECT_TRUE(out.str().empty());
}

// Long runs and many ranks are binned: at most 200 step columns and 128 rank rows.
TEST(ReportBinningTest, ManyStepsAreBinned) {
  TempDir dir;
  for (int r = 0; r < 2; ++r) {
    RankTrace t(dir.path(), Header(r, 2, kBoot[r], kWall, 0));
    for (int64_t s = 0; s < 1000; ++s)
      t.Step(s, kBoot[r] + s * kStepNs, 80 * kMs, s, kEnterNs + kLate[r], 5 * kMs, Loss(r, 0));
    t.End(kBoot[r] + 1000 * kStepNs, 999);
  }
  const std::string html = Render(dir.path());
  const std::string map = Section(html, "heatmap");
  EXPECT_TRUE(Contains(map, "data-step-width=\"8\""));  // 1000 steps in 125 columns of 8
  EXPECT_TRUE(Contains(map, "columns: 8 steps each"));
  EXPECT_EQ(Count(map, "<rect x="), 2u * 125);
  EXPECT_TRUE(Contains(map, "rank 0 · steps 992-999&#10;least 3 ms per step"));
  const std::string loss = Section(html, "loss");
  EXPECT_EQ(Count(loss, "<circle"), 2u * 125);
  EXPECT_TRUE(Contains(loss, "class=\"band\""));
  // No step record says what the probes took: no line about it.
  EXPECT_FALSE(Contains(html, "probe-cost"));
}

TEST(ReportBinningTest, ManyRanksShareRows) {
  TempDir dir;
  constexpr int kRanks = 300;
  for (int r = 0; r < kRanks; ++r) {
    RankTrace t(dir.path(), Header(r, kRanks, kBoot[0], kWall, 0));
    const int64_t late = r == 200 ? 10 * kMs : 0;
    for (int64_t s = 0; s < 2; ++s)
      t.Step(s, kBoot[0] + s * kStepNs, 80 * kMs, s, kEnterNs + late, 10 * kMs - late + 1000,
             Loss(r % 3, s));
    t.End(kBoot[0] + 2 * kStepNs, 1);
  }
  const std::string html = Render(dir.path());
  const std::vector<Row> wait = Rows(Section(html, "heatmap"), "hm-row");
  ASSERT_EQ(wait.size(), 100u);  // 3 ranks a row
  EXPECT_EQ(wait[0].ranks, "0-2");
  // The straggler's row: it waits for nobody (the least wait of the row is 0), and its
  // arrival delay is the largest.
  EXPECT_EQ(FindRow(wait, "198-200")->data.at("min-ns"), 0.0);
  EXPECT_EQ(FindRow(wait, "0-2")->data.at("min-ns"), 10.0 * kMs);
  const std::vector<Row> delay = Rows(Section(html, "heatmap-delay"), "hm-row");
  const auto hottest = std::max_element(delay.begin(), delay.end(), [](const Row& a, const Row& b) {
    return a.data.at("max-ns") < b.data.at("max-ns");
  });
  EXPECT_EQ(hottest->ranks, "198-200");
  EXPECT_EQ(Rows(Section(html, "phases"), "bar").size(), 100u);
  // 16 loss lines of 19 ranks (the last of 15), and the band of all.
  const std::string loss = Section(html, "loss");
  EXPECT_EQ(Count(loss, "<g class=\"series\""), 16u);
  EXPECT_TRUE(Contains(loss, "data-name=\"ranks 285-299\""));
}

}  // namespace
}  // namespace dsdiag::report
