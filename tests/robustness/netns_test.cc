// Two "hosts" (network namespaces joined by a veth pair, each with its own address) run one
// rank each, rendezvousing through MASTER_ADDR as a multi-node job does. Mid-run, host B's
// link goes down: both ranks must end on their own soon after the collective timeout (rank
// 1 gives up publishing its error to the store on rank 0's host after a couple of seconds,
// not the store's 60 s), leave their flight dumps, and `dsdiag compare` must name rank 1,
// the one that could not reach the store while rank 0 could, as the hang's only culprit:
// one error, the ranks' own timeouts its follow-ons.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/robustness/robustness_util.h"
#include "tests/trainer/findings_util.h"
#include "tests/trainer/trainer_test_util.h"
#include "trace/run_files.h"

namespace dsdiag::robustness_test {
namespace {

using trainer_test::CompareRun;
using trainer_test::ReadFile;
using trainer_test::Str;
using trainer_test::TempDir;

constexpr int kSteps = 200;
constexpr int kTimeoutS = 5;
constexpr int64_t kCutAfterStep = 5;
constexpr const char* kPort = "29517";  // each namespace has its own, empty port space
// How long after the cut both ranks must have ended: the timeout and a bounded publish take
// seconds; this only catches a rank that waits out the store's 60 s connect timeout, with
// a wide margin for a loaded machine (it asserts that the run ended, not how fast).
constexpr int kEndWithinS = kTimeoutS + 40;

// `ip netns exec <ns> env RANK=... dsdiag train ...`: one rank of a two-host job.
pid_t StartRank(const NetnsPair& hosts, int rank, const std::string& run, const std::string& log) {
  return StartCommand({"ip",
                       "netns",
                       "exec",
                       hosts.ns(rank),
                       "env",
                       "RANK=" + std::to_string(rank),
                       "WORLD_SIZE=2",
                       "LOCAL_RANK=0",
                       "MASTER_ADDR=" + hosts.address(0),
                       std::string("MASTER_PORT=") + kPort,
                       std::string("GLOO_SOCKET_IFNAME=") + NetnsPair::kIfName,
                       "OMP_NUM_THREADS=1",
                       DSDIAG_BINARY,
                       "train",
                       "--steps",
                       std::to_string(kSteps),
                       "--timeout",
                       std::to_string(kTimeoutS),
                       "--out",
                       run},
                      log);
}

TEST(SeveralHosts, CutLinkEndsBothRanksAndCompareFindsTheHang) {
  if (!IsRoot()) GTEST_SKIP() << "network namespaces need root (run the test as root)";
  NetnsPair::RemoveLeftovers();
  NetnsPair hosts;
  if (!hosts.ok()) GTEST_SKIP() << "cannot make network namespaces here: " << hosts.error();
  TempDir dir("netns");
  const std::string run = dir / "run";
  std::filesystem::create_directories(run);
  const pid_t rank0 = StartRank(hosts, 0, run, dir / "rank0.log");
  const pid_t rank1 = StartRank(hosts, 1, run, dir / "rank1.log");
  const std::string trace1 = run + "/" + trace::RankTraceFileName(1);

  const bool reached = WaitForStep(trace1, kCutAfterStep, rank1);
  EXPECT_TRUE(reached) << "rank 1 never showed step " << kCutAfterStep << "\n"
                       << ReadFile(dir / "rank0.log") << ReadFile(dir / "rank1.log");
  if (reached) {
    EXPECT_TRUE(hosts.CutLink(1));
  }
  const auto cut_at = std::chrono::steady_clock::now();
  // The watchdog and the process group's timeout end both ranks, well within kEndWithinS.
  const int status0 = trainer_test::WaitDsdiag(rank0, kEndWithinS);
  const auto waited =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - cut_at)
          .count();
  const int status1 =
      trainer_test::WaitDsdiag(rank1, std::max<int>(1, kEndWithinS - static_cast<int>(waited)));
  const double ended_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - cut_at).count();
  std::printf("both ranks ended %.1f s after the cut (timeout %d s)\n", ended_s, kTimeoutS);
  const std::string logs =
      "rank 0:\n" + ReadFile(dir / "rank0.log") + "rank 1:\n" + ReadFile(dir / "rank1.log");
  ASSERT_TRUE(reached);
  EXPECT_NE(status0, 0) << logs;
  EXPECT_NE(status1, 0) << logs;
  // Ended on their own within kEndWithinS of the cut, not killed by the limit.
  EXPECT_GT(status0, 0) << logs;
  EXPECT_GT(status1, 0) << "rank 1 did not end within " << kEndWithinS << " s of the cut\n" << logs;

  int64_t last_done[2] = {-1, -1};
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const TraceSummary s = ReadSummary(run + "/" + trace::RankTraceFileName(r));
    ASSERT_TRUE(s.opened);
    EXPECT_EQ(s.issue_count, 0) << (s.issues.empty() ? "" : s.issues.front());
    EXPECT_FALSE(s.end_reason.empty()) << "no end record";
    EXPECT_GE(s.last_step_done, kCutAfterStep - 1);
    EXPECT_LT(s.last_step_done, kSteps - 1);
    last_done[r] = s.last_step_done;
    EXPECT_TRUE(std::filesystem::exists(run + "/" + trace::FlightDumpFileName(r)))
        << "no flight dump\n"
        << logs;
  }

  // Rank 1 wrote its timeout, then that it could not reach the store, then its end.
  const std::string text1 = ReadFile(run + "/" + trace::RankTraceFileName(1));
  const size_t unreachable = text1.find("\"store_unreachable\":true");
  EXPECT_NE(unreachable, std::string::npos)
      << text1.substr(text1.size() > 2000 ? text1.size() - 2000 : 0);
  EXPECT_LT(unreachable, text1.find("{\"type\":\"end\""))
      << "the store record must come before the end";
  EXPECT_EQ(ReadFile(run + "/" + trace::RankTraceFileName(0)).find("store_unreachable"),
            std::string::npos);

  const std::vector<trace::JsonValue> findings = CompareRun(run);
  std::string all;
  for (const trace::JsonValue& f : findings) all += f.ToJson() + "\n";
  std::printf("compare:\n%s", all.c_str());
  const trace::JsonValue* hang = trainer_test::FindFinding(findings, "hang", "error");
  ASSERT_NE(hang, nullptr) << all;
  const trace::JsonValue& evidence = trainer_test::Field(*hang, "evidence");
  // It hung in the step after the last one the rank behind finished. Usually both ranks sit in
  // the same collective when the link goes; but the cut can fall mid-allreduce after one rank's
  // half of the ring got through, and that rank finishes its step and waits in the next one's
  // first collective. The hang is the earlier collective, in the step of the rank behind.
  EXPECT_EQ(trainer_test::Int(evidence, "pg"), 0) << all;
  EXPECT_EQ(trainer_test::Int(evidence, "step"), std::min(last_done[0], last_done[1]) + 1) << all;
  // Rank 1, whose host lost its link, is the one culprit: it could not reach the store on
  // rank 0's host after its timeout, while rank 0 could.
  EXPECT_EQ(trainer_test::Ranks(*hang), std::vector<int64_t>{1}) << all;
  EXPECT_EQ(trainer_test::Int(evidence, "culprit_count"), 1) << all;
  EXPECT_EQ(trainer_test::Ranks(trainer_test::Field(evidence, "cut_off")), std::vector<int64_t>{1})
      << all;
  EXPECT_NE(Str(*hang, "summary").find("could not reach the store at " + hosts.address(0)),
            std::string::npos)
      << all;
  // One error on screen: the hang; both ranks' own timeouts are its follow-ons.
  int errors = 0;
  for (const trace::JsonValue& f : findings)
    if (Str(f, "severity") == "error") ++errors;
  EXPECT_EQ(errors, 1) << all;
}

}  // namespace
}  // namespace dsdiag::robustness_test
