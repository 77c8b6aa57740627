// Seed and data ghosts end to end: a short 2-rank `dsdiag train` with each fault of the
// family on, then `dsdiag compare --format json`, asserting the exact findings (kind,
// severity, ranks, epoch or step). A clean run must give no warning or error.
//
// Runs: 12 steps of batch 4 over 32 samples = 16 per rank, 4 batches per epoch, 3 epochs.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <vector>

#include "tests/trainer/findings_util.h"
#include "tests/trainer/trainer_test_util.h"
#include "trace/trace_reader.h"

namespace dsdiag::trainer_test {
namespace {

struct Compared {
  int status = -1;
  std::vector<trace::JsonValue> findings;
  // Findings of `kind`.
  std::vector<const trace::JsonValue*> Of(const std::string& kind) const {
    std::vector<const trace::JsonValue*> out;
    for (const auto& f : findings)
      if (Str(f, "kind") == kind) out.push_back(&f);
    return out;
  }
  // Warnings and errors as JSON lines, for assertions and failure messages. `straggler`
  // is timing-based: on a loaded shared machine a clean run can have a real straggler, so
  // it is left out when `timing` is false (its own tests cover it).
  std::string Serious(bool timing = true) const {
    std::string s;
    for (const auto& f : findings)
      if (Str(f, "severity") != "info" && (timing || Str(f, "kind") != "straggler"))
        s += f.ToJson() + "\n";
    return s;
  }
};

Compared TrainAndCompare(const TempDir& dir, const std::string& name,
                         const std::vector<std::string>& extra) {
  std::vector<std::string> args = {
      "train",          "--nproc", "2",        "--steps", "12",    "--batch-size", "4",
      "--dataset-size", "32",      "--layers", "1",       "--out", dir / name};
  args.insert(args.end(), extra.begin(), extra.end());
  const std::string train_log = dir / (name + "-train.log");
  EXPECT_EQ(RunDsdiag(args, train_log, 120), 0) << ReadFile(train_log);
  Compared c;
  const std::string out = dir / (name + "-compare.json");
  c.status = RunDsdiag({"compare", dir / name, "--format", "json"}, out, 60);
  const std::string text = ReadFile(out);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(text).get(root) != simdjson::SUCCESS) {
    ADD_FAILURE() << "compare printed no JSON:\n" << text;
    return c;
  }
  const trace::JsonValue all = trace::ToJsonValue(root);
  for (const auto& f : Field(all, "findings").elements()) c.findings.push_back(f);
  return c;
}

TEST(SeedDataGhosts, CleanRunsHaveNoWarningWithAndWithoutWorkers) {
  TempDir dir("ghosts-clean");
  for (const char* workers : {"0", "2"}) {
    const Compared c =
        TrainAndCompare(dir, std::string("clean-w") + workers, {"--workers", workers});
    EXPECT_EQ(c.Serious(/*timing=*/false), "") << "workers " << workers;
  }
}

TEST(SeedDataGhosts, RngCollisionNamesTheDropoutStreamOnBothRanks) {
  TempDir dir("ghosts-rng");
  const Compared c = TrainAndCompare(dir, "run", {"--inject", "rng-collision"});
  const auto found = c.Of("rng-collision");
  ASSERT_EQ(found.size(), 1u) << c.Serious();
  EXPECT_EQ(Str(*found[0], "severity"), "warning");
  EXPECT_EQ(Str(*found[0], "subject"), "dropout");
  EXPECT_EQ(Ranks(*found[0]), (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(c.Of("shard-overlap").empty()) << c.Serious();
}

TEST(SeedDataGhosts, ForeignSamplerSeedOverlapsAndMissesOnRankOne) {
  TempDir dir("ghosts-sampler-seed");
  const Compared c = TrainAndCompare(dir, "run", {"--inject", "sampler-seed:rank=1"});
  const auto found = c.Of("shard-overlap");
  ASSERT_FALSE(found.empty()) << c.Serious();
  bool error = false;
  for (const trace::JsonValue* f : found) {
    EXPECT_EQ(Ranks(*f), std::vector<int64_t>{1});
    EXPECT_EQ(Int(Field(*f, "evidence"), "epoch"), 0);
    EXPECT_EQ(Int(*f, "step"), 0);
    error = error || Str(*f, "severity") == "error";
  }
  // Two independent permutations of 32 samples split in halves cannot be disjoint by chance
  // here (the seeds are fixed): the overlap is an error, and compare exits 1.
  EXPECT_TRUE(error) << c.Serious();
  EXPECT_EQ(c.status, 1);
  EXPECT_TRUE(c.Of("rng-collision").empty());
  EXPECT_TRUE(c.Of("epoch-order-repeat").empty());
}

TEST(SeedDataGhosts, NoSetEpochRepeatsTheOrderFromEpochOne) {
  TempDir dir("ghosts-no-set-epoch");
  const Compared c = TrainAndCompare(dir, "run", {"--inject", "no-set-epoch"});
  const auto found = c.Of("epoch-order-repeat");
  ASSERT_EQ(found.size(), 1u) << c.Serious();
  EXPECT_EQ(Str(*found[0], "severity"), "warning");
  EXPECT_EQ(Ranks(*found[0]), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(Int(Field(*found[0], "evidence"), "epoch"), 1);
  EXPECT_EQ(Int(Field(*found[0], "evidence"), "sampler_epoch"), 0);
  EXPECT_EQ(Int(*found[0], "step"), 4);
  EXPECT_TRUE(c.Of("shard-overlap").empty()) << c.Serious();
}

TEST(SeedDataGhosts, SlowLoaderStarvesThatRankOnly) {
  TempDir dir("ghosts-slow-loader");
  const Compared c = TrainAndCompare(dir, "run", {"--inject", "slow-loader:rank=1,ms=60"});
  const auto found = c.Of("loader-starvation");
  ASSERT_EQ(found.size(), 1u) << c.Serious();
  EXPECT_EQ(Str(*found[0], "severity"), "warning");
  EXPECT_EQ(Ranks(*found[0]), std::vector<int64_t>{1});
  EXPECT_NE(Str(*found[0], "hint").find("dsdiag loader-sweep"), std::string::npos);
  EXPECT_TRUE(c.Of("shard-overlap").empty());
  EXPECT_TRUE(c.Of("rng-collision").empty());
}

}  // namespace
}  // namespace dsdiag::trainer_test
