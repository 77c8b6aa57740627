// RankProbes: three ranks on threads, one store, start with one call each — one run id,
// clock offsets in the headers, the trace, flight recorder and collective probe wired —
// and Finish with the end clock and an `ok` end record. Bad settings fail with a reason.
#include "probes/rank_probes.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/files.h"
#include "tests/support/memory_store.h"
#include "tests/support/temp_dir.h"
#include "trace/clock.h"
#include "trace/run_files.h"
#include "trace/trace_reader.h"

namespace dsdiag::probes {
namespace {

using test_support::Contains;
using test_support::ReadFile;
using test_support::SplitLines;

TEST(RankProbesTest, RanksAgreeOnTheRunIdAndMeasureTheirClocks) {
  test_support::TempDir dir("rank-probes");
  test_support::MemoryStore store;
  const int world = 3;
  int64_t skew = 1'500'000'000;  // rank 2's wall clock runs 1.5 s ahead
  std::vector<std::string> errors(world);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < world; ++rank) {
    ranks.emplace_back([&, rank] {
      RankProbesConfig config;
      config.run_dir = dir.path();
      config.rank = rank;
      config.world_size = world;
      config.stop_signals = false;  // one per process; StopSignals has its own test
      config.header.config.Set("lr", 0.1);
      if (rank == 2) config.wall_clock = [skew] { return trace::WallNs() + skew; };
      std::unique_ptr<RankProbes> probes = RankProbes::Start(config, &store, &errors[rank]);
      if (!probes) return;
      probes->session()->BeginStep(0, 0);
      {
        CollectiveScope c(probes->collectives(), 0, "allreduce", "f32", 4, 16, "grad-bucket-0");
        c.Started();
      }
      probes->session()->EndStep({.loss = 1.0});
      probes->Finish();
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int rank = 0; rank < world; ++rank) ASSERT_EQ(errors[rank], "") << "rank " << rank;

  std::string run_id;
  for (int rank = 0; rank < world; ++rank) {
    const std::string path = dir.path() + "/" + trace::RankTraceFileName(rank);
    std::string error;
    auto reader = trace::TraceReader::Open(path, &error);
    ASSERT_TRUE(reader) << error;
    ASSERT_TRUE(reader->ReadHeader());
    const trace::TraceHeader& header = *reader->header();
    EXPECT_EQ(header.rank, rank);
    EXPECT_EQ(header.world_size, world);
    EXPECT_EQ(header.local_rank, rank);
    if (rank == 0) run_id = header.run_id;
    EXPECT_EQ(header.run_id, run_id);
    EXPECT_FALSE(run_id.empty());
    EXPECT_GE(header.clock.offset_err_ns, 0) << "rank " << rank;
    const int64_t expected = rank == 2 ? skew : 0;
    EXPECT_NEAR(static_cast<double>(header.clock.offset_ns), static_cast<double>(expected),
                static_cast<double>(header.clock.offset_err_ns) + 1e6)
        << "rank " << rank;
    const std::string text = ReadFile(path);
    EXPECT_TRUE(Contains(text, R"("type":"coll")")) << text;
    EXPECT_TRUE(Contains(text, R"("when":"start")")) << text;
    EXPECT_TRUE(Contains(text, R"("when":"end")")) << text;
    EXPECT_TRUE(Contains(SplitLines(text).back(), R"("reason":"ok")")) << text;
  }
}

TEST(RankProbesTest, ARankWithoutAStoreOrRunIdIsTold) {
  RankProbesConfig config;
  config.rank = 1;
  config.world_size = 2;
  std::string error;
  EXPECT_FALSE(RankProbes::Start(config, nullptr, &error));
  EXPECT_TRUE(Contains(error, "agree on a run id")) << error;

  config.rank = 2;
  EXPECT_FALSE(RankProbes::Start(config, nullptr, &error));
  EXPECT_TRUE(Contains(error, "expected 0 <= rank < world size")) << error;
}

TEST(RankProbesTest, ARankWhoseStoreFailsIsTold) {
  test_support::MemoryStore store(std::chrono::milliseconds(50));  // rank 0 never comes
  RankProbesConfig config;
  config.rank = 1;
  config.world_size = 2;
  std::string error;
  EXPECT_FALSE(RankProbes::Start(config, &store, &error));
  EXPECT_TRUE(Contains(error, "store failed")) << error;
}

TEST(RankProbesTest, TheEnvironmentOfDsdiagRunIsRead) {
  setenv("DSDIAG_OUT", "/tmp/somewhere", 1);
  setenv("DSDIAG_PROBES", "full", 1);
  setenv("DSDIAG_TIMEOUT", "12.5", 1);
  setenv("DSDIAG_RUN_ID", "run-7", 1);
  setenv("RANK", "3", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("LOCAL_RANK", "1", 1);
  RankProbesConfig config = RankProbesConfig::FromEnvironment();
  EXPECT_EQ(config.rank, 3);
  EXPECT_EQ(config.world_size, 4);
  EXPECT_EQ(config.local_rank, 1);
  EXPECT_EQ(config.run_dir, "/tmp/somewhere");
  EXPECT_EQ(config.mode, Mode::kFull);
  EXPECT_DOUBLE_EQ(config.collective_timeout_s, 12.5);
  EXPECT_EQ(config.run_id, "run-7");
  EXPECT_EQ(config.environment_error, "");

  setenv("DSDIAG_PROBES", "heavy", 1);
  config = RankProbesConfig::FromEnvironment();
  std::string error;
  EXPECT_FALSE(RankProbes::Start(config, nullptr, &error));
  EXPECT_EQ(error, "DSDIAG_PROBES=heavy: expected off, light or full");
  setenv("DSDIAG_PROBES", "light", 1);
  setenv("WORLD_SIZE", "four", 1);
  EXPECT_EQ(RankProbesConfig::FromEnvironment().environment_error,
            "WORLD_SIZE=four: expected a number >= 0");
  for (const char* name : {"DSDIAG_OUT", "DSDIAG_PROBES", "DSDIAG_TIMEOUT", "DSDIAG_RUN_ID", "RANK",
                           "WORLD_SIZE", "LOCAL_RANK"}) {
    unsetenv(name);
  }
}

}  // namespace
}  // namespace dsdiag::probes
