// `dsdiag compare` on PyTorch Flight Recorder dumps alone (analyzers/torch_fr/): the real
// torch 2.13 Gloo dumps of fixtures/torch_fr/ (README there), and small JSON dumps written
// here for what needs more ranks than the fixtures have (a majority, the culprit rank 0).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "analyzers/framework/compare.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/framework/input_error.h"
#include "test_run.h"

namespace dsdiag::analyzers {
namespace {

namespace fs = std::filesystem;

std::string Fixture(const std::string& scenario) {
  return (fs::path(DSDIAG_SOURCE_DIR) / "fixtures/torch_fr" / scenario).string();
}

std::vector<const Finding*> OfKind(const CompareResult& r, std::string_view kind) {
  std::vector<const Finding*> out;
  for (const Finding& f : r.findings)
    if (f.kind == kind) out.push_back(&f);
  return out;
}

std::string Evidence(const Finding& f, const char* key) {
  const trace::JsonValue* v = f.evidence.Find(key);
  return v ? v->ToDisplay() : "";
}

TEST(TorchFrCompare, ACleanJobHasNoFinding) {
  const CompareResult r = RunCompare(Fixture("clean"));
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.run.world_size, 2);
  EXPECT_EQ(r.stats.flight_dumps, 2);
}

TEST(TorchFrCompare, ARankThatSkipsACollectiveIsTheHangsCulpritWithTheLineThatIssuedIt) {
  const CompareResult r = RunCompare(Fixture("skip"));
  const auto hangs = OfKind(r, kind::kHang);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->severity, Severity::kError);
  EXPECT_EQ(hangs[0]->ranks, std::vector<int>{1});
  EXPECT_EQ(hangs[0]->subject, "all_reduce group 0 (default_pg) seq 4");
  EXPECT_NE(hangs[0]->summary.find("rank 0 waits in"), std::string::npos) << hangs[0]->summary;
  EXPECT_NE(hangs[0]->summary.find("generate.py:101 in rank_main"), std::string::npos);
  EXPECT_EQ(Evidence(*hangs[0], "source"), "torch-flight-recorder");
  EXPECT_EQ(r.findings.size(), 1u);
}

// Dumps written on a GPU (an H200, torch 2.11.0+cu130, CUDA tensors over Gloo) after the
// failure: rank 1 blocked before step 5 while rank 0 queued that step's seven DDP buckets
// (seq 35..41); rank 0's dump at its timeout, rank 1's on the SIGTERM that followed.
TEST(TorchFrCompare, DumpsOfACudaJobNameTheRankThatNeverJoinedTheFirstBucketItMissed) {
  const CompareResult r = RunCompare(Fixture("cuda_hang"));
  const auto hangs = OfKind(r, kind::kHang);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->ranks, std::vector<int>{1});
  EXPECT_EQ(hangs[0]->subject, "all_reduce group 0 (default_pg) seq 35");
  EXPECT_NE(hangs[0]->summary.find("_default_allreduce"), std::string::npos) << hangs[0]->summary;
  EXPECT_EQ(r.stats.flight_dumps, 2);
  EXPECT_EQ(r.findings.size(), 1u);
}

// NCCL's own dump, written by its watchdog on the group's 10 s timeout (TORCH_NCCL_DUMP_ON_
// TIMEOUT) on an H200 (torch 2.11.0+cu130, NCCL 2.28.9): one rank, whose step-5 buckets (seq
// 35..41) were queued behind a kernel that never ended, every one "scheduled". The one held
// is the oldest: the others wait behind it on the stream.
TEST(TorchFrCompare, AnNcclDumpOfAStalledDeviceNamesTheOldestQueuedCollective) {
  const CompareResult r = RunCompare(Fixture("nccl_stall"));
  const auto hangs = OfKind(r, kind::kHang);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->ranks, std::vector<int>{0});
  EXPECT_EQ(hangs[0]->subject, "all_reduce group 0 (default_pg) seq 35");
  EXPECT_NE(hangs[0]->summary.find("a device that never reached it"), std::string::npos)
      << hangs[0]->summary;
  EXPECT_EQ(r.run.world_size, 1);
  EXPECT_EQ(r.findings.size(), 1u);
}

TEST(TorchFrCompare, TheJsonFormOfTheDumpsGivesTheSameVerdict) {
  const CompareResult r = RunCompare(Fixture("skip/json"));
  const auto hangs = OfKind(r, kind::kHang);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->ranks, std::vector<int>{1});
}

TEST(TorchFrCompare, ASizeMismatchNamesTheRankTheGroupsHistoryContradicts) {
  const CompareResult r = RunCompare(Fixture("size_mismatch"));
  const auto mismatches = OfKind(r, kind::kCollectiveMismatch);
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0]->ranks, std::vector<int>{1});
  EXPECT_EQ(Evidence(*mismatches[0], "basis"), "history");
  EXPECT_NE(mismatches[0]->summary.find("5 elements"), std::string::npos);
  // Both ranks wait in the collective that cannot complete: the mismatch's follow-on.
  const auto hangs = OfKind(r, kind::kHang);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->severity, Severity::kInfo);
}

TEST(TorchFrCompare, ADtypeMismatchNamesTheOddRank) {
  const CompareResult r = RunCompare(Fixture("dtype_mismatch"));
  const auto mismatches = OfKind(r, kind::kCollectiveMismatch);
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0]->ranks, std::vector<int>{1});
  EXPECT_NE(mismatches[0]->summary.find("Double"), std::string::npos);
}

TEST(TorchFrCompare, AnOpMismatchOfTwoRanksWithNoTellingHistoryNamesBothAndSaysSo) {
  const CompareResult r = RunCompare(Fixture("op_mismatch"));
  const auto mismatches = OfKind(r, kind::kCollectiveMismatch);
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0]->ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(Evidence(*mismatches[0], "basis"), "none");
  EXPECT_NE(mismatches[0]->summary.find("broadcast"), std::string::npos);
}

TEST(TorchFrCompare, AHangInASubGroupNamesTheRankThatSkippedItInThatGroup) {
  const CompareResult r = RunCompare(Fixture("subgroup"));
  bool subgroup_hang = false;
  for (const Finding* f : OfKind(r, kind::kHang)) {
    EXPECT_EQ(f->ranks, std::vector<int>{1}) << f->summary;
    if (f->subject == "all_reduce group 1 seq 2") subgroup_hang = true;
  }
  EXPECT_TRUE(subgroup_hang);
}

// A JSON dump of `ops` world-group collectives (seq 1..), each done unless it is the last and
// `last_pending`; `numel` of the last one as given.
std::string JsonDump(int ops, bool last_pending, int last_numel = 4) {
  std::string entries;
  for (int seq = 1; seq <= ops; ++seq) {
    const bool pending = last_pending && seq == ops;
    const int numel = seq == ops ? last_numel : 4;
    entries += std::string(seq > 1 ? "," : "") + "{\"collective_seq_id\":" + std::to_string(seq) +
               ",\"input_dtypes\":[\"Float\"],\"input_sizes\":[[" + std::to_string(numel) +
               "]],\"is_p2p\":false,\"p2p_seq_id\":0,\"pg_id\":0," +
               "\"process_group\":[\"0\",\"default_pg\"],\"profiling_name\":\"nccl:all_reduce\"," +
               "\"record_id\":" + std::to_string(seq - 1) +
               ",\"retired\":" + (pending ? "false" : "true") + ",\"state\":\"" +
               (pending ? "started" : "completed") + "\"}";
  }
  return "{\"version\":\"2.10\",\"pg_config\":{\"0\":{\"name\":\"0\",\"desc\":\"default_pg\","
         "\"ranks\":\"[0, 1, 2, 3]\"}},\"entries\":[" +
         entries + "]}";
}

TEST(TorchFrCompare, WhenRankZeroIsTheOneThatNeverJoinedItIsRankZeroThatIsNamed) {
  // torch's fr_trace compares every rank with rank 0: here it would name ranks 1-3.
  testing::TestRun run;
  run.WriteFile("nccl_trace_rank_0", JsonDump(4, false));
  for (int r = 1; r < 4; ++r)
    run.WriteFile("nccl_trace_rank_" + std::to_string(r), JsonDump(5, true));
  const CompareResult result = RunCompare(run.dir());
  const auto hangs = OfKind(result, kind::kHang);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->ranks, std::vector<int>{0});
  EXPECT_NE(hangs[0]->summary.find("ranks 1-3 wait in"), std::string::npos) << hangs[0]->summary;
}

TEST(TorchFrCompare, AMismatchOnRankZeroIsNamedByTheMajority) {
  testing::TestRun run;
  run.WriteFile("nccl_trace_rank_0", JsonDump(3, true, 7));
  for (int r = 1; r < 4; ++r)
    run.WriteFile("nccl_trace_rank_" + std::to_string(r), JsonDump(3, true, 5));
  const CompareResult result = RunCompare(run.dir());
  const auto mismatches = OfKind(result, kind::kCollectiveMismatch);
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0]->ranks, std::vector<int>{0});
  EXPECT_EQ(Evidence(*mismatches[0], "basis"), "majority");
}

// 2 against 1 against 1: the largest side is the reference, as over traces (split_verdict.h),
// though it holds no more than half of the ranks.
TEST(TorchFrCompare, APluralityIsAMajorityAsOverTraces) {
  testing::TestRun run;
  const int numel[] = {5, 5, 6, 7};
  for (int r = 0; r < 4; ++r)
    run.WriteFile("nccl_trace_rank_" + std::to_string(r), JsonDump(3, true, numel[r]));
  const CompareResult result = RunCompare(run.dir());
  const auto mismatches = OfKind(result, kind::kCollectiveMismatch);
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0]->ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(Evidence(*mismatches[0], "basis"), "majority");
}

TEST(TorchFrCompare, ARankWithoutADumpIsRankDiedWithWhatItsPeersWaitFor) {
  testing::TestRun run;
  for (int r = 0; r < 3; ++r)
    run.WriteFile("nccl_trace_rank_" + std::to_string(r), JsonDump(5, true));
  const CompareResult result = RunCompare(run.dir());
  EXPECT_EQ(result.run.ranks_missing, std::vector<int>{3});
  const auto died = OfKind(result, kind::kRankDied);
  ASSERT_EQ(died.size(), 1u);
  EXPECT_EQ(died[0]->ranks, std::vector<int>{3});
  EXPECT_NE(died[0]->summary.find("ranks 0-2 wait in all_reduce group 0 (default_pg) seq 5"),
            std::string::npos)
      << died[0]->summary;
  const auto hangs = OfKind(result, kind::kHang);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->ranks, std::vector<int>{3});
}

TEST(TorchFrCompare, AFileThatIsNoDumpIsATraceCorruptWarningNamingItAndTheRestIsUsed) {
  testing::TestRun run;
  run.WriteFile("nccl_trace_rank_0", JsonDump(5, true));
  run.WriteFile("nccl_trace_rank_1", "{\"version\":\"2.10\",\"entries\":[{\"collective");
  CompareResult result;
  ASSERT_NO_THROW(result = RunCompare(run.dir(), {}, InputOptions{"nccl_trace_rank_"}));
  const auto corrupt = OfKind(result, kind::kTraceCorrupt);
  ASSERT_EQ(corrupt.size(), 1u);
  EXPECT_EQ(corrupt[0]->subject, "nccl_trace_rank_1");
  EXPECT_EQ(corrupt[0]->ranks, std::vector<int>{1});
  EXPECT_EQ(OfKind(result, kind::kHang).size(), 1u);
}

TEST(TorchFrCompare, ADirectoryWithNeitherTracesNorDumpsSaysWhatItLookedFor) {
  testing::TestRun run;
  run.WriteFile("notes.txt", "hello");
  try {
    RunCompare(run.dir());
    FAIL() << "no error";
  } catch (const RunInputError& e) {
    EXPECT_NE(std::string(e.what()).find("Flight Recorder dumps"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dsdiag::analyzers
