// FatalSignals: a rank that dies by SIGSEGV, SIGBUS or abort() keeps what it recorded — the
// held collectives, the `end` record saying how it died, the flight dump — and dies by the
// same signal as it would have, a handler that was there before still run.
#include "probes/fatal_signals.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "probes/collective_probe.h"
#include "probes/terminate_recorder.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "trace/run_files.h"

// Under ASan or TSan (scripts/sanitize) the sanitizer's own handler for SIGSEGV, SIGBUS and
// SIGFPE would report the fault and exit before dsdiag's: these tests are about dsdiag's
// handler and the signal's own death, so the sanitizers leave those signals alone in this
// binary (their options from the environment still apply on top). Unused without them.
extern "C" const char* __asan_default_options() {
  return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0";
}
extern "C" const char* __tsan_default_options() {
  return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0";
}

namespace dsdiag::probes {
namespace {

using test_support::Contains;
using test_support::ReadFile;
using test_support::SplitLines;

// An address the compiler cannot prove null: it emits the store, not a trap instruction.
volatile uintptr_t g_bad_address = 0x10;

[[noreturn]] void ThrowFromHere() { throw std::runtime_error("Connection reset by peer"); }

void WriteToAnUnmappedAddress() { *reinterpret_cast<volatile int*>(g_bad_address) = 1; }

// A mapping past the end of its file: touching it is SIGBUS (BUS_ADRERR), as when a
// shared-memory file is truncated under a DataLoader's tensors.
void ReadBeyondAMappedFile(const std::string& dir) {
  const std::string path = dir + "/empty";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  void* page = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0);
  if (page == MAP_FAILED) _exit(93);
  (void)*static_cast<volatile const char*>(page);
}

volatile int g_depth_limit = 1 << 30;  // never reached: the stack runs out first

int Recurse(int depth) {
  volatile char frame[512];
  frame[0] = static_cast<char>(depth);
  if (depth >= g_depth_limit) return frame[0];
  return Recurse(depth + 1) + frame[0];  // not a tail call: every level keeps its frame
}

// A handler installed before FatalSignals, as Python's faulthandler would be: it leaves
// a mark, then lets the signal end the process (the default action, delivered again).
std::string g_chained_mark;
void PreviousHandler(int signo, siginfo_t* info, void*) {
  const int fd = open(g_chained_mark.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd >= 0) {
    if (write(fd, "chained", 7) != 7) _exit(94);
    close(fd);
  }
  signal(signo, SIG_DFL);
  if (info->si_code <= 0) raise(signo);  // a fault re-runs its instruction by itself
}

struct ChildOptions {
  std::function<void(Session*)> before;  // on the session, before the fault
  // Runs `fault` from inside a flight dump's stack provider: the recorder's dump lock is
  // held by the faulting thread.
  bool fault_inside_a_dump = false;
  int previous_handler_for = 0;  // install PreviousHandler for this signal first
  bool record_terminate = false;
};

struct Death {
  int status = 0;
  std::string trace;
  std::string dump;  // "" when none was written
  std::string end;   // the trace's last line
};

// Forks a child that starts a light session with its FatalSignals (and, if asked, a
// previous handler and a TerminateRecorder), begins step 3 with one collective held, enters
// the forward phase and runs `fault`. Returns how it died and what it left.
Death DieInAChild(const test_support::TempDir& dir, const std::function<void()>& fault,
                  const ChildOptions& options = {}) {
  g_chained_mark = dir.path() + "/chained";
  const pid_t pid = fork();
  if (pid == 0) {
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);  // the test's deaths leave no core files behind
    if (options.previous_handler_for) {
      struct sigaction previous = {};
      previous.sa_sigaction = &PreviousHandler;
      previous.sa_flags = SA_SIGINFO;
      sigemptyset(&previous.sa_mask);
      sigaction(options.previous_handler_for, &previous, nullptr);
    }
    SessionConfig config;
    config.mode = Mode::kLight;
    config.run_dir = dir.path();
    config.header.run_id = "fatal-signal-test";
    std::string error;
    std::unique_ptr<Session> session = Session::Start(config, &error);
    FlightRecorder recorder(config.header, dir.path());
    CollectiveProbe collectives(session.get(), &recorder);
    std::unique_ptr<TerminateRecorder> on_terminate;
    if (options.record_terminate)
      on_terminate = TerminateRecorder::Install(session.get(), &recorder);
    auto fatal = FatalSignals::Install(session.get(), &recorder);
    if (!fatal || !fatal->installed() || !fatal->handles(SIGSEGV)) _exit(91);
    if (FatalSignals::Install(session.get(), &recorder)) _exit(92);  // one per process
    session->BeginStep(3, 0);
    {
      CollectiveScope c(&collectives, 0, "allreduce", "f32", 4, 16, "grad-bucket-0");
      c.Started();
    }  // light mode: held until the step ends
    if (options.before) options.before(session.get());
    PhaseScope forward(session.get(), Phase::kForward);
    if (options.fault_inside_a_dump) {
      recorder.SetStackProvider([&fault] {
        fault();
        return std::vector<trace::ThreadStack>();
      });
      std::string ignored;
      recorder.Dump("SIGUSR1", 3, Phase::kForward, &ignored);
    }
    fault();
    _exit(95);  // the fault did not end the child
  }
  Death death;
  waitpid(pid, &death.status, 0);
  death.trace = ReadFile(dir.path() + "/" + trace::RankTraceFileName(0));
  const std::string dump_path = dir.path() + "/" + trace::FlightDumpFileName(0);
  if (std::filesystem::exists(dump_path)) death.dump = ReadFile(dump_path);
  const auto lines = SplitLines(death.trace);
  if (!lines.empty()) death.end = lines.back();
  return death;
}

void ExpectKilledBy(const Death& death, int signo) {
  ASSERT_TRUE(WIFSIGNALED(death.status)) << "exit " << WEXITSTATUS(death.status);
  EXPECT_EQ(WTERMSIG(death.status), signo);
}

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

TEST(FatalSignalsTest, ASegfaultWritesTheHeldRecordsTheEndAndTheDumpThenKillsAsBefore) {
  test_support::TempDir dir("fatal-segv");
  const Death death = DieInAChild(dir, WriteToAnUnmappedAddress);
  ExpectKilledBy(death, SIGSEGV);
  // The held collective is on disk, before the end.
  EXPECT_TRUE(Contains(death.trace, R"("type":"coll")")) << death.trace;
  EXPECT_TRUE(Contains(death.trace, "grad-bucket-0")) << death.trace;
  EXPECT_TRUE(Contains(death.end, R"("type":"end")")) << death.end;
  EXPECT_TRUE(Contains(death.end, R"("step":3)")) << death.end;
  EXPECT_TRUE(Contains(death.end, R"("reason":"signal")")) << death.end;
  EXPECT_TRUE(Contains(death.end, R"("status":139)")) << death.end;
  EXPECT_TRUE(Contains(death.end, R"("signal":"SIGSEGV")")) << death.end;
  EXPECT_TRUE(Contains(death.end, R"("origin":"fault")")) << death.end;
  EXPECT_TRUE(Contains(death.end, R"("code":"SEGV_MAPERR")")) << death.end;
  EXPECT_TRUE(Contains(death.end, R"("addr":"0x10")")) << death.end;
  EXPECT_TRUE(Contains(death.end, R"("pc":")")) << death.end;
  EXPECT_EQ(CountOf(death.trace, R"("type":"end")"), 1) << death.trace;
  EXPECT_TRUE(Contains(death.dump, R"("reason":"SIGSEGV")")) << death.dump;
  EXPECT_TRUE(Contains(death.dump, R"("phase":"forward")")) << death.dump;
  EXPECT_TRUE(Contains(death.dump, "grad-bucket-0")) << death.dump;
}

TEST(FatalSignalsTest, ABusErrorSaysSoWithItsAddress) {
  test_support::TempDir dir("fatal-bus");
  const std::string path = dir.path();
  const Death death = DieInAChild(dir, [path] { ReadBeyondAMappedFile(path); });
  ExpectKilledBy(death, SIGBUS);
  EXPECT_TRUE(Contains(death.trace, "grad-bucket-0")) << death.trace;
  EXPECT_TRUE(Contains(death.end, R"("status":135)")) << death.end;
  EXPECT_TRUE(Contains(death.end, R"("signal":"SIGBUS")")) << death.end;
  EXPECT_TRUE(Contains(death.end, R"("code":"BUS_ADRERR")")) << death.end;
  EXPECT_TRUE(Contains(death.end, R"("addr":"0x)")) << death.end;
  EXPECT_TRUE(Contains(death.dump, R"("reason":"SIGBUS")")) << death.dump;
}

TEST(FatalSignalsTest, AnAbortOutsideTerminateIsRaisedByTheProcessItself) {
  test_support::TempDir dir("fatal-abort");
  const Death death = DieInAChild(dir, [] { std::abort(); });
  ExpectKilledBy(death, SIGABRT);
  EXPECT_TRUE(Contains(death.trace, "grad-bucket-0")) << death.trace;
  EXPECT_TRUE(Contains(death.end, R"("reason":"signal")")) << death.end;
  EXPECT_TRUE(Contains(death.end, R"("status":134)")) << death.end;
  EXPECT_TRUE(Contains(death.end, R"("signal":"SIGABRT")")) << death.end;
  EXPECT_TRUE(Contains(death.end, R"("origin":"raise")")) << death.end;
  EXPECT_FALSE(Contains(death.end, R"("addr")")) << death.end;  // no fault, no address
  EXPECT_TRUE(Contains(death.dump, R"("reason":"SIGABRT")")) << death.dump;
}

TEST(FatalSignalsTest, AStackOverflowIsRecordedOnTheAlternateStack) {
  test_support::TempDir dir("fatal-overflow");
  const Death death = DieInAChild(dir, [] { (void)Recurse(0); });
  ExpectKilledBy(death, SIGSEGV);
  EXPECT_TRUE(Contains(death.end, R"("signal":"SIGSEGV")")) << death.end;
  EXPECT_TRUE(Contains(death.end, R"("origin":"fault")")) << death.end;
}

TEST(FatalSignalsTest, AHandlerThatWasThereBeforeStillRunsOnAFault) {
  test_support::TempDir dir("fatal-chain-segv");
  ChildOptions options;
  options.previous_handler_for = SIGSEGV;
  const Death death = DieInAChild(dir, WriteToAnUnmappedAddress, options);
  ExpectKilledBy(death, SIGSEGV);
  EXPECT_TRUE(Contains(death.end, R"("signal":"SIGSEGV")")) << death.end;
  EXPECT_EQ(ReadFile(dir.path() + "/chained"), "chained");
}

TEST(FatalSignalsTest, AHandlerThatWasThereBeforeStillRunsOnAnAbort) {
  test_support::TempDir dir("fatal-chain-abort");
  ChildOptions options;
  options.previous_handler_for = SIGABRT;
  const Death death = DieInAChild(
      dir, [] { std::abort(); }, options);
  ExpectKilledBy(death, SIGABRT);
  EXPECT_TRUE(Contains(death.end, R"("signal":"SIGABRT")")) << death.end;
  EXPECT_EQ(ReadFile(dir.path() + "/chained"), "chained");
}

TEST(FatalSignalsTest, TheAbortOfStdTerminateIsRecordedOnceByTheTerminateRecorder) {
  test_support::TempDir dir("fatal-terminate");
  ChildOptions options;
  options.record_terminate = true;
  const Death death = DieInAChild(
      dir, [] { [&]() noexcept { ThrowFromHere(); }(); }, options);
  ExpectKilledBy(death, SIGABRT);
  EXPECT_EQ(CountOf(death.trace, R"("type":"end")"), 1) << death.trace;
  EXPECT_TRUE(Contains(death.end, R"("reason":"error")")) << death.end;
  EXPECT_TRUE(Contains(death.end, "Connection reset by peer")) << death.end;
  EXPECT_TRUE(Contains(death.dump, R"("reason":"terminate")")) << death.dump;
}

TEST(FatalSignalsTest, AFaultAfterTheTraceEndedLeavesTheTraceAsItEnded) {
  test_support::TempDir dir("fatal-after-end");
  ChildOptions options;
  options.before = [](Session* s) { s->End("ok", 0); };
  const Death death = DieInAChild(dir, WriteToAnUnmappedAddress, options);
  ExpectKilledBy(death, SIGSEGV);
  EXPECT_EQ(CountOf(death.trace, R"("type":"end")"), 1) << death.trace;
  EXPECT_TRUE(Contains(death.end, R"("reason":"ok")")) << death.end;
  EXPECT_TRUE(death.dump.empty()) << death.dump;
}

// The writer thread blocks on a lock the faulting thread holds (the dump's): the end record,
// written first, is there, and the wait for the rest is bounded — the child dies by its
// signal instead of hanging (ctest's timeout would catch a hang).
TEST(FatalSignalsTest, ALockTheFaultingThreadHoldsBoundsTheWaitAndTheEndIsWrittenFirst) {
  test_support::TempDir dir("fatal-locked");
  ChildOptions options;
  options.fault_inside_a_dump = true;
  const Death death = DieInAChild(dir, WriteToAnUnmappedAddress, options);
  ExpectKilledBy(death, SIGSEGV);
  EXPECT_TRUE(Contains(death.trace, "grad-bucket-0")) << death.trace;
  EXPECT_TRUE(Contains(death.end, R"("signal":"SIGSEGV")")) << death.end;
  EXPECT_TRUE(death.dump.empty()) << death.dump;  // never written: its lock was held
}

TEST(FatalSignalsTest, AForkedWorkerThatFaultsLeavesItsParentsTraceAlone) {
  test_support::TempDir dir("fatal-fork");
  // The rank forks a worker (a DataLoader's) that inherits the handler and segfaults; the
  // rank itself then ends cleanly.
  const Death death = DieInAChild(dir, [] {
    const pid_t worker = fork();
    if (worker == 0) WriteToAnUnmappedAddress();
    int status = 0;
    waitpid(worker, &status, 0);
    _exit(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV ? 0 : 96);
  });
  ASSERT_TRUE(WIFEXITED(death.status));
  EXPECT_EQ(WEXITSTATUS(death.status), 0);
  EXPECT_FALSE(Contains(death.trace, "SIGSEGV")) << death.trace;
  EXPECT_TRUE(death.dump.empty()) << death.dump;
}

}  // namespace
}  // namespace dsdiag::probes
