// A rank SIGKILLed at a random moment (what the OOM killer or a lost node does): the
// survivors' traces stay whole, rank-died names the dead rank and the exact step it died
// in, and nothing the survivors had written (or buffered) before the kill is lost.
//
// The rank and the moment come from a fixed seed (printed), so a failure reruns the same
// way: kill rank R once its trace shows step K done, plus D ms into the next step.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/robustness/robustness_util.h"
#include "tests/trainer/findings_util.h"
#include "tests/trainer/trainer_test_util.h"
#include "trace/run_files.h"

namespace dsdiag::robustness_test {
namespace {

using trainer_test::CompareRun;
using trainer_test::FindFinding;
using trainer_test::Int;
using trainer_test::Ranks;
using trainer_test::ReadFile;
using trainer_test::Str;
using trainer_test::TempDir;

constexpr int kRanks = 3;
constexpr int kSteps = 40;

struct KillPlan {
  int rank;
  int64_t after_step;  // kill once this step's record is on disk...
  int delay_ms;        // ...and this long after we saw it
};

KillPlan PlanFor(unsigned seed) {
  std::mt19937 gen(seed);  // mt19937's output is fixed by the standard; `%` keeps it portable
  KillPlan p;
  p.rank = static_cast<int>(seed % kRanks);  // seeds 1..3 cover every rank, the store's host too
  p.after_step = 1 + static_cast<int64_t>(gen() % 20);
  p.delay_ms = static_cast<int>(gen() % 250);
  return p;
}

class KilledRank : public ::testing::TestWithParam<unsigned> {};

TEST_P(KilledRank, SurvivorsKeepTheirTracesAndTheDeadRankIsNamed) {
  const unsigned seed = GetParam();
  const KillPlan plan = PlanFor(seed);
  std::printf("seed %u: SIGKILL rank %d after step %lld + %d ms\n", seed, plan.rank,
              static_cast<long long>(plan.after_step), plan.delay_ms);
  TempDir dir("killed-rank-" + std::to_string(seed));
  const std::string run = dir / "run";
  const std::string log = dir / "train.log";
  const pid_t launcher =
      trainer_test::StartDsdiag({"train", "--nproc", std::to_string(kRanks), "--steps",
                                 std::to_string(kSteps), "--timeout", "20", "--out", run},
                                log);
  auto trace_of = [&](int rank) { return run + "/" + trace::RankTraceFileName(rank); };

  const bool reached = WaitForStep(trace_of(plan.rank), plan.after_step, launcher);
  if (!reached) trainer_test::WaitDsdiag(launcher, 10);
  ASSERT_TRUE(reached) << "rank " << plan.rank << " never showed step " << plan.after_step << "\n"
                       << ReadFile(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(plan.delay_ms));
  // What every survivor has on disk at the instant of the kill: it must all still be there.
  std::vector<std::string> before(kRanks);
  for (int r = 0; r < kRanks; ++r)
    if (r != plan.rank) before[r] = ReadFile(trace_of(r));
  const Progress victim = ReadProgress(trace_of(plan.rank));
  ASSERT_GT(victim.pid, 0);
  ASSERT_EQ(kill(static_cast<pid_t>(victim.pid), SIGKILL), 0);

  const int status = trainer_test::WaitDsdiag(launcher, 120);
  const std::string train_log = ReadFile(log);
  EXPECT_EQ(status, 128 + SIGKILL) << train_log;  // the first failure's status (launcher.h)
  EXPECT_NE(train_log.find("rank " + std::to_string(plan.rank) + " (pid " +
                           std::to_string(victim.pid) + ") was killed by SIGKILL"),
            std::string::npos)
      << train_log;

  // The victim: readable too (at most a cut-short last line).
  const TraceSummary dead = ReadSummary(trace_of(plan.rank));
  ASSERT_TRUE(dead.opened);
  EXPECT_LE(dead.issue_count, 1);
  EXPECT_EQ(dead.issue_count, dead.truncated_tail ? 1 : 0);
  EXPECT_TRUE(dead.end_reason.empty());
  EXPECT_GE(dead.last_step_done, plan.after_step);

  // Survivors: read to the end without a single issue, an end record last, and the file
  // as it was at the kill is a prefix of the final one.
  for (int r = 0; r < kRanks; ++r) {
    if (r == plan.rank) continue;
    SCOPED_TRACE("survivor rank " + std::to_string(r));
    const TraceSummary s = ReadSummary(trace_of(r));
    ASSERT_TRUE(s.opened);
    EXPECT_EQ(s.issue_count, 0) << (s.issues.empty() ? "" : s.issues.front());
    EXPECT_EQ(s.last_type, "end") << train_log;
    const std::string after = ReadFile(trace_of(r));
    EXPECT_EQ(after.compare(0, before[r].size(), before[r]), 0)
        << "the first " << before[r].size() << " bytes changed after the kill";
    // The victim finished step D only with every survivor's gradients of step D, so each
    // survivor had made its records of steps 0..D-1 before the kill (buffered or not).
    for (int64_t step = 0; step < dead.last_step_done; ++step)
      EXPECT_EQ(s.steps_done.count(step), 1u) << "step " << step << " record lost";
  }

  const std::vector<trace::JsonValue> findings = CompareRun(run);
  const trace::JsonValue* died = nullptr;
  for (const trace::JsonValue& f : findings) {
    if (Str(f, "kind") == "rank-died" && Str(f, "severity") == "error") {
      EXPECT_EQ(Ranks(f), std::vector<int64_t>{plan.rank}) << f.ToJson();
      died = &f;
    }
    if (Str(f, "kind") == "trace-corrupt") {
      EXPECT_EQ(Ranks(f), std::vector<int64_t>{plan.rank}) << "a survivor's trace: " << f.ToJson();
      EXPECT_EQ(Str(f, "severity"), "info") << f.ToJson();
    }
  }
  ASSERT_NE(died, nullptr) << "no rank-died error";
  std::printf("rank-died: %s\n", Str(*died, "summary").c_str());
  // Exactly where its trace stops: the step it had begun, and the last one it finished.
  EXPECT_EQ(Int(*died, "step"), dead.last_step_begun) << died->ToJson();
  const trace::JsonValue& evidence = trainer_test::Field(*died, "evidence");
  EXPECT_EQ(Int(evidence, "last_step_begun"), dead.last_step_begun) << died->ToJson();
  EXPECT_EQ(Int(evidence, "last_step_done"), dead.last_step_done) << died->ToJson();
  EXPECT_EQ(Int(evidence, "pid"), victim.pid) << died->ToJson();
}

INSTANTIATE_TEST_SUITE_P(Seeds, KilledRank, ::testing::Values(1u, 2u, 3u));

}  // namespace
}  // namespace dsdiag::robustness_test
