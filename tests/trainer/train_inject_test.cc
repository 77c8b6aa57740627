// One smoke test per `--inject` kind (docs/contract.md): a short 2-rank run with the fault on,
// and the trace evidence that the fault did what it says — the evidence the analyzers
// will look for, read straight from the records.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "tests/trainer/trainer_test_util.h"

namespace dsdiag::trainer_test {
namespace {

constexpr int64_t kMs = 1000000;

// A 2-rank run of `steps` steps with `extra` flags; expects exit status `expect`.
std::vector<Trace> RunTwoRanks(const TempDir& dir, const std::vector<std::string>& extra,
                               int steps = 6, int expect = 0, const std::string& name = "run") {
  std::vector<std::string> args = {"train", "--nproc", "2", "--steps", std::to_string(steps),
                                   "--out", dir / name};
  args.insert(args.end(), extra.begin(), extra.end());
  const std::string log = dir / (name + ".log");
  const int status = RunDsdiag(args, log, 120);
  if (expect >= 0) {
    EXPECT_EQ(status, expect) << ReadFile(log);
  } else {
    EXPECT_GT(status, 0) << ReadFile(log);
  }
  return ReadRun(dir / name, 2);
}

const trace::JsonValue* Phases(const Trace& t, int64_t step) {
  const trace::JsonValue* s = AtStep(t, "step", step);
  return s ? &Field(*s, "phases") : nullptr;
}

TEST(TrainInject, UnusedParamLeavesTheSkippedModuleWithoutGradients) {
  TempDir dir("unused-param");
  std::vector<Trace> t = RunTwoRanks(dir, {"--inject", "unused-param:rank=1"});
  const trace::JsonValue* g0 = AtStep(t[0], "grad", 0);
  const trace::JsonValue* g1 = AtStep(t[1], "grad", 0);
  ASSERT_TRUE(g0 && g1);
  EXPECT_EQ(Int(*g0, "n_missing"), 0);
  ASSERT_GT(Int(*g1, "n_missing"), 0);
  for (const trace::JsonValue& i : Field(*g1, "missing").elements()) {
    EXPECT_NE(t[1].ParamName(static_cast<int>(i.as_int())).find(".moe.shared."), std::string::npos);
  }
  // The sync still hands every rank the same (averaged) gradients.
  EXPECT_EQ(Fingerprints(t[1], "grad", "after-sync"), Fingerprints(t[0], "grad", "after-sync"));
}

TEST(TrainInject, GradDesyncAltersOneRanksGradientAfterTheSync) {
  TempDir dir("grad-desync");
  std::vector<Trace> t = RunTwoRanks(dir, {"--inject", "grad-desync:rank=1,step=2"});
  // At the allreduce's completion both ranks agree; rank 1's edit shows before its step.
  EXPECT_EQ(Fingerprints(t[0], "grad", "after-sync"), Fingerprints(t[1], "grad", "after-sync"));
  std::vector<std::string> a = Fingerprints(t[0], "grad", "pre-step");
  std::vector<std::string> b = Fingerprints(t[1], "grad", "pre-step");
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), 6u);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  EXPECT_NE(a[2], b[2]);
  EXPECT_NE(b[2], Fingerprints(t[1], "grad", "after-sync")[2]);
  EXPECT_NE(Fingerprints(t[0], "param", "final"), Fingerprints(t[1], "param", "final"));
}

TEST(TrainInject, NoBroadcastStartsRanksFromDifferentWeights) {
  TempDir dir("no-broadcast");
  std::vector<Trace> t = RunTwoRanks(dir, {"--inject", "no-broadcast"});
  EXPECT_NE(Fingerprints(t[0], "param", "init"), Fingerprints(t[1], "param", "init"));
  for (const Trace& r : t) {
    for (const trace::JsonValue* c : r.Of("coll")) EXPECT_NE(Str(*c, "tag"), "init-broadcast");
  }
}

TEST(TrainInject, RngCollisionSeedsEveryRankAlike) {
  TempDir dir("rng-collision");
  std::vector<Trace> t = RunTwoRanks(dir, {"--inject", "rng-collision"});
  auto dropout = [](const Trace& r) {
    for (const trace::JsonValue* x : r.Of("rng"))
      if (Str(*x, "stream") == "dropout") return Str(*x, "h");
    return std::string("none");
  };
  EXPECT_NE(dropout(t[0]), "none");
  EXPECT_EQ(dropout(t[0]), dropout(t[1]));
}

std::vector<int64_t> Indices(const Trace& t, int64_t epoch) {
  std::vector<int64_t> out;
  for (const trace::JsonValue* s : t.Of("sampler")) {
    if (Int(*s, "epoch") != epoch) continue;
    for (const trace::JsonValue& i : Field(*s, "idx").elements()) out.push_back(i.as_int());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TrainInject, SamplerSeedMakesShardsOverlap) {
  TempDir dir("sampler-seed");
  std::vector<Trace> clean =
      RunTwoRanks(dir, {"--probes", "full", "--dataset-size", "64"}, 2, 0, "clean");
  std::vector<Trace> t = RunTwoRanks(
      dir, {"--probes", "full", "--dataset-size", "64", "--inject", "sampler-seed:rank=1"}, 2);
  auto overlap = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    std::vector<int64_t> both;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
    return both.size();
  };
  EXPECT_EQ(overlap(Indices(clean[0], 0), Indices(clean[1], 0)), 0u) << "clean shards are disjoint";
  EXPECT_EQ(Indices(t[0], 0).size(), 32u);
  EXPECT_GT(overlap(Indices(t[0], 0), Indices(t[1], 0)), 0u);
  EXPECT_NE(Int(*t[0].Of("sampler")[0], "seed"), Int(*t[1].Of("sampler")[0], "seed"));
}

TEST(TrainInject, NoSetEpochRepeatsTheOrderEveryEpoch) {
  TempDir dir("no-set-epoch");
  // 32 samples / 2 ranks / batch 8: two steps per epoch.
  std::vector<Trace> t = RunTwoRanks(dir, {"--dataset-size", "32", "--inject", "no-set-epoch"}, 6);
  std::vector<const trace::JsonValue*> s = t[0].Of("sampler");
  ASSERT_EQ(s.size(), 3u);
  for (int e = 0; e < 3; ++e) {
    EXPECT_EQ(Int(*s[e], "epoch"), e);
    EXPECT_EQ(Int(*s[e], "sampler_epoch"), 0);
    EXPECT_EQ(Str(*s[e], "order"), Str(*s[0], "order"));
  }
  std::vector<Trace> clean = RunTwoRanks(dir, {"--dataset-size", "32"}, 6, 0, "clean");
  std::vector<const trace::JsonValue*> c = clean[0].Of("sampler");
  ASSERT_EQ(c.size(), 3u);
  EXPECT_NE(Str(*c[1], "order"), Str(*c[0], "order"));
}

TEST(TrainInject, SlowLoaderDelaysEveryBatchOfThatRank) {
  TempDir dir("slow-loader");
  std::vector<Trace> t = RunTwoRanks(dir, {"--inject", "slow-loader:rank=1,ms=60"}, 4);
  for (int64_t step = 0; step < 4; ++step) {
    const trace::JsonValue* p = Phases(t[1], step);
    ASSERT_NE(p, nullptr);
    EXPECT_GE(Int(*p, "data"), 60 * kMs) << "step " << step;
  }
  ASSERT_EQ(t[1].Of("loader").size(), 4u);
  for (const trace::JsonValue* l : t[1].Of("loader")) EXPECT_GE(Int(*l, "wait"), 60 * kMs);
}

TEST(TrainInject, OverflowMakesTheScalerSkipTheStepOnEveryRank) {
  TempDir dir("overflow");
  std::vector<Trace> t = RunTwoRanks(dir, {"--amp", "fp16", "--inject", "overflow:step=2"});
  for (const Trace& r : t) {
    const trace::JsonValue* s2 = AtStep(r, "scaler", 2);
    const trace::JsonValue* s3 = AtStep(r, "scaler", 3);
    ASSERT_TRUE(s2 && s3);
    EXPECT_TRUE(Bool(*s2, "inf_local"));
    EXPECT_TRUE(Bool(*s2, "skipped"));
    EXPECT_EQ(Str(*s2, "event"), "backoff");
    EXPECT_EQ(Real(*s3, "scale"), Real(*s2, "scale") / 2);
    EXPECT_FALSE(Bool(*AtStep(r, "scaler", 1), "skipped"));
    EXPECT_FALSE(Field(*AtStep(r, "grad", 2), "nonfinite").elements().empty());
  }
  EXPECT_EQ(Fingerprints(t[0], "param", "final"), Fingerprints(t[1], "param", "final"));
}

TEST(TrainInject, OverflowOnOneRankIsReducedAcrossRanks) {
  TempDir dir("overflow-rank");
  std::vector<Trace> t = RunTwoRanks(dir, {"--amp", "fp16", "--inject", "overflow:step=2,rank=0"});
  EXPECT_TRUE(Bool(*AtStep(t[0], "scaler", 2), "inf_local"));
  EXPECT_FALSE(Bool(*AtStep(t[1], "scaler", 2), "inf_local"));
  EXPECT_TRUE(Bool(*AtStep(t[1], "scaler", 2), "inf_global"));
  EXPECT_TRUE(Bool(*AtStep(t[1], "scaler", 2), "skipped"));
}

TEST(TrainInject, ScalerDesyncLetsOneRankStepAlone) {
  TempDir dir("scaler-desync");
  std::vector<Trace> t = RunTwoRanks(dir, {"--amp", "fp16", "--inject", "overflow:step=2,rank=0",
                                           "--inject", "scaler-desync:rank=1"});
  EXPECT_TRUE(Bool(*AtStep(t[0], "scaler", 2), "skipped"));
  EXPECT_TRUE(Bool(*AtStep(t[1], "scaler", 2), "inf_global"));
  EXPECT_FALSE(Bool(*AtStep(t[1], "scaler", 2), "skipped"));
  EXPECT_NE(Real(*AtStep(t[0], "scaler", 3), "scale"), Real(*AtStep(t[1], "scaler", 3), "scale"));
}

TEST(TrainInject, ClipBeforeUnscaleClipsScaledGradients) {
  TempDir dir("clip-before-unscale");
  std::vector<Trace> clean = RunTwoRanks(dir, {"--amp", "fp16", "--clip-norm", "1"}, 3, 0, "clean");
  for (const trace::JsonValue* c : clean[0].Of("clip")) EXPECT_TRUE(Bool(*c, "unscaled"));
  std::vector<Trace> t =
      RunTwoRanks(dir, {"--amp", "fp16", "--clip-norm", "1", "--inject", "clip-before-unscale"}, 3);
  ASSERT_EQ(t[0].Of("clip").size(), 3u);
  for (const trace::JsonValue* c : t[0].Of("clip")) {
    EXPECT_FALSE(Bool(*c, "unscaled"));
    EXPECT_GT(Real(*c, "norm"), 1000.0) << "the norm of gradients still scaled by 2^16";
  }
}

TEST(TrainInject, CkptAllRanksWritesOnePathFromEveryRank) {
  TempDir dir("ckpt-all-ranks");
  std::vector<Trace> t = RunTwoRanks(dir, {"--ckpt-every", "3", "--inject", "ckpt-all-ranks"});
  std::set<std::string> paths;
  for (const Trace& r : t) {
    std::vector<const trace::JsonValue*> saves = r.Of("ckpt");
    ASSERT_EQ(saves.size(), 2u);
    for (const trace::JsonValue* c : saves) paths.insert(Str(*c, "path"));
  }
  EXPECT_EQ(paths.size(), 2u) << "both ranks wrote the same two paths";
  EXPECT_TRUE(std::filesystem::exists(dir / "run/checkpoints/step-00000006.pt"));
}

TEST(TrainInject, CkptStaleLoadsAnOlderCheckpointOnOneRank) {
  TempDir dir("ckpt-stale");
  RunTwoRanks(dir, {"--ckpt-every", "2"}, 6, 0, "first");
  std::vector<Trace> t = RunTwoRanks(
      dir,
      {"--resume", dir / "first/checkpoints/step-00000006.pt", "--inject", "ckpt-stale:rank=1"}, 8);
  auto load = [](const Trace& r) -> const trace::JsonValue* {
    for (const trace::JsonValue* c : r.Of("ckpt"))
      if (Str(*c, "op") == "load") return c;
    return nullptr;
  };
  ASSERT_TRUE(load(t[0]) && load(t[1]));
  EXPECT_EQ(Int(*load(t[0]), "ckpt_step"), 6);
  EXPECT_EQ(Int(*load(t[1]), "ckpt_step"), 4);
  EXPECT_NE(Str(*load(t[0]), "h"), Str(*load(t[1]), "h"));
  // Both continue at rank 0's step, with different weights.
  EXPECT_EQ(Int(*t[1].Of("step").front(), "step"), 6);
  EXPECT_NE(Fingerprints(t[0], "param", "resume"), Fingerprints(t[1], "param", "resume"));
}

TEST(TrainInject, StragglerSlowsThatRanksCompute) {
  TempDir dir("straggler");
  std::vector<Trace> t = RunTwoRanks(dir, {"--inject", "straggler:rank=1,ms=60"}, 4);
  for (int64_t step = 0; step < 4; ++step) {
    const trace::JsonValue* p = Phases(t[1], step);
    ASSERT_NE(p, nullptr);
    EXPECT_GE(Int(*p, "forward"), 60 * kMs) << "step " << step;
  }
}

TEST(TrainInject, ClockSkewShowsInTheMeasuredOffset) {
  TempDir dir("clock-skew");
  std::vector<Trace> t = RunTwoRanks(dir, {"--inject", "clock-skew:rank=1,ms=500"}, 2);
  const trace::JsonValue& clock = Field(t[1].header(), "clock");
  const int64_t offset = Int(clock, "offset");
  const int64_t err = Int(clock, "offset_err");
  ASSERT_GE(err, 0);
  // Same host, so the true offset is the injected skew; the estimate is within its error.
  EXPECT_LE(std::llabs(offset - 500 * kMs), err + 1000) << "offset " << offset << " err " << err;
  EXPECT_EQ(Int(Field(t[0].header(), "clock"), "offset"), 0);
}

TEST(TrainInject, CollectiveMismatchFailsTheJob) {
  TempDir dir("collective-mismatch");
  std::vector<Trace> t =
      RunTwoRanks(dir, {"--timeout", "5", "--inject", "collective-mismatch:rank=1,step=2"}, 6, -1);
  bool error_recorded = false;
  for (const Trace& r : t) {
    const trace::JsonValue* end = r.Last("end");
    if (end) {
      EXPECT_NE(Str(*end, "reason"), "ok");
    }
    error_recorded |= !r.Of("error").empty();
  }
  EXPECT_TRUE(error_recorded);
  EXPECT_TRUE(std::filesystem::exists(dir / "run/flight-rank-00001.json") ||
              std::filesystem::exists(dir / "run/flight-rank-00000.json"));
}

TEST(TrainInject, HangIsCaughtByTheCollectiveTimeout) {
  TempDir dir("hang");
  std::vector<Trace> t =
      RunTwoRanks(dir, {"--timeout", "3", "--inject", "hang:rank=1,step=2"}, 20, -1);
  const trace::JsonValue* end0 = t[0].Last("end");
  ASSERT_NE(end0, nullptr);
  EXPECT_EQ(Str(*end0, "reason"), "error");
  EXPECT_NE(Str(*end0, "error").find("imed out"), std::string::npos) << Str(*end0, "error");
  // The hung rank began step 2 and never finished it.
  EXPECT_EQ(t[1].Of("step").size(), 2u);
  EXPECT_NE(t[1].Last("end"), nullptr);
}

}  // namespace
}  // namespace dsdiag::trainer_test
