// StopSignals: what a rank leaves behind when SIGTERM / SIGINT / SIGUSR1 arrive, and that
// what would have happened without dsdiag still happens (the default action ends the
// process by the signal, a previous handler runs, an ignored signal stays ignored). Each
// case runs in a forked child, whose signal dispositions are its own.
#include "probes/stop_signals.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include "probes/collective_probe.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "trace/run_files.h"

namespace dsdiag::probes {
namespace {

using test_support::Contains;
using test_support::ReadFile;
using test_support::SplitLines;

// The dispositions each case starts from, whatever the test runner inherited: a shell's
// background job (`nohup ./scripts/test &`) starts with SIGINT ignored, a runner may block
// signals. Cases that want another disposition set it themselves.
void ResetStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int signo : {SIGTERM, SIGINT, SIGUSR1}) {
    signal(signo, SIG_DFL);
    sigaddset(&stop_signals, signo);
  }
  sigprocmask(SIG_UNBLOCK, &stop_signals, nullptr);
}

// Runs `body` in a child with a session on `dir` (rank 0) and a flight recorder holding one
// pending allreduce, the stop signals at their defaults; returns the child's wait status.
int RunChild(const std::string& dir, const std::function<int(Session*, FlightRecorder*)>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    ResetStopSignals();
    SessionConfig config;
    config.run_dir = dir;
    config.header.run_id = "stop-signals-test";
    std::string error;
    std::unique_ptr<Session> session = Session::Start(config, &error);
    if (!session) _exit(90);
    FlightRecorder recorder(config.header, dir);
    CollectiveProbe collectives(session.get(), &recorder);
    session->BeginStep(3, 0);
    recorder.Issue(0, 7, {"allreduce", "f32", 16, 64, "grad-bucket-0"}, 3, Phase::kSync);
    _exit(body(session.get(), &recorder));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

// Waits (bounded) until `path` exists.
bool AppearsWithin(const std::string& path, std::chrono::milliseconds bound) {
  const auto until = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < until) {
    if (std::filesystem::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string LastLine(const std::string& path) {
  const auto lines = SplitLines(ReadFile(path));
  return lines.empty() ? "" : lines.back();
}

TEST(StopSignalsTest, SigtermWritesTheDumpAndEndRecordThenEndsTheProcessByTheSignal) {
  test_support::TempDir dir("stop-signals");
  const int status = RunChild(dir.path(), [](Session* session, FlightRecorder* recorder) {
    auto handlers = StopSignals::Install(session, recorder);
    if (!handlers || !handlers->handles(SIGTERM) || !handlers->handles(SIGINT)) return 91;
    kill(getpid(), SIGTERM);
    std::this_thread::sleep_for(std::chrono::seconds(10));
    return 92;  // the signal should have ended the process by now
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  const std::string trace = ReadFile(dir.path() + "/" + trace::RankTraceFileName(0));
  EXPECT_TRUE(Contains(trace, R"("type":"signal")")) << trace;
  const std::string end = LastLine(dir.path() + "/" + trace::RankTraceFileName(0));
  EXPECT_TRUE(Contains(end, R"("type":"end")")) << end;
  EXPECT_TRUE(Contains(end, R"("reason":"signal")")) << end;
  EXPECT_TRUE(Contains(end, R"("status":143)")) << end;
  const std::string dump = ReadFile(dir.path() + "/" + trace::FlightDumpFileName(0));
  EXPECT_TRUE(Contains(dump, R"("reason":"SIGTERM")")) << dump;
  EXPECT_TRUE(Contains(dump, R"("seq":7)")) << dump;  // the pending collective
}

std::atomic<int> g_previous_handler_calls{0};
void PreviousHandler(int) { g_previous_handler_calls.fetch_add(1); }

TEST(StopSignalsTest, APreviousHandlerStillRunsAndTheLoopWritesItsOwnEnd) {
  test_support::TempDir dir("stop-signals");
  const std::string dump_path = dir.path() + "/" + trace::FlightDumpFileName(0);
  const int status = RunChild(dir.path(), [&](Session* session, FlightRecorder* recorder) {
    signal(SIGINT, PreviousHandler);
    auto handlers = StopSignals::Install(session, recorder);
    if (!handlers) return 91;
    kill(getpid(), SIGINT);
    if (!AppearsWithin(dump_path, std::chrono::seconds(5))) return 93;
    if (g_previous_handler_calls.load() != 1) return 94;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the signal record
    session->End("ok", 0);  // the loop goes on and ends as it decides
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const std::string trace = ReadFile(dir.path() + "/" + trace::RankTraceFileName(0));
  EXPECT_TRUE(Contains(trace, R"("signal":"SIGINT")")) << trace;
  EXPECT_TRUE(
      Contains(LastLine(dir.path() + "/" + trace::RankTraceFileName(0)), R"("reason":"ok")"));
  EXPECT_TRUE(Contains(ReadFile(dump_path), R"("reason":"SIGINT")"));
}

TEST(StopSignalsTest, AnIgnoredSignalStaysIgnoredAndSigusr1OnlyDumps) {
  test_support::TempDir dir("stop-signals");
  const std::string dump_path = dir.path() + "/" + trace::FlightDumpFileName(0);
  const int status = RunChild(dir.path(), [&](Session* session, FlightRecorder* recorder) {
    signal(SIGINT, SIG_IGN);
    auto handlers = StopSignals::Install(session, recorder);
    if (!handlers || handlers->handles(SIGINT) || !handlers->handles(SIGUSR1)) return 91;
    if (StopSignals::Install(session, recorder)) return 95;  // one per process
    kill(getpid(), SIGINT);
    kill(getpid(), SIGUSR1);
    if (!AppearsWithin(dump_path, std::chrono::seconds(5))) return 93;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    session->End("ok", 0);
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const std::string trace = ReadFile(dir.path() + "/" + trace::RankTraceFileName(0));
  EXPECT_FALSE(Contains(trace, R"("type":"signal")")) << trace;
  EXPECT_TRUE(Contains(ReadFile(dump_path), R"("reason":"SIGUSR1")"));
}

TEST(StopSignalsTest, ProbesOffInstallNothing) {
  Session* off = nullptr;
  SessionConfig config;
  config.mode = Mode::kOff;
  std::string error;
  std::unique_ptr<Session> session = Session::Start(config, &error);
  ASSERT_TRUE(session);
  off = session.get();
  auto handlers = StopSignals::Install(off, nullptr);
  ASSERT_TRUE(handlers);
  EXPECT_FALSE(handlers->handles(SIGTERM));
}

}  // namespace
}  // namespace dsdiag::probes
