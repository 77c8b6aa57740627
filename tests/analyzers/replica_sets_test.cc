// Replica sets (analyzers/framework/replica_scoped.h): the kinds that compare replicas'
// values compare only the ranks a `params` record's `replicas` puts together. A 2 x 2
// tensor- x data-parallel run: ranks {0,2} hold one shard, {1,3} the other (DDP over the
// data-parallel group), so the shards differ by design and only a rank that leaves its own
// set's values is named.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/framework/replica_scoped.h"
#include "tests/analyzers/analyzer_test_util.h"
#include "tests/analyzers/test_run.h"
#include "trace/record_types.h"
#include "trace/records/fp_record.h"
#include "trace/records/params_record.h"

namespace dsdiag::analyzers {
namespace {

namespace records = trace::records;
using testing::Evidence;
using testing::Listing;
using testing::RunOne;
using testing::TestRun;

constexpr int kWorld = 4;

// The data-parallel group of a rank of a 2 x 2 mesh whose tensor-parallel peers are
// consecutive ranks: the ranks with its tensor-parallel rank.
std::vector<int> DataParallelPeers(int rank) { return {rank % 2, rank % 2 + 2}; }

void WriteFp(trace::TraceWriter* w, const char* what, const char* why,
             const std::vector<uint64_t>& hashes) {
  records::FpRecord fp;
  fp.what = what;
  fp.why = why;
  fp.per_param = true;
  fp.hashes = &hashes;
  TestRun::Write(w, fp);
}

// `declare`: the ranks' params records name their data-parallel group as their replicas.
// `hashes(rank, step, what)`: the fingerprints of the rank's two parameters.
void WriteMeshRun(TestRun* run, bool declare, int steps,
                  const std::function<std::vector<uint64_t>(int, int, const char*)>& hashes) {
  for (int rank = 0; rank < kWorld; ++rank) {
    auto w = run->Open(TestRun::Header(rank, kWorld));
    records::ParamTable table;
    table.names = {"fc1.weight", "norm.weight"};
    table.buckets = {{1, 0}};
    if (declare) table.replicas = DataParallelPeers(rank);
    TestRun::Write(w.get(), table);
    WriteFp(w.get(), "param", "init", hashes(rank, -1, "param"));
    for (int step = 0; step < steps; ++step) {
      w->SetStep(step);
      w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
      const auto grads = hashes(rank, step, "grad");
      WriteFp(w.get(), "grad", "after-sync", grads);
      WriteFp(w.get(), "grad", "pre-step", grads);
      w->Begin(trace::rec::kStep).line().Field("dur", int64_t{1000});
    }
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
}

// Each shard (tensor-parallel rank) its own values, the same on its replicas.
std::vector<uint64_t> ByShard(int rank, int step, const char*) {
  return {uint64_t(100 * (rank % 2) + step + 10), 7};
}

std::vector<Finding> RunScoped(AnalyzerFactory make, const std::string& dir) {
  return RunOne(ReplicaScoped(std::move(make)), dir);
}

TEST(ReplicaSetsTest, ShardsThatDifferByDesignAreNoFindingWhenTheSetsAreDeclared) {
  TestRun run;
  WriteMeshRun(&run, /*declare=*/true, 4, ByShard);
  EXPECT_TRUE(RunScoped(CreateInitDivergenceAnalyzer, run.dir()).empty());
  EXPECT_TRUE(RunScoped(CreateGradDesyncAnalyzer, run.dir()).empty());
}

// What the declaration guards against: the same run compared as one set is two errors.
TEST(ReplicaSetsTest, WithoutTheDeclarationTheShardsAreComparedAsReplicas) {
  TestRun run;
  WriteMeshRun(&run, /*declare=*/false, 4, ByShard);
  const auto init = RunScoped(CreateInitDivergenceAnalyzer, run.dir());
  ASSERT_EQ(init.size(), 1u) << Listing(init);
  EXPECT_EQ(init[0].ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(Evidence(init[0], "replicas"), "");
  EXPECT_EQ(RunScoped(CreateGradDesyncAnalyzer, run.dir()).size(), 1u);
}

TEST(ReplicaSetsTest, AReplicaThatDriftsIsNamedInItsOwnSetWithTheSetAsEvidence) {
  TestRun run;
  WriteMeshRun(&run, /*declare=*/true, 5, [](int rank, int step, const char* what) {
    auto h = ByShard(rank, step, what);
    if (rank == 3 && step >= 2) h[0] = 999;
    return h;
  });
  const auto findings = RunScoped(CreateGradDesyncAnalyzer, run.dir());
  ASSERT_EQ(findings.size(), 1u) << Listing(findings);
  EXPECT_EQ(findings[0].kind, kind::kGradDesync);
  EXPECT_EQ(findings[0].step, 2);
  EXPECT_EQ(findings[0].subject, "fc1.weight");
  // Two replicas and nothing else to go by: both named, and only the drifting set's.
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(Evidence(findings[0], "replicas"), "[1,3]");
}

TEST(ReplicaSetsTest, TheBroadcastSourceOfASetIsItsLowestRank) {
  TestRun run;
  WriteMeshRun(&run, /*declare=*/true, 1, [](int rank, int step, const char* what) {
    auto h = ByShard(rank, step, what);
    if (rank == 3 && step < 0) h[1] = 8;  // rank 3's LayerNorm was not rank 1's
    return h;
  });
  const auto findings = RunScoped(CreateInitDivergenceAnalyzer, run.dir());
  ASSERT_EQ(findings.size(), 1u) << Listing(findings);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{3});
  EXPECT_NE(findings[0].summary.find("did not get rank 1's parameters"), std::string::npos)
      << findings[0].summary;
  EXPECT_EQ(Evidence(findings[0], "replicas"), "[1,3]");
}

}  // namespace
}  // namespace dsdiag::analyzers
