// `dsdiag synth` end to end: exit statuses and messages (docs/contract.md: 2 for bad usage).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/support/shell.h"
#include "tests/synth/synth_test_util.h"

namespace dsdiag::synth {
namespace {

using testing::ReadFile;
using testing::TempDir;

using Result = test_support::CommandResult;

// `dsdiag synth <args>` (arguments are test-controlled).
Result Synth(const std::string& args) { return test_support::RunDsdiag("synth " + args); }

TEST(SynthCommandTest, WritesRankFiles) {
  TempDir scratch;
  const std::string run = scratch / "run";
  const Result r = Synth("--ranks 3 --steps 4 --out " + run);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(run + "/rank-00000.jsonl"));
  EXPECT_TRUE(std::filesystem::exists(run + "/rank-00002.jsonl"));
  EXPECT_FALSE(std::filesystem::exists(run + "/rank-00003.jsonl"));
  EXPECT_NE(r.out.find("3 ranks"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");  // no progress line when stderr is not a terminal
}

TEST(SynthCommandTest, SameArgumentsSameBytes) {
  TempDir scratch;
  const std::string args = "--ranks 5 --steps 3 --seed 42 --inject straggler:rank=2,ms=10 --out ";
  ASSERT_EQ(Synth(args + (scratch / "a")).status, 0);
  ASSERT_EQ(Synth(args + (scratch / "b") + " --threads 1").status, 0);
  for (int r = 0; r < 5; ++r) {
    const std::string name = "/rank-0000" + std::to_string(r) + ".jsonl";
    EXPECT_EQ(ReadFile(scratch / "a" + name), ReadFile(scratch / "b" + name)) << name;
  }
}

TEST(SynthCommandTest, UnsupportedInjectIsBadUsage) {
  TempDir scratch;
  const Result r = Synth("--ranks 2 --steps 2 --inject rng-collision --out " + (scratch / "run"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("synth cannot imitate --inject rng-collision"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(scratch / "run"));
}

TEST(SynthCommandTest, BadUsageExitsTwo) {
  TempDir scratch;
  const std::string run = scratch / "run";
  EXPECT_EQ(Synth("--steps 2 --out " + run).status, 2);  // no --ranks
  EXPECT_EQ(Synth("--ranks 2 --out " + run).status, 2);  // no --steps
  EXPECT_EQ(Synth("--ranks 2 --steps 2").status, 2);     // no --out
  EXPECT_EQ(Synth("--ranks 0 --steps 2 --out " + run).status, 2);
  EXPECT_EQ(Synth("--ranks two --steps 2 --out " + run).status, 2);
  EXPECT_EQ(Synth("--ranks 2 --steps 2 --seed -1 --out " + run).status, 2);
  EXPECT_EQ(Synth("--ranks 2 --steps 2 --inject crash:rank=5,step=1 --out " + run).status, 2);
  EXPECT_EQ(Synth("--ranks 2 --steps 2 --out " + run + " extra").status, 2);
}

TEST(SynthCommandTest, NonEmptyOutNeedsForce) {
  TempDir scratch;
  const std::string run = scratch / "run";
  ASSERT_EQ(Synth("--ranks 2 --steps 2 --out " + run).status, 0);
  const Result again = Synth("--ranks 2 --steps 2 --out " + run);
  EXPECT_EQ(again.status, 2);
  EXPECT_NE(again.err.find("--force"), std::string::npos) << again.err;
  EXPECT_EQ(Synth("--ranks 2 --steps 2 --force --out " + run).status, 0);
}

TEST(SynthCommandTest, HelpExitsZero) {
  TempDir scratch;
  const Result r = Synth("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("--ranks"), std::string::npos);
  EXPECT_NE(r.out.find("straggler"), std::string::npos);
  EXPECT_NE(r.out.find("config-mismatch:rank=R"), std::string::npos);
}

}  // namespace
}  // namespace dsdiag::synth
