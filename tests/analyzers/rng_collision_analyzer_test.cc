#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "tests/analyzers/analyzer_test_util.h"
#include "tests/analyzers/test_run.h"
#include "trace/record_types.h"

namespace dsdiag::analyzers {
namespace {

using testing::Evidence;
using testing::RunOne;
using testing::TestRun;

struct Stream {
  std::string name;
  std::vector<uint64_t> hash_by_rank;
};

// `world` ranks, each writing one `rng` record per stream, then 3 steps.
void WriteRun(TestRun* run, int world, const std::vector<Stream>& streams) {
  for (int r = 0; r < world; ++r) {
    auto w = run->Open(TestRun::Header(r, world));
    for (const Stream& s : streams)
      w->Begin(trace::rec::kRng)
          .line()
          .Field("stream", s.name)
          .Field("why", "init")
          .Field("seed", int64_t{1234})
          .Hex("h", s.hash_by_rank[static_cast<size_t>(r)]);
    TestRun::WriteSteps(w.get(), 0, 3);
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
}

std::vector<Finding> Analyze(const TestRun& run) {
  return RunOne(CreateRngCollisionAnalyzer(), run.dir());
}

TEST(RngCollisionAnalyzerTest, SharedInitAndSamplerStreamsWithDistinctDropoutAreClean) {
  TestRun run;
  WriteRun(&run, 4,
           {{"cpu", {7, 7, 7, 7}},
            {"sampler", {9, 9, 9, 9}},
            {"cuda:0", {5, 5, 5, 5}},
            {"dropout", {1, 2, 3, 4}}});
  EXPECT_TRUE(Analyze(run).empty());
}

TEST(RngCollisionAnalyzerTest, IdenticalDropoutOnEveryRankIsOneWarning) {
  TestRun run;
  WriteRun(&run, 4, {{"cpu", {7, 7, 7, 7}}, {"dropout", {3, 3, 3, 3}}});
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kRngCollision);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(f.subject, "dropout");
  EXPECT_EQ(f.step, 0);
  EXPECT_NE(f.summary.find("every rank"), std::string::npos) << f.summary;
  EXPECT_EQ(Evidence(f, "groups"), R"([{"ranks":[0,1,2,3],"h":"0000000000000003","seed":1234}])");
}

TEST(RngCollisionAnalyzerTest, NamesOnlyTheRanksThatShareAState) {
  TestRun run;
  WriteRun(&run, 4, {{"augment", {1, 2, 1, 4}}, {"dropout", {1, 2, 3, 4}}});
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].subject, "augment");
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 2}));
}

// Sharing is symmetric: at two ranks both share the state, and both are named (there is
// no odd one to pick), at four ranks each pair that shares.
TEST(RngCollisionAnalyzerTest, TwoRanksSharingAStreamAreBothNamed) {
  TestRun run;
  WriteRun(&run, 2, {{"dropout", {3, 3}}});
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1}));
}

TEST(RngCollisionAnalyzerTest, TwoPairsOfFourSharingAreAllNamed) {
  TestRun run;
  WriteRun(&run, 4, {{"dropout", {3, 3, 5, 5}}});
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1, 2, 3}));
}

TEST(RngCollisionAnalyzerTest, OneRankAloneProvesNothing) {
  TestRun run;
  WriteRun(&run, 1, {{"dropout", {3}}});
  EXPECT_TRUE(Analyze(run).empty());
}

// `world` ranks, each with two loader workers reporting NumPy's stream; hashes[rank] holds
// worker 0's and worker 1's state.
void WriteWorkers(TestRun* run, int world, const std::vector<std::vector<uint64_t>>& hashes) {
  for (int r = 0; r < world; ++r) {
    auto w = run->Open(TestRun::Header(r, world));
    for (int worker = 0; worker < 2; ++worker)
      w->Begin(trace::rec::kRng)
          .line()
          .Field("stream", "loader-worker-numpy")
          .Field("why", "loader-0/worker-" + std::to_string(worker))
          .Field("seed", int64_t{-1})
          .Hex("h", hashes[static_cast<size_t>(r)][static_cast<size_t>(worker)]);
    TestRun::WriteSteps(w.get(), 0, 3);
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
}

// base_seed + rank in a worker_init_fn: the ranks differ, the workers of a rank do not.
TEST(RngCollisionAnalyzerTest, WorkersOfOneRankSharingAStateCollideWithinTheRank) {
  TestRun run;
  WriteWorkers(&run, 3, {{1, 2}, {5, 5}, {7, 8}});
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.subject, "loader-worker-numpy");
  EXPECT_EQ(f.ranks, (std::vector<int>{1}));
  EXPECT_EQ(f.step, 0);
  EXPECT_EQ(Evidence(f, "scope"), R"("workers of one rank")");
  EXPECT_EQ(
      Evidence(f, "ranks"),
      R"([{"rank":1,"loader":"loader-0","occurrence":0,"groups":[{"workers":[0,1],"h":"0000000000000005"}]}])");
  EXPECT_NE(f.summary.find("workers 0,1 of loader-0 on rank 1"), std::string::npos) << f.summary;
}

TEST(RngCollisionAnalyzerTest, WorkersSeededPerWorkerAndPerRankAreClean) {
  TestRun run;
  WriteWorkers(&run, 2, {{1, 2}, {3, 4}});
  EXPECT_TRUE(Analyze(run).empty());
}

}  // namespace
}  // namespace dsdiag::analyzers
