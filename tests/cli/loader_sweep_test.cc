// `dsdiag loader-sweep`: the torch-free table, JSON and recommendation, then (in a dsdiag
// built with LibTorch) a short real sweep whose recommendation must follow from its own
// figures.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/loader_sweep_command.h"
#include "cli/subcommand.h"
#include "tests/cli/compare_test_util.h"
#include "trace/loader_sweep_file.h"
#include "trace/loader_sweep_summary.h"

namespace dsdiag::cli {
namespace {

using trace::LoaderSweepPoint;
using LoaderSweepResult = trace::LoaderSweep;

LoaderSweepPoint Point(int workers, int batch, double median) {
  LoaderSweepPoint p;
  p.workers = workers;
  p.batch_size = batch;
  p.samples_per_s_median = median;
  p.samples_per_s_min = median - 1;
  p.samples_per_s_max = median + 1;
  return p;
}

TEST(LoaderSweepResultTest, RecommendsTheFastestMedian) {
  const auto r =
      trace::RecommendLoaderSetting({Point(0, 8, 100), Point(2, 8, 300), Point(4, 8, 200)});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->workers, 2);
  EXPECT_EQ(r->batch_size, 8);
  EXPECT_NE(r->reason.find("fastest"), std::string::npos) << r->reason;
}

TEST(LoaderSweepResultTest, PrefersFewerWorkersWithinFivePercent) {
  const auto r =
      trace::RecommendLoaderSetting({Point(1, 8, 960), Point(4, 8, 1000), Point(8, 8, 990)});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->workers, 1);
  EXPECT_NE(r->reason.find("within 5%"), std::string::npos) << r->reason;
  // 6% behind is too far.
  EXPECT_EQ(trace::RecommendLoaderSetting({Point(1, 8, 940), Point(4, 8, 1000)})->workers, 4);
  EXPECT_FALSE(trace::RecommendLoaderSetting({}));
}

// Among equally fast points the one with fewer switches on wins; the table shows the
// switch columns only for a sweep that has them.
TEST(LoaderSweepResultTest, PrefersFewerLoaderSwitchesAmongEquals) {
  std::vector<trace::LoaderSweepPoint> points = {Point(2, 8, 1000), Point(2, 8, 990)};
  points[0].pin_memory = true;
  points[1].pin_memory = false;
  const auto r = trace::RecommendLoaderSetting(points);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->pin_memory, std::optional<bool>(false));
  EXPECT_NE(r->reason.find("fewer loader switches on"), std::string::npos) << r->reason;
  LoaderSweepResult result;
  result.points = points;
  result.recommendation = r;
  const std::string table = trace::LoaderSweepTable(result);
  EXPECT_NE(table.find("pin  persist"), std::string::npos) << table;
  EXPECT_NE(table.find("recommendation: 2 workers at batch 8: "), std::string::npos) << table;
  result.points = {Point(2, 8, 1000)};
  EXPECT_EQ(trace::LoaderSweepTable(result).find("persist"), std::string::npos);
}

TEST(LoaderSweepResultTest, JsonFollowsTheDocumentedSchema) {
  LoaderSweepResult result;
  result.points = {Point(0, 8, 210), Point(4, 8, 812.5)};
  result.points[1].first_batch_ms = 210.4;
  result.points[1].peak_rss_mb = 1532;
  result.recommendation = trace::RecommendLoaderSetting(result.points);
  const std::string json = trace::LoaderSweepJson(result);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(json).get(root), simdjson::SUCCESS) << json;
  EXPECT_EQ(std::string_view(root["schema"]), "dsdiag.loader-sweep/1");
  simdjson::dom::array points = root["points"];
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(int64_t(points.at(1)["workers"]), 4);
  EXPECT_EQ(int64_t(points.at(1)["batch_size"]), 8);
  EXPECT_DOUBLE_EQ(double(points.at(1)["samples_per_s_median"]), 812.5);
  EXPECT_DOUBLE_EQ(double(points.at(1)["first_batch_ms"]), 210.4);
  EXPECT_TRUE(points.at(0)["peak_rss_mb"].is_null());
  EXPECT_EQ(int64_t(root["recommendation"]["workers"]), 4);
}

TEST(LoaderSweepResultTest, TableHasARowPerPointAndTheRecommendation) {
  LoaderSweepResult result;
  result.points = {Point(0, 8, 210), Point(2, 16, 400)};
  result.recommendation = trace::RecommendLoaderSetting(result.points);
  const std::string table = trace::LoaderSweepTable(result);
  EXPECT_NE(table.find("samples/s"), std::string::npos);
  EXPECT_NE(table.find("209.0-211.0"), std::string::npos) << table;
  EXPECT_NE(table.find("recommendation: 2 workers at batch 16: fastest"), std::string::npos)
      << table;
}

TEST(LoaderSweepCommandTest, ParsesIntegerLists) {
  EXPECT_EQ(ParseIntList("workers", "0,1,2", 0), (std::vector<int>{0, 1, 2}));
  EXPECT_THROW(ParseIntList("workers", "0,x", 0), UsageError);
  EXPECT_THROW(ParseIntList("batch-size", "0", 1), UsageError);
  EXPECT_THROW(ParseIntList("workers", "", 0), UsageError);
}

TEST(LoaderSweepCommandTest, ShortRealSweepRecommendsFromItsOwnFigures) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dsdiag-sweep-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto r = testing::RunDsdiag(
      "loader-sweep --workers 0,2 --batch-size 4 --batches 4 --warmup 2 "
      "--repeats 2 --dataset-size 64 --format json --out '" +
      dir.string() + "'");
  if (r.status == 2 && r.err.find("without LibTorch") != std::string::npos)
    GTEST_SKIP() << "dsdiag built without LibTorch";
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(testing::ReadFile((dir / "loader-sweep.json").string()), r.out);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(r.out).get(root), simdjson::SUCCESS) << r.out;
  simdjson::dom::array points = root["points"];
  ASSERT_EQ(points.size(), 2u);
  std::vector<LoaderSweepPoint> measured;
  for (simdjson::dom::element p : points) {
    LoaderSweepPoint m = Point(int(int64_t(p["workers"])), int(int64_t(p["batch_size"])),
                               double(p["samples_per_s_median"]));
    EXPECT_GT(m.samples_per_s_median, 0);
    EXPECT_LE(double(p["samples_per_s_min"]), m.samples_per_s_median);
    EXPECT_GE(double(p["samples_per_s_max"]), m.samples_per_s_median);
    EXPECT_GT(double(p["first_batch_ms"]), 0);
    measured.push_back(m);
  }
  EXPECT_EQ(measured[0].workers, 0);
  EXPECT_EQ(measured[1].workers, 2);
  const auto expected = trace::RecommendLoaderSetting(measured);
  EXPECT_EQ(int64_t(root["recommendation"]["workers"]), expected->workers);
  EXPECT_EQ(std::string_view(root["recommendation"]["reason"]), expected->reason);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dsdiag::cli
