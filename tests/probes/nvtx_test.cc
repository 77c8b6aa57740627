// probes/nvtx.h under a real NVTX tool: the child program (nvtx_child.cc) runs with
// NVTX_INJECTION64_PATH pointing at a recording injection library
// (nvtx_recorder_injection.cc), and the recorded events must be exactly the ranges and
// marks the child made — in the "dsdiag" domain, nested, with registered names where the
// child used DSDIAG_NVTX_RANGE.
#include "probes/nvtx.h"

#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

extern char** environ;

namespace {

namespace nvtx = dsdiag::probes::nvtx;

// The RAII range can only live on the stack.
static_assert(!std::is_copy_constructible_v<nvtx::ScopedRange>);
static_assert(!std::is_move_constructible_v<nvtx::ScopedRange>);
static_assert(!std::is_copy_assignable_v<nvtx::ScopedRange>);
static_assert(std::is_nothrow_constructible_v<nvtx::ScopedRange, const char*>);
static_assert(std::is_nothrow_destructible_v<nvtx::ScopedRange>);

constexpr char kChild[] = DSDIAG_NVTX_CHILD;
constexpr char kChildOff[] = DSDIAG_NVTX_CHILD_OFF;
constexpr char kRecorder[] = DSDIAG_NVTX_RECORDER;  // empty without NVTX

std::string RecordPath(const std::string& test) {
  return ::testing::TempDir() + "dsdiag-nvtx-" + test + "-" + std::to_string(getpid()) + ".tsv";
}

// Runs `program` with the recorder attached (when `record` is not empty) and returns its
// exit status, or -1 when it could not run or died on a signal.
int RunChild(const std::string& program, const std::string& record) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    if (entry.rfind("NVTX_INJECTION64_PATH=", 0) == 0) continue;
    if (entry.rfind("DSDIAG_NVTX_RECORD=", 0) == 0) continue;
    env.push_back(entry);
  }
  if (!record.empty()) {
    env.push_back(std::string("NVTX_INJECTION64_PATH=") + kRecorder);
    env.push_back("DSDIAG_NVTX_RECORD=" + record);
  }
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string arg0 = program;
  char* argv[] = {arg0.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv, envp.data()) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool FileExists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

TEST(NvtxTest, ChildRunsWithoutATool) { EXPECT_EQ(RunChild(kChild, ""), 0); }

TEST(NvtxTest, ToolSeesNestedRangesAndMarksInTheDsdiagDomain) {
  if (!nvtx::CompiledIn()) {
    GTEST_SKIP() << "NVTX is not compiled in (no nvtx3 headers found by CMake: "
                    "DSDIAG_HAVE_NVTX is OFF); nothing to record";
  }
  const std::string record = RecordPath("ranges");
  std::remove(record.c_str());
  ASSERT_EQ(RunChild(kChild, record), 0);

  // Tab-separated: event, thread, domain, then level / how / text (see the recorder).
  const std::vector<std::string> expected = {
      "create\t0\tdsdiag",
      "mark\t0\tdsdiag\tascii\tchild-start",
      "push\t0\tdsdiag\t0\tascii\tstep",
      "push\t0\tdsdiag\t1\tascii\tforward",
      "mark\t0\tdsdiag\tascii\tinside-forward",
      "pop\t0\tdsdiag\t1\tforward",
      "register\t0\tdsdiag\tbackward",
      "push\t0\tdsdiag\t1\tregistered\tbackward",
      "pop\t0\tdsdiag\t1\tbackward",
      "push\t0\tdsdiag\t1\tregistered\tbackward",
      "pop\t0\tdsdiag\t1\tbackward",
      "push\t0\tdsdiag\t1\tascii\toptimizer",
      "pop\t0\tdsdiag\t1\toptimizer",
      "pop\t0\tdsdiag\t0\tstep",
      "start\t0\tdsdiag\t1\tascii\tallreduce seq 3 bucket-0",
      "end\t1\tdsdiag\t1\tallreduce seq 3 bucket-0",
      "push\t1\tdsdiag\t0\tascii\tworker",
      "mark\t1\tdsdiag\tascii\tworker-mark",
      "pop\t1\tdsdiag\t0\tworker",
      "mark\t0\tdsdiag\tascii\tchild-end",
  };
  EXPECT_EQ(ReadLines(record), expected);
  std::remove(record.c_str());
}

TEST(NvtxTest, BuildWithoutNvtxCallsNothing) {
  if (!nvtx::CompiledIn()) GTEST_SKIP() << "NVTX is not compiled in: no recorder to attach";
  // The same child compiled without DSDIAG_HAVE_NVTX: NVTX is never initialised, so the
  // tool is never loaded and never opens its file.
  const std::string record = RecordPath("off");
  std::remove(record.c_str());
  ASSERT_EQ(RunChild(kChildOff, record), 0);
  EXPECT_FALSE(FileExists(record)) << "the no-NVTX build reached the NVTX tool";
  std::remove(record.c_str());
}

}  // namespace
