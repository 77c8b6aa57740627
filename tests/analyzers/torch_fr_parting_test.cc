// Where the ranks' collective streams parted, from the Flight Recorder's frames
// (analyzers/torch_fr/fr_parting.h), on emulated format-2.10 dumps written as a job leaves them
// after the failure (every entry retired: nothing pending). A rank that skips or adds a
// collective of the same op and size as its neighbour is named where its call sites leave the
// others'; a rank-dependent line that joins again, with streams that end together, is not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzers/framework/compare.h"
#include "analyzers/framework/finding_kinds.h"
#include "test_run.h"
#include "tests/analyzers/analyzer_test_util.h"
#include "tests/analyzers/torch_fr_emulated.h"

namespace dsdiag::analyzers {
namespace {

using dsdiag::testing::EmulatedFrPickle;
using dsdiag::testing::FrLayout;
using dsdiag::testing::FrOpSpec;
using dsdiag::testing::FrRankSpec;
using testing::EvidenceText;
using testing::Listing;

constexpr int kGrads = 30, kMetrics = 32, kExtra = 34;  // the job's lines

// A rank's stream: one all_reduce of 4 floats per line given, seq 1, 2, ..., all retired.
FrRankSpec Stream(int world, const std::vector<int>& lines) {
  FrRankSpec r;
  for (int i = 0; i < world; ++i) r.world.push_back(i);
  for (size_t i = 0; i < lines.size(); ++i) {
    FrOpSpec op;
    op.profiling_name = "gloo:all_reduce";
    op.collective_seq = static_cast<int64_t>(i) + 1;
    op.op_id = op.collective_seq;
    op.state = "scheduled";  // Gloo: no events; done shows in `retired`
    op.line = lines[i];
    r.ops.push_back(op);
  }
  return r;
}

// `steps` steps of (gradients, metrics), leaving out the metrics of step `skip` (-1: none)
// and adding an extra all_reduce after the gradients of step `extra` (-1: none).
std::vector<int> Steps(int steps, int skip = -1, int extra = -1) {
  std::vector<int> lines;
  for (int s = 0; s < steps; ++s) {
    lines.push_back(kGrads);
    if (s == extra) lines.push_back(kExtra);
    if (s != skip) lines.push_back(kMetrics);
  }
  return lines;
}

CompareResult Compare(testing::TestRun* run, const std::vector<FrRankSpec>& ranks) {
  for (size_t r = 0; r < ranks.size(); ++r)
    run->WriteFile("nccl_trace_rank_" + std::to_string(r),
                   EmulatedFrPickle(FrLayout::kV2_10, ranks[r]));
  return RunCompare(run->dir());
}

const Finding* OnlyError(const CompareResult& r) {
  const Finding* error = nullptr;
  for (const Finding& f : r.findings) {
    if (f.severity == Severity::kInfo) continue;
    EXPECT_EQ(error, nullptr) << Listing(r.findings);
    error = &f;
  }
  return error;
}

TEST(TorchFrParting, AThreeRankSameSizeSkipIsNamedByTheMajorityOfCallSites) {
  testing::TestRun run;
  const CompareResult r =
      Compare(&run, {Stream(3, Steps(6)), Stream(3, Steps(6, /*skip=*/2)), Stream(3, Steps(6))});
  const Finding* f = OnlyError(r);
  ASSERT_NE(f, nullptr) << Listing(r.findings);
  EXPECT_EQ(f->kind, kind::kCollectiveMismatch);
  EXPECT_EQ(f->ranks, std::vector<int>{1});
  EXPECT_EQ(EvidenceText(*f, "seq"), "6");
  EXPECT_EQ(EvidenceText(*f, "basis"), "majority");
  EXPECT_EQ(EvidenceText(*f, "parted"), "skipped");
  EXPECT_NE(f->summary.find("rank 1 issued the all_reduce at train.py:30"), std::string::npos)
      << f->summary;
  EXPECT_NE(f->summary.find("where ranks 0,2 issued the one at train.py:32"), std::string::npos)
      << f->summary;
}

TEST(TorchFrParting, AtTwoRanksTheGroupsHistoryOfCallSitesNamesTheSkipper) {
  testing::TestRun run;
  const CompareResult r = Compare(&run, {Stream(2, Steps(5)), Stream(2, Steps(5, /*skip=*/1))});
  const Finding* f = OnlyError(r);
  ASSERT_NE(f, nullptr) << Listing(r.findings);
  EXPECT_EQ(f->ranks, std::vector<int>{1});
  EXPECT_EQ(EvidenceText(*f, "basis"), "history");
  EXPECT_EQ(EvidenceText(*f, "parted"), "skipped");
}

TEST(TorchFrParting, ARankThatAddsACollectiveIsNamedNotThePeersThatEndShort) {
  testing::TestRun run;
  const CompareResult r = Compare(
      &run, {Stream(3, Steps(5)), Stream(3, Steps(5)), Stream(3, Steps(5, -1, /*extra=*/2))});
  const Finding* f = OnlyError(r);
  ASSERT_NE(f, nullptr) << Listing(r.findings);
  EXPECT_EQ(f->kind, kind::kCollectiveMismatch);
  EXPECT_EQ(f->ranks, std::vector<int>{2});
  EXPECT_EQ(EvidenceText(*f, "parted"), "extra");
  for (const Finding& g : r.findings) {
    if (g.kind == kind::kHang) {
      EXPECT_EQ(g.severity, Severity::kInfo) << g.summary;
    }
  }
}

TEST(TorchFrParting, ARankDependentLineThatJoinsAgainIsNoParting) {
  // Rank 0 issues step 1's metrics from another line (an `if rank == 0:` branch), and the
  // streams end together: a legitimate branch.
  std::vector<int> rank0 = Steps(4);
  rank0[3] = kExtra;
  testing::TestRun run;
  const CompareResult r = Compare(&run, {Stream(2, rank0), Stream(2, Steps(4))});
  EXPECT_TRUE(r.findings.empty()) << Listing(r.findings);
}

TEST(TorchFrParting, AfterTheFailureAShortStreamWithoutPartingIsAHangNamingIt) {
  // Rank 1 skips the very last metrics: its stream ends one short, nothing parted before.
  testing::TestRun run;
  const CompareResult r = Compare(&run, {Stream(2, Steps(4)), Stream(2, Steps(4, /*skip=*/3))});
  const Finding* f = OnlyError(r);
  ASSERT_NE(f, nullptr) << Listing(r.findings);
  EXPECT_EQ(f->kind, kind::kHang);
  EXPECT_EQ(f->ranks, std::vector<int>{1});
  EXPECT_EQ(EvidenceText(*f, "dumps"), "after the failure");
  EXPECT_NE(f->summary.find("never issued all_reduce group 0 (default_pg) seq 8"),
            std::string::npos)
      << f->summary;
}

TEST(TorchFrParting, CleanDumpsWrittenAtTheEndGiveNothing) {
  testing::TestRun run;
  const CompareResult r =
      Compare(&run, {Stream(3, Steps(4)), Stream(3, Steps(4)), Stream(3, Steps(4))});
  EXPECT_TRUE(r.findings.empty()) << Listing(r.findings);
}

}  // namespace
}  // namespace dsdiag::analyzers
