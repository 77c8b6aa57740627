// `dsdiag compare` with reader threads, and read ahead on one thread, against the driver
// thread alone, on synth runs with several faults at once: the findings JSON (stats
// included) must be the same bytes.
#include <gtest/gtest.h>

#include <string>

#include "analyzers/framework/compare.h"
#include "analyzers/output/findings_output.h"
#include "tests/analyzers/synth_test_run.h"
#include "tests/analyzers/test_run.h"

namespace dsdiag::analyzers {
namespace {

std::string CompareJson(const std::string& dir, int jobs) {
  DriveOptions options;
  options.jobs = jobs;
  return FindingsToJson(RunCompare(dir, options));
}

// Read ahead on one thread (parse_ahead.h), in windows of `window` steps (0: automatic).
std::string ReadAheadJson(const std::string& dir, int64_t window) {
  DriveOptions options;
  options.force_parse_ahead = true;
  options.step_window = window;
  return FindingsToJson(RunCompare(dir, options));
}

using testing::WriteSynth;

TEST(ThreadedCompareSynthTest, SameFindingsAsTheSerialPath) {
  testing::TestRun run;
  WriteSynth(run.dir(), 12, 40,
             {"straggler:rank=2,ms=30", "grad-desync:rank=5,step=20", "unused-param:rank=9",
              "clock-skew:rank=7,ms=300", "crash:rank=10,step=33"});
  const std::string serial = CompareJson(run.dir(), 1);
  // The faults were found (not two empty reports that agree).
  for (const char* kind : {"\"straggler\"", "\"grad-desync\"", "\"missing-grad\"", "\"rank-died\""})
    EXPECT_NE(serial.find(kind), std::string::npos) << kind;
  EXPECT_EQ(CompareJson(run.dir(), 2), serial);
  EXPECT_EQ(CompareJson(run.dir(), 4), serial);
  for (int64_t window : {0, 1, 7}) EXPECT_EQ(ReadAheadJson(run.dir(), window), serial) << window;
}

TEST(ThreadedCompareSynthTest, SameFindingsOnAHangWithDumps) {
  testing::TestRun run;
  WriteSynth(run.dir(), 9, 30, {"no-broadcast", "hang:rank=3,step=21"});
  const std::string serial = CompareJson(run.dir(), 1);
  EXPECT_NE(serial.find("\"hang\""), std::string::npos);
  EXPECT_EQ(CompareJson(run.dir(), 2), serial);
  EXPECT_EQ(CompareJson(run.dir(), 3), serial);
  EXPECT_EQ(ReadAheadJson(run.dir(), 0), serial);
}

}  // namespace
}  // namespace dsdiag::analyzers
