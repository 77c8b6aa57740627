#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <optional>
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

// The trainer's encoding: base64 of a little-endian bitmap of the indices.
std::string Bitmap(const std::vector<int64_t>& members, int64_t size) {
  std::string bytes(static_cast<size_t>((size + 7) / 8), '\0');
  for (int64_t i : members) bytes[static_cast<size_t>(i / 8)] |= static_cast<char>(1 << (i % 8));
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += i + 1 < bytes.size() ? kAlphabet[v >> 6 & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

// DistributedSampler without shuffling: rank r takes r, r + W, ... of 0..N-1 padded by
// wrapping to a multiple of W.
std::vector<int64_t> Strided(int64_t size, int world, int rank) {
  const int64_t n = (size + world - 1) / world;
  std::vector<int64_t> v;
  for (int64_t k = 0; k < n; ++k) v.push_back((rank + k * world) % size);
  return v;
}

using ShardFn = std::function<std::vector<int64_t>(int rank, int epoch)>;

void WriteRun(TestRun* run, int world, int64_t size, int epochs, const ShardFn& shard,
              const std::function<int64_t(int)>& seed = {},
              std::optional<int64_t> configured_seed = std::nullopt) {
  for (int r = 0; r < world; ++r) {
    trace::TraceHeader header = TestRun::Header(r, world);
    if (configured_seed) header.config.Set("seed", *configured_seed);
    auto w = run->Open(header);
    for (int e = 0; e < epochs; ++e) {
      w->SetStep(e * 2);
      const auto members = shard(r, e);
      w->Begin(trace::rec::kSampler)
          .line()
          .Field("epoch", int64_t{e})
          .Field("sampler_epoch", int64_t{e})
          .Field("seed", seed ? seed(r) : int64_t{1234})
          .Field("n", static_cast<int64_t>(members.size()))
          .Hex("order", 1)
          .Hex("set", 2)
          .Field("size", size)
          .Field("bits", Bitmap(members, size));
      TestRun::WriteSteps(w.get(), e * 2, e * 2 + 2);
    }
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
}

std::vector<Finding> Analyze(const TestRun& run) {
  return RunOne(CreateShardOverlapAnalyzer(), run.dir());
}

TEST(ShardOverlapAnalyzerTest, DisjointShardsAreClean) {
  TestRun run;
  WriteRun(&run, 4, 64, 2, [](int r, int) { return Strided(64, 4, r); });
  EXPECT_TRUE(Analyze(run).empty());
}

TEST(ShardOverlapAnalyzerTest, PaddingDuplicatesAreNormal) {
  // 10 samples on 4 ranks: 3 each, 2 padded duplicates (samples 0 and 1 again).
  TestRun run;
  WriteRun(&run, 4, 10, 1, [](int r, int) { return Strided(10, 4, r); });
  EXPECT_TRUE(Analyze(run).empty());
}

TEST(ShardOverlapAnalyzerTest, ForeignSeedOverlapsAndMissesNamingTheOddRank) {
  // Rank 1 shuffles with its own seed: it takes 0..7 while rank 0 takes the even samples,
  // so 0, 2, 4, 6 are on both and 9, 11, 13, 15 on neither. Two ranks that disagree are a
  // tie; the seed the run was configured with (the headers' config.seed) breaks it.
  TestRun run;
  WriteRun(
      &run, 2, 16, 2,
      [](int r, int) {
        return r == 1 ? std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7} : Strided(16, 2, 0);
      },
      [](int r) { return r == 1 ? int64_t{99} : int64_t{1234}; }, int64_t{1234});
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 2u);
  const Finding* overlap = &findings[0];
  const Finding* missed = &findings[1];
  if (overlap->severity != Severity::kError) std::swap(overlap, missed);
  EXPECT_EQ(overlap->kind, kind::kShardOverlap);
  EXPECT_EQ(overlap->severity, Severity::kError);
  EXPECT_EQ(overlap->ranks, std::vector<int>{1});
  EXPECT_EQ(overlap->step, 0);
  EXPECT_EQ(Evidence(*overlap, "epoch"), "0");
  EXPECT_EQ(Evidence(*overlap, "overlap"), "4");
  EXPECT_EQ(Evidence(*overlap, "padding"), "0");
  EXPECT_EQ(Evidence(*overlap, "epochs_affected"), "2");
  EXPECT_EQ(missed->severity, Severity::kWarning);
  EXPECT_EQ(missed->ranks, std::vector<int>{1});
  EXPECT_EQ(Evidence(*missed, "missed"), "4");
}

TEST(ShardOverlapAnalyzerTest, AForeignSeedAtTwoRanksWithoutAConfiguredSeedNamesBoth) {
  TestRun run;
  WriteRun(
      &run, 2, 16, 1,
      [](int r, int) {
        return r == 1 ? std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7} : Strided(16, 2, 0);
      },
      [](int r) { return r == 1 ? int64_t{99} : int64_t{1234}; });
  for (const Finding& f : Analyze(run)) EXPECT_EQ(f.ranks, (std::vector<int>{0, 1})) << f.summary;
}

// Two ranks against two: ranks 2 and 3 shuffle with another seed and take 0..7, which
// ranks 0 and 1 hold too. Nothing in the shards says which pair is wrong; the configured
// seed does, and without one every rank of the split is named.
ShardFn EvenSplitOfFour() {
  return [](int r, int) {
    if (r == 2) return std::vector<int64_t>{0, 1, 2, 3};
    if (r == 3) return std::vector<int64_t>{4, 5, 6, 7};
    return Strided(16, 4, r);
  };
}

std::function<int64_t(int)> EvenSplitSeeds() {
  return [](int r) { return r >= 2 ? int64_t{99} : int64_t{1234}; };
}

TEST(ShardOverlapAnalyzerTest, AnEvenSplitOfFourIsBrokenByTheConfiguredSeed) {
  TestRun run;
  WriteRun(&run, 4, 16, 1, EvenSplitOfFour(), EvenSplitSeeds(), int64_t{1234});
  const auto findings = Analyze(run);
  ASSERT_FALSE(findings.empty());
  for (const Finding& f : findings) {
    EXPECT_EQ(f.ranks, (std::vector<int>{2, 3})) << f.summary;
    EXPECT_EQ(Evidence(f, "basis"), "\"configured seed\"");
  }
}

TEST(ShardOverlapAnalyzerTest, AnEvenSplitOfFourWithoutAConfiguredSeedNamesEveryRank) {
  TestRun run;
  WriteRun(&run, 4, 16, 1, EvenSplitOfFour(), EvenSplitSeeds());
  const auto findings = Analyze(run);
  ASSERT_FALSE(findings.empty());
  for (const Finding& f : findings) {
    EXPECT_EQ(f.ranks, (std::vector<int>{0, 1, 2, 3})) << f.summary;
    EXPECT_EQ(Evidence(f, "basis"), "\"no majority\"");
    EXPECT_NE(f.summary.find("no majority"), std::string::npos) << f.summary;
  }
}

TEST(ShardOverlapAnalyzerTest, JointMissWithoutOverlapIsAWarning) {
  // Both ranks skip sample 15.
  TestRun run;
  WriteRun(&run, 2, 16, 1, [](int r, int) {
    auto v = Strided(16, 2, r);
    v.erase(std::remove(v.begin(), v.end(), 15), v.end());
    return v;
  });
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kWarning);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(Evidence(findings[0], "missed"), "1");
}

TEST(ShardOverlapAnalyzerTest, WithoutBitmapsIdenticalSetHashesAreAnOverlap) {
  TestRun run;
  for (int r = 0; r < 2; ++r) {
    auto w = run.Open(TestRun::Header(r, 2));
    w->Begin(trace::rec::kSampler)
        .line()
        .Field("epoch", int64_t{0})
        .Field("sampler_epoch", int64_t{0})
        .Field("seed", int64_t{1234})
        .Field("n", int64_t{8})
        .Hex("order", 1)
        .Hex("set", 42);
    TestRun::WriteSteps(w.get(), 0, 2);
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kError);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(Evidence(findings[0], "overlap"), "8");
}

// `world` ranks, 8 steps of one training batch each, whose fingerprint is batch(rank, step);
// with `sampler`, a sampler record of a disjoint shard at step 0 as well.
void WriteBatches(TestRun* run, int world, const std::function<uint64_t(int, int)>& batch,
                  bool sampler = false) {
  for (int r = 0; r < world; ++r) {
    auto w = run->Open(TestRun::Header(r, world));
    for (int s = 0; s < 8; ++s) {
      w->SetStep(s);
      w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
      if (sampler && s == 0)
        w->Begin(trace::rec::kSampler)
            .line()
            .Field("epoch", int64_t{0})
            .Field("sampler_epoch", int64_t{0})
            .Field("seed", int64_t{0})
            .Field("n", int64_t{8})
            .Hex("order", 1)
            .Hex("set", 2)
            .Field("size", int64_t{8 * world})
            .Field("bits", Bitmap(Strided(8 * world, world, r), 8 * world));
      w->Begin(trace::rec::kLoader)
          .line()
          .Field("wait", int64_t{1000})
          .Field("samples", int64_t{8})
          .Hex("batch", batch(r, s));
      w->Begin(trace::rec::kStep).line().Field("dur", int64_t{1000000}).Field("loss", 1.0);
    }
    w->SetStep(8);
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
}

TEST(ShardOverlapAnalyzerTest, IdenticalBatchesWithoutASamplerAreAnUnsplitDataset) {
  TestRun run;
  WriteBatches(&run, 3, [](int, int s) { return uint64_t{100} + s; });
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kError);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(findings[0].step, 0);
  EXPECT_EQ(findings[0].subject, "data loader");
  EXPECT_EQ(Evidence(findings[0], "steps_identical"), "8");
  EXPECT_EQ(Evidence(findings[0], "basis"), "\"identical batches\"");
}

TEST(ShardOverlapAnalyzerTest, TwoOfThreeRanksOnTheSameBatchesAreNamed) {
  TestRun run;
  WriteBatches(&run, 3, [](int r, int s) { return uint64_t{100} + s + (r == 2 ? 50 : 0); });
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1}));
}

TEST(ShardOverlapAnalyzerTest, DifferentBatchesOrAConstantBatchAreNoFinding) {
  TestRun split, constant;
  WriteBatches(&split, 2, [](int r, int s) { return uint64_t{100} + 10 * s + r; });
  WriteBatches(&constant, 2, [](int, int) { return uint64_t{7}; });
  EXPECT_TRUE(Analyze(split).empty());
  EXPECT_TRUE(Analyze(constant).empty());
}

TEST(ShardOverlapAnalyzerTest, ADistributedSamplerIsJudgedByItsShardsNotItsBatches) {
  TestRun run;  // the same bytes on both ranks (a duplicated dataset), disjoint shards
  WriteBatches(
      &run, 2, [](int, int s) { return uint64_t{100} + s; }, /*sampler=*/true);
  EXPECT_TRUE(Analyze(run).empty());
}

TEST(ShardOverlapAnalyzerTest, StepsARankNeverDeliveredAreComparedAmongTheOthers) {
  TestRun run;  // rank 2's loader ends after step 1: steps 2-7 come from ranks 0 and 1 only
  for (int r = 0; r < 3; ++r) {
    auto w = run.Open(TestRun::Header(r, 3));
    for (int s = 0; s < 8; ++s) {
      w->SetStep(s);
      w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
      if (r < 2 || s < 2)
        w->Begin(trace::rec::kLoader)
            .line()
            .Field("wait", int64_t{1000})
            .Field("samples", int64_t{8})
            .Hex("batch", uint64_t{100} + s + (r == 2 ? 50 : 0));
      w->Begin(trace::rec::kStep).line().Field("dur", int64_t{1000000}).Field("loss", 1.0);
    }
    w->SetStep(8);
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(Evidence(findings[0], "steps_compared"), "8");
}

}  // namespace
}  // namespace dsdiag::analyzers
