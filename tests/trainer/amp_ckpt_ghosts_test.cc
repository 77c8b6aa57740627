// Mixed-precision and checkpoint ghosts end to end: a short 2-rank `dsdiag train` with one
// `--inject` fault, then `dsdiag compare --format json`, and the exact findings it must give
// (kind, severity, ranks, step); clean fp16, bf16 and resumed runs give no warning or error.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "tests/trainer/findings_util.h"
#include "tests/trainer/trainer_test_util.h"
#include "trace/trace_reader.h"

namespace dsdiag::trainer_test {
namespace {

// Runs `dsdiag train` on 2 ranks into dir/name; expects exit status 0.
void Train(const TempDir& dir, const std::string& name, int steps,
           const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"train", "--nproc", "2", "--steps", std::to_string(steps),
                                   "--out", dir / name};
  args.insert(args.end(), extra.begin(), extra.end());
  const std::string log = dir / (name + ".log");
  ASSERT_EQ(RunDsdiag(args, log, 120), 0) << ReadFile(log);
}

// `dsdiag compare --format json` of dir/name.
std::vector<trace::JsonValue> Compare(const TempDir& dir, const std::string& name) {
  return CompareRun(dir / name);
}

using Set = std::set<std::string>;
using RankList = std::vector<int64_t>;

TEST(AmpCkptGhosts, CleanFp16AndBf16RunsGiveNoWarning) {
  TempDir dir("amp-clean");
  Train(dir, "fp16", 6, {"--amp", "fp16", "--clip-norm", "1", "--ckpt-every", "3"});
  EXPECT_EQ(Serious(Compare(dir, "fp16")), Set{});
  Train(dir, "bf16", 4, {"--amp", "bf16", "--clip-norm", "1"});
  EXPECT_EQ(Serious(Compare(dir, "bf16")), Set{});
}

// Past the first 20 steps, where early skips count as the scaler calibrating.
TEST(AmpCkptGhosts, OverflowOnAllRanksIsAWarningAtThatStep) {
  TempDir dir("amp-overflow");
  Train(dir, "run", 23, {"--amp", "fp16", "--inject", "overflow:step=21"});
  const auto findings = Compare(dir, "run");
  EXPECT_EQ(Serious(findings), Set{"scaler-overflow/warning"});
  const trace::JsonValue* f = FindFinding(findings, "scaler-overflow", "warning");
  ASSERT_TRUE(f);
  EXPECT_EQ(Ranks(*f), (RankList{0, 1}));
  EXPECT_EQ(Int(*f, "step"), 21);
}

TEST(AmpCkptGhosts, OverflowOnOneRankNamesThatRank) {
  TempDir dir("amp-overflow-rank");
  Train(dir, "run", 23, {"--amp", "fp16", "--inject", "overflow:step=21,rank=1"});
  const auto findings = Compare(dir, "run");
  EXPECT_EQ(Serious(findings), Set{"scaler-overflow/warning"});
  const trace::JsonValue* f = FindFinding(findings, "scaler-overflow", "warning");
  ASSERT_TRUE(f);
  EXPECT_EQ(Ranks(*f), RankList{1});
  EXPECT_EQ(Int(*f, "step"), 21);
}

TEST(AmpCkptGhosts, ScalerDesyncNamesTheRankThatSteppedAlone) {
  TempDir dir("amp-scaler-desync");
  Train(
      dir, "run", 6,
      {"--amp", "fp16", "--inject", "overflow:step=2,rank=0", "--inject", "scaler-desync:rank=1"});
  const auto findings = Compare(dir, "run");
  // Rank 1 applied an update with inf gradients: its replica diverges as well, a follow-on.
  EXPECT_EQ(Serious(findings), Set{"scaler-desync/error"});
  EXPECT_TRUE(FindFinding(findings, "replica-divergence", "info"));
  const trace::JsonValue* f = FindFinding(findings, "scaler-desync", "error");
  ASSERT_TRUE(f);
  EXPECT_EQ(Ranks(*f), RankList{1});
  EXPECT_EQ(Int(*f, "step"), 2);
  EXPECT_EQ(Str(*f, "subject"), "found-inf");
}

TEST(AmpCkptGhosts, ClipBeforeUnscaleIsAnErrorOnEveryRankFromTheFirstStep) {
  TempDir dir("amp-clip");
  Train(dir, "run", 3, {"--amp", "fp16", "--clip-norm", "1", "--inject", "clip-before-unscale"});
  const auto findings = Compare(dir, "run");
  EXPECT_EQ(Serious(findings), Set{"clip-before-unscale/error"});
  const trace::JsonValue* f = FindFinding(findings, "clip-before-unscale", "error");
  ASSERT_TRUE(f);
  EXPECT_EQ(Ranks(*f), (RankList{0, 1}));
  EXPECT_EQ(Int(*f, "step"), 0);
  EXPECT_EQ(Real(Field(*f, "evidence"), "scale"), 65536.0);
  EXPECT_GT(Real(Field(*f, "evidence"), "norm"), Real(Field(*f, "evidence"), "max"));
}

TEST(AmpCkptGhosts, CkptAllRanksIsARaceOnTheFirstCheckpoint) {
  TempDir dir("ckpt-race");
  Train(dir, "run", 6, {"--ckpt-every", "3", "--inject", "ckpt-all-ranks"});
  const auto findings = Compare(dir, "run");
  EXPECT_EQ(Serious(findings), Set{"checkpoint-race/error"});
  const trace::JsonValue* f = FindFinding(findings, "checkpoint-race", "error");
  ASSERT_TRUE(f);
  EXPECT_EQ(Ranks(*f), (RankList{0, 1}));
  EXPECT_EQ(Int(*f, "step"), 2);
  EXPECT_EQ(Str(*f, "subject"), dir / "run/checkpoints/step-00000003.pt");
  EXPECT_EQ(Int(Field(*f, "evidence"), "paths_raced"), 2);
}

TEST(AmpCkptGhosts, CkptStaleIsAMismatchNamingTheStaleRankAndACleanResumeIsNot) {
  TempDir dir("ckpt-stale");
  Train(dir, "first", 6, {"--ckpt-every", "2"});
  EXPECT_EQ(Serious(Compare(dir, "first")), Set{});
  const std::string ckpt = dir / "first/checkpoints/step-00000006.pt";

  Train(dir, "resumed", 8, {"--resume", ckpt});
  EXPECT_EQ(Serious(Compare(dir, "resumed")), Set{});

  Train(dir, "stale", 8, {"--resume", ckpt, "--inject", "ckpt-stale:rank=1"});
  const auto findings = Compare(dir, "stale");
  EXPECT_EQ(Serious(findings), Set{"checkpoint-mismatch/error"});
  const trace::JsonValue* f = FindFinding(findings, "checkpoint-mismatch", "error");
  ASSERT_TRUE(f);
  EXPECT_EQ(Ranks(*f), RankList{1});
  EXPECT_EQ(Int(*f, "step"), 6);
  EXPECT_EQ(Str(*f, "subject"), dir / "first/checkpoints/step-00000004.pt");
}

}  // namespace
}  // namespace dsdiag::trainer_test
