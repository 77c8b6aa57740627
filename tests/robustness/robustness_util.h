// Helpers of the robustness tests: processes started outside dsdiag's launcher, a tiny
// tmpfs, a pair of network namespaces, and reading a trace while its writer still runs.
// Every resource is an RAII guard: a failing assertion must not leave a mount, a namespace
// or a rank process behind on a CI machine.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "trace/json_value.h"

namespace dsdiag::robustness_test {

// Mounts, namespaces and veth pairs need root (CAP_SYS_ADMIN, CAP_NET_ADMIN).
bool IsRoot();

// `argv` (argv[0] looked up in PATH) in its own process group, stdout and stderr to `log`
// (/dev/null when empty). Wait for it with trainer_test::WaitDsdiag.
pid_t StartCommand(const std::vector<std::string>& argv, const std::string& log);
// Runs `argv` to its end; returns its exit status (-1 when it could not run or was killed).
// The output is appended to *output when given.
int RunCommand(const std::vector<std::string>& argv, std::string* output = nullptr);

// True while `pid` (a child of ours) has not exited; never reaps it.
bool ChildRunning(pid_t pid);

// What a trace file shows right now: only whole lines count (the writer may be mid-line).
struct Progress {
  int64_t pid = -1;             // the header's pid; -1 before the header is on disk
  int64_t last_step_done = -1;  // the highest `step` record
};
Progress ReadProgress(const std::string& path);

// Polls `path` until a `step` record of step >= `step` is on disk. False when `runner`
// exited first or after `limit_s` seconds (a safety net, not a timing assertion).
bool WaitForStep(const std::string& path, int64_t step, pid_t runner, int limit_s = 120);

// A trace read to its end with trace::TraceReader.
struct TraceSummary {
  bool opened = false;
  int64_t records = 0;
  int64_t issue_count = 0;
  bool truncated_tail = false;
  std::vector<std::string> issues;  // "FILE:LINE:COL: expected X, found Y"
  std::string last_type;            // of the last valid record
  std::string end_reason;           // of the `end` record, empty when none
  int64_t last_step_begun = -1;
  int64_t last_step_done = -1;
  std::set<int64_t> steps_done;  // every `step` record's step
};
TraceSummary ReadSummary(const std::string& path);

// `dsdiag compare <run_dir> --format json` with its output in `log` (not next to the run
// dir, which may sit on a full disk): the findings array, and the exit status in *status.
// Output that is not findings JSON fails the current test.
std::vector<trace::JsonValue> Compare(const std::string& run_dir, const std::string& log,
                                      int* status);

// A tmpfs of `bytes` mounted on `dir` (created); unmounted and removed when destroyed.
class TmpfsMount {
 public:
  TmpfsMount(std::string dir, size_t bytes);
  ~TmpfsMount();
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return dir_; }

 private:
  std::string dir_;
  bool mounted_ = false;
  std::string error_;
};

// Two network namespaces ("hosts") joined by a veth pair: interface kIfName in each, with
// addresses 10.<a>.<b>.1 and .2 /24 derived from our pid. Destroying the namespaces also
// destroys the veth pair; processes still inside are SIGKILLed first.
class NetnsPair {
 public:
  static constexpr const char* kPrefix = "dsdiag-rb-";  // namespace names: <prefix><pid>-<h>
  static constexpr const char* kIfName = "rb0";

  NetnsPair();
  ~NetnsPair();
  NetnsPair(const NetnsPair&) = delete;
  NetnsPair& operator=(const NetnsPair&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& ns(int host) const { return ns_[host]; }
  const std::string& address(int host) const { return address_[host]; }
  // Takes host `host`'s link down (`ip link set rb0 down` inside its namespace).
  bool CutLink(int host) const;

  // Namespaces of an earlier test process (by prefix) that is gone: its processes are
  // killed and the namespaces deleted. Namespaces of a live process are left alone.
  static void RemoveLeftovers();

 private:
  bool Run(const std::vector<std::string>& argv);
  static void Remove(const std::string& ns);

  std::string ns_[2];
  std::string address_[2];
  bool created_[2] = {false, false};
  std::string error_;
};

}  // namespace dsdiag::robustness_test
