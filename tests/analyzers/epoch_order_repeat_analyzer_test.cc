#include <gtest/gtest.h>

#include <functional>
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

// `world` ranks, `epochs` epochs of 2 steps; order(rank, epoch) gives the order hash and
// sampler_epoch(rank, epoch) what the sampler was set to.
void WriteRun(TestRun* run, int world, int epochs, const std::function<uint64_t(int, int)>& order,
              const std::function<int64_t(int, int)>& sampler_epoch, int64_t n = 32) {
  for (int r = 0; r < world; ++r) {
    auto w = run->Open(TestRun::Header(r, world));
    for (int e = 0; e < epochs; ++e) {
      w->SetStep(e * 2);
      w->Begin(trace::rec::kSampler)
          .line()
          .Field("epoch", int64_t{e})
          .Field("sampler_epoch", sampler_epoch(r, e))
          .Field("seed", int64_t{1234})
          .Field("n", n)
          .Hex("order", order(r, e))
          .Hex("set", 7);
      TestRun::WriteSteps(w.get(), e * 2, e * 2 + 2);
    }
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
}

std::vector<Finding> Analyze(const TestRun& run) {
  return RunOne(CreateEpochOrderRepeatAnalyzer(), run.dir());
}

TEST(EpochOrderRepeatAnalyzerTest, FreshOrderEveryEpochIsClean) {
  TestRun run;
  WriteRun(
      &run, 2, 3, [](int r, int e) { return static_cast<uint64_t>(100 * r + e); },
      [](int, int e) { return int64_t{e}; });
  EXPECT_TRUE(Analyze(run).empty());
}

TEST(EpochOrderRepeatAnalyzerTest, StuckSamplerEpochIsOneWarningAtTheFirstRepeat) {
  TestRun run;
  WriteRun(
      &run, 2, 3, [](int r, int) { return static_cast<uint64_t>(100 + r); },
      [](int, int) { return int64_t{0}; });
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kEpochOrderRepeat);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(f.step, 2);
  EXPECT_EQ(Evidence(f, "epoch"), "1");
  EXPECT_EQ(Evidence(f, "sampler_epoch"), "0");
  EXPECT_EQ(Evidence(f, "epochs_repeated"), "2");
}

TEST(EpochOrderRepeatAnalyzerTest, OnlyTheRepeatingRankIsNamed) {
  TestRun run;
  WriteRun(
      &run, 3, 2, [](int r, int e) { return static_cast<uint64_t>(r == 2 ? 5 : 10 * r + e); },
      [](int r, int e) { return int64_t{r == 2 ? 0 : e}; });
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
}

TEST(EpochOrderRepeatAnalyzerTest, TinyShardsCanRepeatByChance) {
  TestRun run;
  WriteRun(
      &run, 2, 2, [](int r, int) { return static_cast<uint64_t>(r); },
      [](int, int e) { return int64_t{e}; }, /*n=*/2);
  EXPECT_TRUE(Analyze(run).empty());
}

}  // namespace
}  // namespace dsdiag::analyzers
