// TerminateRecorder: an exception nobody catches still leaves the rank's reason behind —
// the `error` record, the flight dump and the `end` record — before the process aborts.
#include "probes/terminate_recorder.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>

#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "trace/run_files.h"

namespace dsdiag::probes {
namespace {

using test_support::Contains;
using test_support::ReadFile;
using test_support::SplitLines;

[[noreturn]] void ThrowFromHere() { throw std::runtime_error("Connection reset by peer"); }

// Forks a child that starts a session and its TerminateRecorder in `dir`, runs `before` on
// the session, then throws out of a noexcept frame (std::terminate: the test body itself
// would catch it); waits for the child and expects it aborted. Returns its trace.
std::string TraceOfAChildThatTerminates(const test_support::TempDir& dir,
                                        const std::function<void(Session*)>& before,
                                        bool check_one_per_process = false) {
  const pid_t pid = fork();
  if (pid == 0) {
    SessionConfig config;
    config.run_dir = dir.path();
    config.header.run_id = "terminate-test";
    std::string error;
    std::unique_ptr<Session> session = Session::Start(config, &error);
    FlightRecorder recorder(config.header, dir.path());
    auto on_terminate = TerminateRecorder::Install(session.get(), &recorder);
    if (!on_terminate || !on_terminate->installed()) _exit(91);
    if (check_one_per_process && TerminateRecorder::Install(session.get(), &recorder)) _exit(92);
    before(session.get());
    [&]() noexcept { ThrowFromHere(); }();
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  return ReadFile(dir.path() + "/" + trace::RankTraceFileName(0));
}

TEST(TerminateRecorderTest, AnUncaughtExceptionIsRecordedThenTheProcessAborts) {
  test_support::TempDir dir("terminate");
  const std::string trace = TraceOfAChildThatTerminates(
      dir, [](Session* session) { session->BeginStep(4, 0); }, /*check_one_per_process=*/true);
  EXPECT_TRUE(Contains(trace, R"("type":"error")")) << trace;
  EXPECT_TRUE(Contains(trace, R"("where":"terminate")")) << trace;
  const std::string end = SplitLines(trace).back();
  EXPECT_TRUE(Contains(end, R"("reason":"error")")) << end;
  EXPECT_TRUE(Contains(end, R"("status":134)")) << end;
  EXPECT_TRUE(Contains(end, "Connection reset by peer")) << end;
  EXPECT_TRUE(Contains(ReadFile(dir.path() + "/" + trace::FlightDumpFileName(0)),
                       R"("reason":"terminate")"));
}

TEST(TerminateRecorderTest, AnAbortAfterTheTraceEndedLeavesTheTraceAsItEnded) {
  test_support::TempDir dir("terminate-after-end");
  const std::string trace =
      TraceOfAChildThatTerminates(dir, [](Session* session) { session->End("ok", 0); });
  EXPECT_FALSE(Contains(trace, R"("type":"error")")) << trace;
  EXPECT_TRUE(Contains(SplitLines(trace).back(), R"("reason":"ok")")) << trace;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/" + trace::FlightDumpFileName(0)));
}

}  // namespace
}  // namespace dsdiag::probes
