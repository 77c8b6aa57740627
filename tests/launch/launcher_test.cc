// The local launcher, with launch_helper standing in for the trainer: ranks that succeed,
// fail, get killed, ignore SIGTERM or leave children behind; a launcher that is told to stop
// or is killed. After each, no rank (nor anything it started) may still exist.
//
// No assertion depends on timing: "stopped by SIGTERM, not SIGKILL" is read from how each
// rank died, with a grace period far longer than any test may take.
#include "launch/launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "launch/rendezvous.h"
#include "trace/run_id.h"
#include "trace/signal_name.h"

namespace dsdiag::launch {
namespace {

namespace fs = std::filesystem;

constexpr auto kLongGrace = std::chrono::milliseconds(120000);

class LauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dsdiag-launch-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // Orphans (a killed launcher's ranks, a rank's children) are re-parented to this test
    // process, so that the tests can reap them and see that they are gone.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  void TearDown() override { fs::remove_all(dir_); }

  LaunchSpec Spec(int nproc, std::vector<std::string> behaviours) const {
    LaunchSpec spec;
    spec.executable = LAUNCH_HELPER;
    spec.args = std::move(behaviours);
    spec.nproc = nproc;
    spec.run_id = "test-run";
    spec.grace = kLongGrace;
    spec.env = {{"HELPER_DIR", dir_}};
    return spec;
  }

  std::string Read(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // Waits (bounded) until every rank has written ready-R; returns their pids.
  std::vector<pid_t> WaitForReady(int nproc) const {
    std::vector<pid_t> pids;
    for (int attempt = 0; attempt < 6000 && static_cast<int>(pids.size()) < nproc; ++attempt) {
      pids.clear();
      for (int r = 0; r < nproc; ++r) {
        const std::string pid = Read("ready-" + std::to_string(r));
        if (pid.empty()) break;
        pids.push_back(std::stoi(pid));
      }
      if (static_cast<int>(pids.size()) < nproc)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return pids;
  }

  std::string dir_;
};

// The pid no longer exists. Launch reaps its ranks, so a rank pid must be gone for good.
bool Gone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

// For orphans re-parented to this process: reaps `pid`, waiting (bounded) for it to die.
// False when it is still running after the bound; it is then killed so that no test leaks.
bool ReapOrphan(pid_t pid) {
  for (int attempt = 0; attempt < 3000; ++attempt) {
    int status = 0;
    const pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid || (got < 0 && errno == ECHILD && Gone(pid))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return false;
}

void ExpectAllGone(const LaunchReport& report) {
  for (const RankOutcome& r : report.ranks) {
    ASSERT_GT(r.pid, 0);
    EXPECT_TRUE(Gone(r.pid)) << "rank " << r.rank << " pid " << r.pid << " still exists";
  }
}

TEST_F(LauncherTest, AllRanksSucceed) {
  LaunchReport report;
  EXPECT_EQ(Launch(Spec(3, {"ok"}), &report), 0);
  EXPECT_EQ(report.exit_status, 0);
  ASSERT_EQ(report.ranks.size(), 3u);
  for (const RankOutcome& r : report.ranks) {
    EXPECT_TRUE(r.ok()) << "rank " << r.rank;
    EXPECT_EQ(r.signal_sent, 0);
  }
  EXPECT_FALSE(report.first_failure.has_value());
  EXPECT_TRUE(report.stop_cause.empty());
  EXPECT_TRUE(report.FailureLines().empty());
  ExpectAllGone(report);
}

TEST_F(LauncherTest, RanksGetTheirEnvironmentAndArgs) {
  unsetenv("OMP_NUM_THREADS");
  LaunchSpec spec = Spec(2, {"env", "env"});
  spec.run_dir = dir_ + "/runs/a/b";
  spec.env.emplace_back("HELPER_EXTRA", "x");
  LaunchReport report;
  ASSERT_EQ(Launch(spec, &report), 0);
  EXPECT_TRUE(fs::is_directory(dir_ + "/runs/a/b"));
  EXPECT_GT(report.master_port, 0);
  EXPECT_LT(report.master_port, 65536);
  for (int r = 0; r < 2; ++r) {
    const std::string expected =
        "RANK=" + std::to_string(r) + "\nWORLD_SIZE=2\nLOCAL_RANK=" + std::to_string(r) +
        "\nLOCAL_WORLD_SIZE=2\nMASTER_ADDR=127.0.0.1\nMASTER_PORT=" +
        std::to_string(report.master_port) +
        "\nDSDIAG_RUN_ID=test-run\nOMP_NUM_THREADS=1\nHELPER_EXTRA=x\narg=env\narg=env\n";
    EXPECT_EQ(Read("env-" + std::to_string(r)), expected);
  }
}

// `dsdiag run` without --nproc: one process that numbers its ranks itself.
TEST_F(LauncherTest, AProcessThatStartsItsOwnRanksGetsNoRankVariables) {
  unsetenv("OMP_NUM_THREADS");
  LaunchSpec spec = Spec(1, {"env"});
  spec.assign_ranks = false;
  LaunchReport report;
  ASSERT_EQ(Launch(spec, &report), 0);
  EXPECT_EQ(Read("env-0"),
            "RANK=<unset>\nWORLD_SIZE=<unset>\nLOCAL_RANK=<unset>\nLOCAL_WORLD_SIZE=<unset>\n"
            "MASTER_ADDR=<unset>\nMASTER_PORT=<unset>\nDSDIAG_RUN_ID=test-run\n"
            "OMP_NUM_THREADS=1\nHELPER_EXTRA=<unset>\narg=env\n");
}

// A command name is looked up in PATH, as a shell does; argv[0] stays the name.
TEST_F(LauncherTest, ACommandNameIsFoundInPath) {
  const std::string helper_dir = fs::path(LAUNCH_HELPER).parent_path().string();
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", (helper_dir + ":" + old_path).c_str(), 1);
  LaunchSpec spec = Spec(2, {"ok"});
  spec.executable = fs::path(LAUNCH_HELPER).filename().string();
  LaunchReport report;
  const int status = Launch(spec, &report);
  setenv("PATH", old_path.c_str(), 1);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(ResolveExecutable("launch_helper_that_does_not_exist"), std::nullopt);
  EXPECT_EQ(ResolveExecutable("/bin/sh"), "/bin/sh");
  spec.executable = "launch_helper_that_does_not_exist";
  try {
    Launch(spec, &report);
    ADD_FAILURE() << "a missing command launched";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("launch_helper_that_does_not_exist: command not found"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(LauncherTest, KeepsTheUsersOmpNumThreads) {
  setenv("OMP_NUM_THREADS", "3", 1);
  LaunchReport report;
  ASSERT_EQ(Launch(Spec(1, {"env"}), &report), 0);
  unsetenv("OMP_NUM_THREADS");
  EXPECT_NE(Read("env-0").find("OMP_NUM_THREADS=3\n"), std::string::npos) << Read("env-0");
}

TEST_F(LauncherTest, MakesARunIdWhenNoneIsGiven) {
  LaunchSpec spec = Spec(1, {"env"});
  spec.run_id.clear();
  LaunchReport report;
  ASSERT_EQ(Launch(spec, &report), 0);
  EXPECT_EQ(report.run_id.size(), std::string("20261130-081500-4f2a9c1e").size());
  EXPECT_NE(Read("env-0").find("DSDIAG_RUN_ID=" + report.run_id + "\n"), std::string::npos);
}

TEST_F(LauncherTest, OneRankFailsTheOthersAreStoppedWithSigterm) {
  LaunchReport report;
  EXPECT_EQ(Launch(Spec(3, {"sleep", "exit=3", "sleep"}), &report), 3);
  ASSERT_EQ(report.first_failure, 1);
  EXPECT_EQ(report.stop_cause, "rank 1 failed");
  EXPECT_EQ(report.launcher_signal, 0);
  const RankOutcome& failed = report.ranks[1];
  EXPECT_TRUE(failed.exited);
  EXPECT_EQ(failed.exit_status, 3);
  EXPECT_EQ(failed.signal_sent, 0);
  for (int r : {0, 2}) {
    // Stopped by the SIGTERM; a SIGKILL here would mean the launcher waited out the grace.
    EXPECT_EQ(report.ranks[r].signal_sent, SIGTERM) << "rank " << r;
    EXPECT_FALSE(report.ranks[r].exited);
    EXPECT_EQ(report.ranks[r].term_signal, SIGTERM) << "rank " << r;
  }
  const std::vector<std::string> lines = report.FailureLines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "rank 1 (pid " + std::to_string(failed.pid) + ") exited with status 3");
  EXPECT_EQ(lines[1], "rank 0 (pid " + std::to_string(report.ranks[0].pid) +
                          ") was stopped by the launcher (SIGTERM) after rank 1 failed");
  EXPECT_EQ(lines[2], "rank 2 (pid " + std::to_string(report.ranks[2].pid) +
                          ") was stopped by the launcher (SIGTERM) after rank 1 failed");
  ExpectAllGone(report);
}

TEST_F(LauncherTest, RankKilledBySignalIsNamed) {
  LaunchReport report;
  EXPECT_EQ(Launch(Spec(2, {"sleep", "sigkill"}), &report), 128 + SIGKILL);
  ASSERT_EQ(report.first_failure, 1);
  const std::vector<std::string> lines = report.FailureLines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "rank 1 (pid " + std::to_string(report.ranks[1].pid) + ") was killed by SIGKILL");
  ExpectAllGone(report);
}

// A rank that the SIGTERM did not end: another signal did first. The line says which, so
// that a rank lost without a trace (SIGPIPE from a dead peer) does not pass for a stopped one.
TEST_F(LauncherTest, RankDyingOfAnotherSignalAfterSigtermSaysWhich) {
  LaunchReport report;
  EXPECT_EQ(Launch(Spec(2, {"term-pipe", "exit=3"}), &report), 3);
  ASSERT_EQ(report.first_failure, 1);
  EXPECT_EQ(report.ranks[0].signal_sent, SIGTERM);
  EXPECT_EQ(report.ranks[0].term_signal, SIGPIPE);
  const std::vector<std::string> lines = report.FailureLines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "rank 0 (pid " + std::to_string(report.ranks[0].pid) +
                          ") was stopped by the launcher (SIGTERM) after rank 1 failed, but "
                          "died of SIGPIPE");
  ExpectAllGone(report);
}

TEST_F(LauncherTest, RankIgnoringSigtermIsKilledAfterTheGrace) {
  LaunchSpec spec = Spec(2, {"ignore-term", "exit=2"});
  spec.grace = std::chrono::milliseconds(100);
  LaunchReport report;
  EXPECT_EQ(Launch(spec, &report), 2);
  ASSERT_EQ(report.first_failure, 1);
  EXPECT_EQ(report.ranks[0].signal_sent, SIGKILL);
  EXPECT_EQ(report.ranks[0].term_signal, SIGKILL);
  const std::vector<std::string> lines = report.FailureLines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "rank 0 (pid " + std::to_string(report.ranks[0].pid) +
                          ") was killed by the launcher (SIGKILL, it outlived the SIGTERM "
                          "grace) after rank 1 failed");
  ExpectAllGone(report);
}

TEST_F(LauncherTest, LogsWhyItStopsTheRanks) {
  LaunchSpec spec = Spec(2, {"sleep", "exit=1"});
  std::ostringstream log;
  spec.log = &log;
  Launch(spec, nullptr);
  EXPECT_NE(log.str().find("dsdiag train: rank 1 failed; stopping 1 rank (SIGTERM, then SIGKILL "
                           "after 120.0 s)"),
            std::string::npos)
      << log.str();
}

// Runs Launch in a forked process (it installs process-wide signal handlers) and returns
// that process's pid; its exit status is Launch's. Its log and then its failure lines go to
// `log_path`.
pid_t ForkLauncher(LaunchSpec spec, const std::string& log_path) {
  const pid_t pid = fork();
  if (pid == 0) {
    // Run as from a terminal even when this test runs in a background job (SIGINT ignored,
    // which Launch would keep ignoring).
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    int status = 99;
    std::ofstream log(log_path);
    spec.log = &log;
    try {
      LaunchReport report;
      status = Launch(spec, &report);
      for (const std::string& line : report.FailureLines()) log << line << "\n";
    } catch (...) {
    }
    log.close();
    _exit(status);
  }
  return pid;
}

TEST_F(LauncherTest, SigtermToTheLauncherStopsEveryRank) {
  const pid_t launcher = ForkLauncher(Spec(3, {"sleep"}), dir_ + "/log");
  ASSERT_GT(launcher, 0);
  const std::vector<pid_t> ranks = WaitForReady(3);
  ASSERT_EQ(ranks.size(), 3u) << "the ranks did not start";
  ASSERT_EQ(kill(launcher, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(launcher, &status, 0), launcher);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  for (pid_t pid : ranks) EXPECT_TRUE(Gone(pid)) << "rank pid " << pid << " survived";
  EXPECT_NE(Read("log").find("rank 2 (pid " + std::to_string(ranks[2]) +
                             ") was stopped by the launcher (SIGTERM) after the launcher "
                             "received SIGTERM\n"),
            std::string::npos)
      << Read("log");
}

TEST_F(LauncherTest, SecondSignalSkipsTheGrace) {
  // The ranks ignore SIGTERM and the grace is ten minutes: unless the second signal cuts
  // the grace short, this test runs into the ctest timeout.
  LaunchSpec spec = Spec(2, {"ignore-term"});
  spec.grace = std::chrono::minutes(10);
  const pid_t launcher = ForkLauncher(spec, dir_ + "/log");
  ASSERT_GT(launcher, 0);
  const std::vector<pid_t> ranks = WaitForReady(2);
  ASSERT_EQ(ranks.size(), 2u) << "the ranks did not start";
  ASSERT_EQ(kill(launcher, SIGINT), 0);
  // Two signals sent back to back may merge into one; send the second once the launcher
  // says it is stopping the ranks.
  for (int attempt = 0; attempt < 3000 && Read("log").find("stopping") == std::string::npos;
       ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(kill(launcher, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(launcher, &status, 0), launcher);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);  // the signal that started the stop
  for (pid_t pid : ranks) EXPECT_TRUE(Gone(pid)) << "rank pid " << pid << " survived";
  EXPECT_NE(Read("log").find("was killed by the launcher (SIGKILL, it outlived the SIGTERM "
                             "grace) after the launcher received SIGINT"),
            std::string::npos)
      << Read("log");
}

TEST_F(LauncherTest, RanksDieWithAKilledLauncher) {
  const pid_t launcher = ForkLauncher(Spec(2, {"sleep"}), dir_ + "/log");
  ASSERT_GT(launcher, 0);
  const std::vector<pid_t> ranks = WaitForReady(2);
  ASSERT_EQ(ranks.size(), 2u) << "the ranks did not start";
  ASSERT_EQ(kill(launcher, SIGKILL), 0);
  ASSERT_EQ(waitpid(launcher, nullptr, 0), launcher);
  // The orphaned ranks come to this (subreaper) process; PR_SET_PDEATHSIG must kill them.
  for (pid_t pid : ranks) EXPECT_TRUE(ReapOrphan(pid)) << "rank pid " << pid << " survived";
}

TEST_F(LauncherTest, WhatARankStartedDiesWithIt) {
  LaunchReport report;
  ASSERT_EQ(Launch(Spec(2, {"grandchild"}), &report), 0);
  for (int r = 0; r < 2; ++r) {
    const std::string pid = Read("grandchild-" + std::to_string(r));
    ASSERT_FALSE(pid.empty());
    EXPECT_TRUE(ReapOrphan(std::stoi(pid))) << "rank " << r << "'s child survived";
  }
}

TEST_F(LauncherTest, SetupErrors) {
  LaunchSpec spec = Spec(1, {"ok"});
  spec.executable = dir_ + "/no-such-program";
  EXPECT_THROW(Launch(spec, nullptr), LaunchError);
  spec = Spec(0, {"ok"});
  EXPECT_THROW(Launch(spec, nullptr), LaunchError);
  spec = Spec(1, {"ok"});
  std::ofstream(dir_ + "/file") << "x";
  spec.run_dir = dir_ + "/file/sub";
  try {
    Launch(spec, nullptr);
    FAIL() << "expected LaunchError";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create run directory " + dir_ + "/file/sub"),
              std::string::npos)
        << e.what();
  }
}

TEST(LauncherUtilTest, PickFreePortAndNames) {
  const int port = PickFreePort();
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
  EXPECT_EQ(trace::SignalName(SIGKILL), "SIGKILL");
  EXPECT_EQ(trace::SignalName(SIGTERM), "SIGTERM");
  EXPECT_EQ(trace::SignalName(0), "signal 0");
  const std::string id = trace::MakeRunId();
  ASSERT_EQ(id.size(), 24u) << id;
  EXPECT_EQ(id[8], '-');
  EXPECT_EQ(id[15], '-');
  EXPECT_NE(trace::MakeRunId(), trace::MakeRunId());
}

}  // namespace
}  // namespace dsdiag::launch
