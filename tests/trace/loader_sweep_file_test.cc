// trace/loader_sweep_file.h: loader-sweep.json written by `dsdiag loader-sweep` (and the
// Python package's sweep), read by the report — what the writer writes reads back, and a bad
// file gives one LocatedIssue naming file, line, column and field.
#include "trace/loader_sweep_file.h"

#include <gtest/gtest.h>

#include <string>

namespace dsdiag::trace {
namespace {

std::string IssueOf(const std::string& text) {
  const LoaderSweepFile f = ParseLoaderSweep(text, "f.json");
  EXPECT_TRUE(f.present);
  EXPECT_FALSE(f.sweep);
  return f.issue ? f.issue->ToString() : "(no issue)";
}

TEST(LoaderSweepFileTest, WhatTheWriterWritesReadsBack) {
  LoaderSweep sweep;
  LoaderSweepPoint a;
  a.workers = 0;
  a.batch_size = 8;
  a.samples_per_s_median = 210.5;
  a.samples_per_s_min = 200;
  a.samples_per_s_max = 215.25;
  a.first_batch_ms = 12.5;
  sweep.points.push_back(a);
  sweep.recommendation = LoaderSweepRecommendation{0, 8, "fastest"};
  const std::string text = LoaderSweepJson(sweep);
  EXPECT_EQ(text,
            "{\"schema\":\"dsdiag.loader-sweep/1\",\"points\":[{\"workers\":0,\"batch_size\":8,"
            "\"samples_per_s_median\":210.5,\"samples_per_s_min\":200,\"samples_per_s_max\":"
            "215.25,\"first_batch_ms\":12.5,\"peak_rss_mb\":null}],\"recommendation\":{\"workers\":"
            "0,\"batch_size\":8,\"reason\":\"fastest\"}}\n");
  const LoaderSweepFile back = ParseLoaderSweep(text, "f.json");
  ASSERT_TRUE(back.sweep) << back.issue->ToString();
  EXPECT_EQ(LoaderSweepJson(*back.sweep), text);
}

// A Python sweep varies pin_memory and persistent_workers: written only when set, read back,
// and a value that is not a boolean is an issue naming the field.
TEST(LoaderSweepFileTest, TheDataLoaderSwitchesReadBackWhenPresent) {
  LoaderSweep sweep;
  LoaderSweepPoint a;
  a.workers = 2;
  a.batch_size = 16;
  a.samples_per_s_median = 100;
  a.pin_memory = true;
  a.persistent_workers = false;
  sweep.points.push_back(a);
  LoaderSweepRecommendation r{2, 16, "fastest"};
  r.pin_memory = true;
  r.persistent_workers = false;
  sweep.recommendation = r;
  const std::string text = LoaderSweepJson(sweep);
  EXPECT_NE(text.find("\"peak_rss_mb\":null,\"pin_memory\":true,\"persistent_workers\":false}"),
            std::string::npos)
      << text;
  const LoaderSweepFile back = ParseLoaderSweep(text, "f.json");
  ASSERT_TRUE(back.sweep) << back.issue->ToString();
  EXPECT_EQ(back.sweep->points[0].pin_memory, std::optional<bool>(true));
  EXPECT_EQ(back.sweep->recommendation->persistent_workers, std::optional<bool>(false));
  EXPECT_EQ(LoaderSweepJson(*back.sweep), text);
  EXPECT_NE(IssueOf(R"({"schema":"dsdiag.loader-sweep/1","points":[{"workers":0,"batch_size":1,)"
                    R"("samples_per_s_median":1,"pin_memory":1}]})")
                .find("expected field points[0].pin_memory: true or false, found '1'"),
            std::string::npos);
  EXPECT_EQ(LoaderSwitchesText(true, true), ", pin_memory, persistent_workers");
  EXPECT_EQ(LoaderSwitchesText(false, std::nullopt), "");
}

TEST(LoaderSweepFileTest, ParsesPointsAndRecommendation) {
  const LoaderSweepFile r = ParseLoaderSweep(
      R"({"schema":"dsdiag.loader-sweep/1",
          "points":[{"workers":0,"batch_size":8,"samples_per_s_median":210.5},
                    {"workers":4,"batch_size":8,"samples_per_s_median":812,
                     "samples_per_s_min":790.25,"samples_per_s_max":830,
                     "first_batch_ms":210.4,"peak_rss_mb":null,"future_field":[1]}],
          "recommendation":{"workers":4,"reason":"best"}})",
      "run/loader-sweep.json");
  ASSERT_TRUE(r.sweep) << r.issue->ToString();
  ASSERT_EQ(r.sweep->points.size(), 2u);
  EXPECT_EQ(r.sweep->points[0].samples_per_s_median, 210.5);
  EXPECT_FALSE(r.sweep->points[0].samples_per_s_min);
  EXPECT_EQ(*r.sweep->points[1].samples_per_s_min, 790.25);
  EXPECT_FALSE(r.sweep->points[1].peak_rss_mb);
  ASSERT_TRUE(r.sweep->recommendation);
  EXPECT_EQ(r.sweep->recommendation->workers, 4);
  EXPECT_FALSE(r.sweep->recommendation->batch_size);
  EXPECT_EQ(r.sweep->recommendation->reason, "best");
}

TEST(LoaderSweepFileTest, SyntaxErrorsNameFileLineAndColumn) {
  EXPECT_EQ(IssueOf("{\"schema\":\"dsdiag.loader-sweep/1\",\n \"points\":[}\n")
                .rfind("f.json:2:12: expected", 0),
            0u);
}

TEST(LoaderSweepFileTest, FieldErrorsNameTheFieldWhereItIs) {
  EXPECT_EQ(IssueOf(R"({"schema":"dsdiag.loader-sweep/2","points":[]})"),
            "f.json:1:11: expected field schema: \"dsdiag.loader-sweep/1\", found "
            "'\"dsdiag.loader-sweep/2\"'");
  EXPECT_EQ(IssueOf(R"({"schema":"dsdiag.loader-sweep/1"})"),
            "f.json:1:1: expected field points: an array, found no \"points\"");
  EXPECT_EQ(IssueOf("{\"schema\":\"dsdiag.loader-sweep/1\",\"points\":[{\"workers\":1,"
                    "\"batch_size\":8,\n\"samples_per_s_median\":1},{\"workers\":-1}]}"),
            "f.json:2:38: expected field points[1].workers: an integer >= 0, found '-1'");
  EXPECT_EQ(IssueOf(R"({"schema":"dsdiag.loader-sweep/1","points":[{"workers":1}]})"),
            "f.json:1:45: expected field points[0].batch_size: an integer >= 1, found no "
            "\"batch_size\"");
  EXPECT_EQ(IssueOf(R"({"schema":"dsdiag.loader-sweep/1","points":[],"recommendation":{}})"),
            "f.json:1:64: expected field recommendation.workers: an integer >= 0, found no "
            "\"workers\"");
}

TEST(LoaderSweepFileTest, AbsentFileIsNotAnError) {
  const LoaderSweepFile r = ReadLoaderSweepFile("/nonexistent-dsdiag-dir");
  EXPECT_FALSE(r.present);
  EXPECT_FALSE(r.issue);
}

}  // namespace
}  // namespace dsdiag::trace
