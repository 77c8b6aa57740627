// Step windows (step_driver.h) against lockstep: every window size, with files kept open or
// closed between windows, must give the findings of K=1, byte for byte — on the golden
// fixture runs and on synth runs with faults injected.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "analyzers/framework/compare.h"
#include "analyzers/output/findings_output.h"
#include "tests/analyzers/synth_test_run.h"
#include "tests/analyzers/test_run.h"
#include "trace/record_types.h"

namespace dsdiag::analyzers {
namespace {

struct Variant {
  int64_t window;
  size_t max_open_files;  // 0: automatic
};

std::vector<Variant> Variants(size_t ranks) {
  const size_t fewer = ranks > 1 ? ranks / 2 : 1;  // fewer files open than ranks
  return {{2, 0}, {3, 0}, {kWholeRun, 0}, {0, 0}, {1, fewer}, {2, fewer}, {3, 1}, {0, fewer}};
}

std::string CompareJson(const std::string& dir, Variant v, DriveResult* drive_stats = nullptr) {
  DriveOptions options;
  options.jobs = 1;
  options.step_window = v.window;
  options.max_open_files = v.max_open_files;
  CompareResult result = RunCompare(dir, options);
  if (drive_stats) drive_stats->files_kept_open = result.stats.lockstep;
  // `lockstep` says whether files stayed open, which is what some variants change.
  result.stats.lockstep = true;
  return FindingsToJson(result);
}

void ExpectSameAsLockstep(const std::string& dir, size_t ranks) {
  const std::string lockstep = CompareJson(dir, {1, 0});
  for (const Variant& v : Variants(ranks)) {
    DriveResult stats;
    EXPECT_EQ(CompareJson(dir, v, &stats), lockstep)
        << dir << ": window " << v.window << ", max open files " << v.max_open_files;
    if (v.max_open_files != 0 && v.max_open_files < ranks) EXPECT_FALSE(stats.files_kept_open);
  }
}

TEST(StepWindowTest, GoldenFixturesReadAlikeInEveryWindow) {
  const std::filesystem::path runs = std::filesystem::path(DSDIAG_SOURCE_DIR) / "fixtures/runs";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(runs)) {
    if (!entry.is_directory()) continue;
    size_t ranks = 0;
    for (const auto& f : std::filesystem::directory_iterator(entry.path()))
      ranks += f.path().filename().string().rfind("rank-", 0) == 0 ? 1 : 0;
    ExpectSameAsLockstep(entry.path().string(), ranks);
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

using testing::WriteSynth;

TEST(StepWindowTest, SynthFaultsReadAlikeInEveryWindow) {
  testing::TestRun run;
  WriteSynth(run.dir(), 12, 40,
             {"straggler:rank=2,ms=30", "grad-desync:rank=5,step=20", "unused-param:rank=9",
              "clock-skew:rank=7,ms=300", "crash:rank=10,step=33"});
  const std::string lockstep = CompareJson(run.dir(), {1, 0});
  for (const char* kind : {"\"straggler\"", "\"grad-desync\"", "\"missing-grad\"", "\"rank-died\""})
    EXPECT_NE(lockstep.find(kind), std::string::npos) << kind;
  ExpectSameAsLockstep(run.dir(), 12);
}

TEST(StepWindowTest, AHangWithDumpsReadsAlikeInEveryWindow) {
  testing::TestRun run;
  WriteSynth(run.dir(), 9, 30, {"no-broadcast", "hang:rank=3,step=21"});
  EXPECT_NE(CompareJson(run.dir(), {1, 0}).find("\"hang\""), std::string::npos);
  ExpectSameAsLockstep(run.dir(), 9);
}

TEST(StepWindowTest, AResumedRunStartingAtStep1000ReadsAlike) {
  testing::TestRun run;
  for (int r = 0; r < 3; ++r) {
    auto w = run.Open(testing::TestRun::Header(r, 3));
    // Steps 1000..1011, rank 2 stopping early, rank 1 skipping 1005..1007.
    for (int64_t step = 1000; step < (r == 2 ? 1006 : 1012); ++step) {
      if (r == 1 && step >= 1005 && step <= 1007) continue;
      testing::TestRun::WriteSteps(w.get(), step, step + 1);
    }
    if (r != 2) testing::TestRun::WriteEnd(w.get(), "ok", 0);
  }
  const std::string lockstep = CompareJson(run.dir(), {1, 0});
  EXPECT_NE(lockstep.find("\"rank-died\""), std::string::npos) << lockstep;
  ExpectSameAsLockstep(run.dir(), 3);
}

}  // namespace
}  // namespace dsdiag::analyzers
