// input-divergence (analyzers/kinds/input_divergence_analyzer.cc) and shard-overlap's
// identical batches on a 2 x 2 device mesh ("dp" x "tp", as DTensor's tutorials build one):
// ranks {0,1} and {2,3} are tensor-parallel peers, which must be fed one batch per step.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "tests/analyzers/analyzer_test_util.h"
#include "tests/analyzers/test_run.h"
#include "trace/record_types.h"
#include "trace/records/group_record.h"
#include "trace/records/loader_record.h"

namespace dsdiag::analyzers {
namespace {

namespace records = trace::records;
using testing::Evidence;
using testing::Listing;
using testing::RunOne;
using testing::TestRun;

// Torch's names on a 2 x 2 mesh: dp groups 1 = {0,2}, 2 = {1,3}; tp groups 3 = {0,1}, 4 = {2,3}.
void WriteMeshRun(TestRun* run, int steps, const std::function<uint64_t(int, int)>& batch) {
  for (int rank = 0; rank < 4; ++rank) {
    auto w = run->Open(TestRun::Header(rank, 4));
    const std::vector<int> dp = {rank % 2, rank % 2 + 2}, tp = {rank / 2 * 2, rank / 2 * 2 + 1};
    const int64_t dp_pg = 1 + rank % 2, tp_pg = 3 + rank / 2;
    TestRun::Write(w.get(), records::GroupRecord{dp_pg, std::to_string(dp_pg), "mesh_dp", "gloo",
                                                 &dp, rank / 2});
    TestRun::Write(w.get(), records::GroupRecord{tp_pg, std::to_string(tp_pg), "mesh_tp", "gloo",
                                                 &tp, rank % 2});
    const std::vector<int64_t> shape = {2, 2}, coord = {rank / 2, rank % 2}, pgs = {dp_pg, tp_pg};
    const std::vector<std::string> dims = {"dp", "tp"};
    TestRun::Write(w.get(), records::MeshRecord{&shape, &dims, &coord, &pgs});
    for (int step = 0; step < steps; ++step) {
      w->SetStep(step);
      w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
      records::LoaderRecord loader;
      loader.samples = 8;
      loader.batch = batch(rank, step);
      TestRun::Write(w.get(), loader);
      w->Begin(trace::rec::kStep).line().Field("dur", int64_t{1000});
    }
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
}

// One batch per data-parallel replica (its mesh row), the peers of a row sharing it.
uint64_t ByReplica(int rank, int step) { return 100 * (rank / 2 + 1) + step; }

TEST(InputDivergenceTest, PeersFedTheirReplicasBatchAreNoFindingNorAnOverlap) {
  TestRun run;
  WriteMeshRun(&run, 6, ByReplica);
  EXPECT_TRUE(RunOne(CreateInputDivergenceAnalyzer(), run.dir()).empty());
  const auto overlap = RunOne(CreateShardOverlapAnalyzer(), run.dir());
  EXPECT_TRUE(overlap.empty()) << Listing(overlap);
}

TEST(InputDivergenceTest, PeersFedByTheGlobalRankAreNamedPerTensorParallelGroup) {
  TestRun run;
  WriteMeshRun(&run, 6, [](int rank, int step) { return uint64_t(1000 * (rank + 1) + step); });
  const auto findings = RunOne(CreateInputDivergenceAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 2u) << Listing(findings);
  EXPECT_EQ(findings[0].kind, kind::kInputDivergence);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(Evidence(findings[0], "peers"), "[0,1]");
  EXPECT_EQ(Evidence(findings[0], "steps_differing"), "6");
  EXPECT_EQ(findings[1].ranks, (std::vector<int>{2, 3}));
}

TEST(InputDivergenceTest, APeerOffItsReplicasBatchFromAStepIsNamedFromThere) {
  // Rank 3 leaves its replica's batches at step 2, its peer rank 2 keeps them.
  TestRun run;
  WriteMeshRun(&run, 5, [](int rank, int step) {
    return rank == 3 && step >= 2 ? uint64_t(777 + step) : ByReplica(rank, step);
  });
  const auto findings = RunOne(CreateInputDivergenceAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u) << Listing(findings);
  EXPECT_EQ(findings[0].step, 2);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{2, 3}));  // two peers: no majority
  EXPECT_EQ(Evidence(findings[0], "steps_differing"), "3");
  EXPECT_EQ(Evidence(findings[0], "steps_compared"), "5");
}

}  // namespace
}  // namespace dsdiag::analyzers
