// `dsdiag report` end to end on `dsdiag synth` runs: the sections, a straggler standing out
// in both heatmaps, trace values in the tooltips, compare's findings, bad input, a
// 1,024-rank run staying small, and the page opened by a real browser (headless Chromium,
// scripts/check-report-in-browser; skipped when Chromium is not installed).
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "report/html.h"
#include "tests/report/report_test_util.h"
#include "tests/support/shell.h"
#include "trace/record_types.h"
#include "trace/trace_reader.h"

namespace dsdiag::report {
namespace {

namespace fs = std::filesystem;
using testing::Contains;
using testing::Count;
using testing::ReadFile;
using testing::Row;
using testing::Rows;
using testing::Section;
using testing::TempDir;

using test_support::CommandResult;
using test_support::Quote;
using test_support::RunShell;

const Row& Coolest(const std::vector<Row>& rows, const std::string& key) {
  return *std::min_element(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    return a.data.at(key) < b.data.at(key);
  });
}

const Row& Hottest(const std::vector<Row>& rows, const std::string& key) {
  return *std::max_element(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    return a.data.at(key) < b.data.at(key);
  });
}

class ReportCliTest : public ::testing::Test {
 protected:
  CommandResult Dsdiag(const std::string& args) { return test_support::RunDsdiag(args); }
  std::string Synth(const std::string& name, const std::string& args) {
    const std::string dir = tmp_ / name;
    const CommandResult r = Dsdiag("synth " + args + " --out " + Quote(dir));
    EXPECT_EQ(r.status, 0) << r.err;
    return dir;
  }
  // `dsdiag report` on `dir`, expecting success; returns the page.
  std::string Report(const std::string& dir, const std::string& out) {
    const CommandResult r = Dsdiag("report " + Quote(dir) + " -o " + Quote(out));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err, "");  // quiet when stderr is not a terminal
    EXPECT_EQ(r.out, "");
    return ReadFile(out);
  }
  TempDir tmp_;
};

TEST_F(ReportCliTest, StragglerRunReport) {
  const std::string dir =
      Synth("straggler", "--ranks 4 --steps 30 --inject straggler:rank=1,ms=30");
  const std::string html = Report(dir, tmp_ / "straggler.html");
  for (const char* id : {"findings", "heatmap", "heatmap-delay", "phases", "loss", "config"})
    EXPECT_TRUE(Contains(html, "<section id=\"" + std::string(id) + "\">")) << id;
  EXPECT_FALSE(Contains(html, "id=\"loader-sweep\""));  // no loader-sweep.json
  EXPECT_FALSE(Contains(html, "http://"));
  EXPECT_FALSE(Contains(html, "https://"));
  EXPECT_FALSE(Contains(html, "<script src"));
  EXPECT_FALSE(Contains(html, "<link"));

  // Everyone waits for rank 1, which waits for nobody and arrives last.
  const std::vector<Row> wait = Rows(Section(html, "heatmap"), "hm-row");
  ASSERT_EQ(wait.size(), 4u);
  EXPECT_EQ(Coolest(wait, "mean-ns").ranks, "1");
  for (const Row& r : wait) {
    if (r.ranks == "1") continue;
    EXPECT_GT(r.data.at("min-ns"), 20e6) << "rank " << r.ranks;
  }
  const std::vector<Row> delay = Rows(Section(html, "heatmap-delay"), "hm-row");
  ASSERT_EQ(delay.size(), 4u);
  EXPECT_EQ(Hottest(delay, "mean-ns").ranks, "1");
  EXPECT_GT(Hottest(delay, "mean-ns").data.at("min-ns"), 20e6);
  // Its backward phase is the longest (everyone's step takes as long: they wait in sync).
  const std::string phases = Section(html, "phases");
  const std::regex backward(
      "<g class=\"bar\" data-ranks=\"([0-9]+)\"[^>]*>(?:(?!</g>).)*?"
      "data-phase=\"backward\" data-ns=\"([0-9.e+]+)\"");
  std::string slowest;
  double slowest_ns = 0;
  int bars = 0;
  for (auto it = std::sregex_iterator(phases.begin(), phases.end(), backward);
       it != std::sregex_iterator(); ++it, ++bars) {
    if (std::stod((*it)[2]) > slowest_ns) {
      slowest_ns = std::stod((*it)[2]);
      slowest = (*it)[1];
    }
  }
  EXPECT_EQ(bars, 4);
  EXPECT_EQ(slowest, "1");
}

TEST_F(ReportCliTest, LossValuesOfTheTraceAreInTheTooltips) {
  const std::string dir = Synth("loss", "--ranks 2 --steps 6");
  const std::string html = Report(dir, tmp_ / "loss.html");
  std::string error;
  auto reader = trace::TraceReader::Open(dir + "/rank-00001.jsonl", &error);
  ASSERT_TRUE(reader) << error;
  trace::Record r;
  int checked = 0;
  while (reader->Next(&r)) {
    if (r.type() != trace::rec::kStep) continue;
    const double loss = r.Double("loss").value();
    const std::string title =
        "<title>rank 1 · step " + std::to_string(r.step()) + ": loss " + Num(loss, 8) + "</title>";
    EXPECT_TRUE(Contains(Section(html, "loss"), title)) << title;
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

TEST_F(ReportCliTest, FindingsAreCompares) {
  const std::string dir = Synth(
      "crash", "--ranks 4 --steps 12 --inject crash:rank=2,step=7 --inject unused-param:rank=3");
  const std::string html = Report(dir, tmp_ / "crash.html");
  const CommandResult compare = Dsdiag("compare --format json " + Quote(dir));
  ASSERT_NE(compare.status, 2) << compare.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_FALSE(parser.parse(compare.out).get(doc));
  size_t findings = 0;
  for (simdjson::dom::element f : doc["findings"].get_array()) {
    const std::string kind(f["kind"].get_string().value());
    const std::string summary(f["summary"].get_string().value());
    EXPECT_TRUE(Contains(Section(html, "findings"), "data-kind=\"" + kind + "\"")) << kind;
    EXPECT_TRUE(Contains(Section(html, "findings"), Escape(summary))) << summary;
    ++findings;
  }
  EXPECT_GE(findings, 2u);
  EXPECT_EQ(Count(Section(html, "findings"), "<article class=\"finding"), findings);
  // A report is a picture: it succeeds whatever the findings.
  EXPECT_EQ(compare.status, 1);
}

TEST_F(ReportCliTest, BadInputIsReportedLikeCompare) {
  const std::string missing = tmp_ / "no-such-run";
  const std::string out = tmp_ / "missing.html";
  const CommandResult r = Dsdiag("report " + Quote(missing) + " -o " + Quote(out));
  EXPECT_EQ(r.status, 2);
  const CommandResult c = Dsdiag("compare " + Quote(missing));
  EXPECT_EQ(c.status, 2);
  const std::string prefix = "dsdiag compare: ";
  ASSERT_EQ(c.err.rfind(prefix, 0), 0u) << c.err;
  EXPECT_EQ(r.err, "dsdiag report: " + c.err.substr(prefix.size()));
  EXPECT_TRUE(Contains(r.err, missing));
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp_.path()), fs::directory_iterator()), 0)
      << "a temporary file was left behind";

  const CommandResult no_output = Dsdiag("report " + Quote(missing));
  EXPECT_EQ(no_output.status, 2);
  EXPECT_TRUE(Contains(no_output.err, "missing -o FILE")) << no_output.err;

  const std::string dir = Synth("ok", "--ranks 2 --steps 2");
  const CommandResult unwritable = Dsdiag("report " + Quote(dir) + " -o /nonexistent-dir/r.html");
  EXPECT_EQ(unwritable.status, 2);
  EXPECT_TRUE(Contains(unwritable.err, "cannot write '/nonexistent-dir/r.html'")) << unwritable.err;
}

TEST_F(ReportCliTest, HelpListsTheOptions) {
  const CommandResult r = Dsdiag("report --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(Contains(r.out, "usage: dsdiag report RUN_DIR -o FILE.html"));
  EXPECT_TRUE(Contains(r.out, "--title"));
  EXPECT_TRUE(Contains(Dsdiag("help").out, "report"));
}

// 1,024 ranks: 128 rows of 8 ranks, a bounded number of SVG elements, and the straggler's
// row still stands out in both maps.
TEST_F(ReportCliTest, ThousandRanksStayBounded) {
  const std::string dir =
      Synth("big", "--ranks 1024 --steps 200 --inject straggler:rank=700,ms=30");
  const std::string html = Report(dir, tmp_ / "big.html");
  const size_t rects = Count(html, "<rect");
  EXPECT_LE(rects, 2u * 128 * 200 + 128 * 8 + 16) << "SVG rects";
  EXPECT_LE(Count(html, "<circle"), 16u * 200);
  EXPECT_LT(html.size(), size_t{16} << 20);
  const std::string map = Section(html, "heatmap");
  EXPECT_TRUE(Contains(map, "data-ranks-per-row=\"8\""));
  const std::vector<Row> wait = Rows(map, "hm-row");
  ASSERT_EQ(wait.size(), 128u);
  EXPECT_EQ(Coolest(wait, "min-ns").ranks, "696-703");
  const std::vector<Row> delay = Rows(Section(html, "heatmap-delay"), "hm-row");
  EXPECT_EQ(Hottest(delay, "max-ns").ranks, "696-703");
  fs::remove_all(dir);  // 250 MB
}

TEST_F(ReportCliTest, OpensInABrowser) {
  const std::string dir = Synth("browser", "--ranks 4 --steps 20 --inject straggler:rank=2,ms=20");
  const std::string page = tmp_ / "browser.html";
  Report(dir, page);
  const std::string png = tmp_ / "browser.png";
  const CommandResult r =
      RunShell(Quote(std::string(DSDIAG_SOURCE_DIR) + "/scripts/check-report-in-browser") +
               " --screenshot " + Quote(png) + " " + Quote(page));
  if (r.status == 77) GTEST_SKIP() << "Chromium is not installed: " << r.err;
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_GT(fs::file_size(png), 32768u);  // a page, not a blank capture (about 12 KB)
}

}  // namespace
}  // namespace dsdiag::report
