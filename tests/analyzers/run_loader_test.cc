#include "analyzers/framework/run_loader.h"

#include <gtest/gtest.h>

#include "analyzers/framework/input_error.h"
#include "tests/analyzers/test_run.h"
#include "trace/flight_dump.h"
#include "trace/run_files.h"

namespace dsdiag::analyzers {
namespace {

using testing::TestRun;

// The message of the RunInputError LoadRun throws, or "" when it does not throw.
std::string LoadError(const std::string& dir) {
  try {
    LoadRun(dir);
  } catch (const RunInputError& e) {
    return e.what();
  }
  return "";
}

TEST(RunLoaderTest, MissingDirNamesIt) {
  EXPECT_NE(LoadError("/nonexistent/dsdiag-run").find("/nonexistent/dsdiag-run"),
            std::string::npos);
}

TEST(RunLoaderTest, DirWithoutTracesIsAnInputError) {
  TestRun run;
  run.WriteFile("README.txt", "not a trace\n");
  run.WriteFile("rank-1.jsonl", "{}\n");  // fewer than 5 digits: not a rank trace name
  const std::string error = LoadError(run.dir());
  EXPECT_NE(error.find("no rank traces"), std::string::npos) << error;
  EXPECT_NE(error.find(run.dir()), std::string::npos) << error;
}

TEST(RunLoaderTest, TwoFileNamesForOneRankNameBoth) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 1);
  run.Open(TestRun::Header(1, 2), "rank-00001.jsonl");
  run.Open(TestRun::Header(1, 2), "rank-000001.jsonl");
  const std::string error = LoadError(run.dir());
  EXPECT_NE(error.find("rank-00001.jsonl"), std::string::npos) << error;
  EXPECT_NE(error.find("rank-000001.jsonl"), std::string::npos) << error;
}

TEST(RunLoaderTest, HeaderRankDifferentFromFileNameNamesBothFiles) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 1);
  run.WriteCleanRank(TestRun::Header(1, 2), 1);
  run.Open(TestRun::Header(1, 2), "rank-00002.jsonl");  // says rank 1, named rank 2
  const std::string error = LoadError(run.dir());
  EXPECT_NE(error.find("rank-00002.jsonl:1"), std::string::npos) << error;
  EXPECT_NE(error.find("rank-00001.jsonl' also claims rank 1"), std::string::npos) << error;
}

TEST(RunLoaderTest, MajorityDecidesWorldSizeAndRunIdAndFindsMissingRanks) {
  TestRun run;
  for (int r : {0, 1, 3}) run.WriteCleanRank(TestRun::Header(r, 4), 1);
  run.WriteFile("notes.txt", "ignored\n");
  run.WriteFile("flight-rank-00001.json", "{}");
  const RunContext ctx = LoadRun(run.dir());
  EXPECT_EQ(ctx.world_size, 4);
  EXPECT_EQ(ctx.run_id, "test-run");
  EXPECT_EQ(ctx.ranks_found, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(ctx.missing_ranks, (std::vector<int>{2}));
  // A dump is parsed by the loader: "{}" is no dump, so it is left out (trace-corrupt says so).
  EXPECT_TRUE(ctx.flight_dumps.empty());
  ASSERT_EQ(ctx.excluded_dumps.size(), 1u);
  EXPECT_EQ(ctx.excluded_dumps[0].rank, 1);
  EXPECT_EQ(ctx.excluded_dumps[0].reason, ExcludedFlightDump::Reason::kUnreadable);
  EXPECT_EQ(ctx.excluded_dumps[0].issue.expected, "\"schema\": \"dsdiag.flight/1\"");
  EXPECT_TRUE(ctx.excluded.empty());
  ASSERT_EQ(ctx.ranks.size(), 3u);
  EXPECT_EQ(ctx.ranks[2].file_name, "rank-00003.jsonl");
  EXPECT_EQ(ctx.ranks[2].header.host, "node0");
}

// Ranks configured alike hold one copy of the config (issue 35: ~1 KB a rank at 131,072
// ranks); a rank configured otherwise keeps its own.
TEST(RunLoaderTest, EqualConfigsAreSharedAndOthersKept) {
  TestRun run;
  for (int r = 0; r < 4; ++r) {
    trace::TraceHeader h = TestRun::Header(r, 4);
    h.config.Set("model", "resnet50");
    h.config.Set("lr", r == 2 ? trace::JsonValue(0.5) : trace::JsonValue(0.1));
    h.config.Set("batch", r == 3 ? trace::JsonValue("8") : trace::JsonValue(8));
    run.WriteCleanRank(h, 1);
  }
  const RunContext ctx = LoadRun(run.dir());
  ASSERT_EQ(ctx.ranks.size(), 4u);
  const auto members = [&](int r) -> const auto& { return ctx.ranks[r].header.config.members(); };
  EXPECT_EQ(&members(0), &members(1));
  EXPECT_NE(&members(1), &members(2));
  EXPECT_NE(&members(0), &members(3));
  EXPECT_EQ(ctx.ranks[1].header.config.Find("lr")->as_double(), 0.1);
  EXPECT_EQ(ctx.ranks[2].header.config.Find("lr")->as_double(), 0.5);
  EXPECT_EQ(ctx.ranks[3].header.config.Find("batch")->kind(), trace::JsonValue::Kind::kString);
}

// Flight dumps are parsed once, here: the usable ones are in flight_dumps, the others in
// excluded_dumps with the reason (the analyzers read neither file again).
TEST(RunLoaderTest, FlightDumpsAreParsedOnceAndSortedIntoUsableAndExcluded) {
  TestRun run;
  for (int r : {0, 1, 2, 3}) run.WriteCleanRank(TestRun::Header(r, 4), 1);
  auto dump = [](int rank, const std::string& run_id) {
    trace::FlightDump d;
    d.run_id = run_id;
    d.rank = rank;
    d.world_size = 4;
    d.reason = "timeout";
    d.ts = 5;
    return trace::FlightDumpJson(d);
  };
  run.WriteFile(trace::FlightDumpFileName(0), dump(0, "test-run"));
  run.WriteFile(trace::FlightDumpFileName(1), dump(1, "another-run"));
  run.WriteFile(trace::FlightDumpFileName(2), dump(3, "test-run"));  // names another rank
  run.WriteFile(trace::FlightDumpFileName(3), dump(3, ""));          // no run id: kept
  const RunContext ctx = LoadRun(run.dir());
  ASSERT_EQ(ctx.flight_dumps.size(), 2u);
  EXPECT_EQ(ctx.flight_dumps[0].rank, 0);
  EXPECT_EQ(ctx.flight_dumps[0].dump.reason, "timeout");
  EXPECT_EQ(ctx.flight_dumps[0].file_name, "flight-rank-00000.json");
  EXPECT_EQ(ctx.flight_dumps[1].rank, 3);
  ASSERT_NE(ctx.FlightDumpOf(3), nullptr);
  EXPECT_EQ(ctx.FlightDumpOf(1), nullptr);
  ASSERT_EQ(ctx.excluded_dumps.size(), 2u);
  EXPECT_EQ(ctx.excluded_dumps[0].reason, ExcludedFlightDump::Reason::kForeignRunId);
  EXPECT_EQ(ctx.excluded_dumps[0].dump_run_id, "another-run");
  EXPECT_EQ(ctx.excluded_dumps[1].reason, ExcludedFlightDump::Reason::kRankMismatch);
  EXPECT_EQ(ctx.excluded_dumps[1].dump_rank, 3);
}

TEST(RunLoaderTest, ForeignRunIdAndBadHeaderAreExcludedNotMissing) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 4), 1);
  run.WriteCleanRank(TestRun::Header(1, 4), 1);
  auto stray = TestRun::Header(2, 4);
  stray.run_id = "older-run";
  run.WriteCleanRank(stray, 1);
  run.WriteFile("rank-00003.jsonl", "{\"type\":\"step\",\"ts\":1,\"step\":0}\n");
  const RunContext ctx = LoadRun(run.dir());
  EXPECT_EQ(ctx.ranks_found, (std::vector<int>{0, 1}));
  EXPECT_TRUE(ctx.missing_ranks.empty());
  ASSERT_EQ(ctx.excluded.size(), 2u);
  EXPECT_EQ(ctx.excluded[0].rank, 2);
  EXPECT_EQ(ctx.excluded[0].reason, ExcludedFile::Reason::kForeignRunId);
  EXPECT_EQ(ctx.excluded[0].issue.line, 1);
  EXPECT_EQ(ctx.excluded[1].rank, 3);
  EXPECT_EQ(ctx.excluded[1].reason, ExcludedFile::Reason::kNoHeader);
}

TEST(RunLoaderTest, OtherSchemaMajorAndRankOutsideWorldAreExcluded) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 1);
  run.WriteCleanRank(TestRun::Header(1, 2), 1);
  auto v2 = TestRun::Header(1, 2);
  v2.schema = "dsdiag.trace/9";
  v2.rank = 5;
  run.WriteCleanRank(v2, 1);
  run.WriteCleanRank(TestRun::Header(4, 8), 1);  // outvoted on world_size
  const RunContext ctx = LoadRun(run.dir());
  EXPECT_EQ(ctx.ranks_found, (std::vector<int>{0, 1}));
  ASSERT_EQ(ctx.excluded.size(), 2u);
  EXPECT_EQ(ctx.excluded[0].rank, 4);
  EXPECT_EQ(ctx.excluded[0].reason, ExcludedFile::Reason::kRankOutOfRange);
  EXPECT_EQ(ctx.excluded[1].rank, 5);
  EXPECT_EQ(ctx.excluded[1].reason, ExcludedFile::Reason::kSchemaMajor);
}

}  // namespace
}  // namespace dsdiag::analyzers
