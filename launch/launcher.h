// Launch: `dsdiag train --nproc N` and `dsdiag run --nproc N -- COMMAND` as `torchrun
// --standalone --nproc-per-node N` does it — N local copies of any program, each told its
// rank through the environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT, DSDIAG_RUN_ID, OMP_NUM_THREADS: rank_env.h), then supervised until every one
// has exited. Or one process that starts its ranks itself (`assign_ranks` false). Torch-free:
// the ranks rendezvous among themselves; the launcher only starts, watches and stops
// processes.
//
// Supervision rules:
//  * The first rank to exit non-zero or by a signal is "the failure"; every other rank still
//    running gets SIGTERM, and SIGKILL if it is still there after `grace`.
//  * SIGTERM, SIGINT or SIGHUP to the launcher: the same, SIGTERM to every rank then SIGKILL
//    after `grace`. Another such signal while the ranks are being stopped skips the rest of
//    the grace (the impatient second Ctrl-C).
//  * Launch returns only when every rank has been reaped; each rank runs in its own process
//    group, which is killed after the rank is reaped, so nothing it spawned survives either.
//    Ranks die with the launcher (PR_SET_PDEATHSIG) even when it is SIGKILLed.
//
// Exit status (LaunchReport::exit_status, also returned):
//   0          every rank exited 0
//   128+signo  the launcher was stopped by signal `signo` (130 for Ctrl-C, 143 for SIGTERM)
//   status     the failing rank's own exit status when it exited non-zero
//   128+signo  the failing rank's signal when it was killed (137 for SIGKILL)
//
// Only one Launch may run in a process at a time: it installs process-wide handlers for
// SIGCHLD, SIGTERM, SIGINT and SIGHUP while it runs and restores the previous ones after.
// SIGINT and SIGHUP stay ignored if they were (nohup, `&` in a script). Call it from the
// main thread: PR_SET_PDEATHSIG fires when the thread that forked a rank exits. Because each
// rank has its own process group, Ctrl-C on a terminal reaches only the launcher, which
// then stops the ranks in order; the ranks' stdin is /dev/null.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dsdiag::launch {

struct LaunchSpec {
  // The program every rank runs: a path, or a name looked up in PATH as a shell would.
  std::string executable = "/proc/self/exe";
  std::vector<std::string> args;  // argv[1..] of every rank
  int nproc = 1;
  // False: no rank variables (RANK, WORLD_SIZE, ...) — nproc 1, a command that starts and
  // numbers its ranks itself (torch.multiprocessing.spawn, a shell loop, torchrun).
  bool assign_ranks = true;
  std::string run_id;   // DSDIAG_RUN_ID for the ranks; empty: MakeRunId()
  std::string run_dir;  // created (with parents) before the ranks start when non-empty
  std::chrono::milliseconds grace{5000};  // SIGTERM → SIGKILL
  // Extra variables for every rank (after the launcher's own, so they may override them).
  std::vector<std::pair<std::string, std::string>> env;
  // Progress lines ("stopping 3 ranks after rank 1 failed"); null: silent.
  std::ostream* log = nullptr;
  std::string log_prefix = "dsdiag train";
};

struct RankOutcome {
  int rank = 0;
  pid_t pid = -1;
  bool exited = false;  // exited on its own with exit_status; else killed by term_signal
  int exit_status = 0;
  int term_signal = 0;
  int signal_sent = 0;      // the strongest signal the launcher sent it (0, SIGTERM, SIGKILL)
  std::string start_error;  // non-empty when the program could not be executed

  bool ok() const { return exited && exit_status == 0 && signal_sent == 0; }
};

struct LaunchReport {
  std::string run_id;
  int master_port = 0;
  std::vector<RankOutcome> ranks;    // indexed by rank
  std::optional<int> first_failure;  // the rank that failed first, when one did
  // The signal that made the launcher stop the ranks, or 0 (also 0 when the ranks were
  // already being stopped after a failure; such a signal only cuts the grace short).
  int launcher_signal = 0;
  std::string stop_cause;  // why the ranks were stopped: "rank 2 failed", "the launcher
                           // received SIGINT"; empty when they all ran to their end
  int exit_status = 0;

  // One line per rank that did not end cleanly, the cause first, e.g.
  //   "rank 2 (pid 123) was killed by SIGKILL"
  //   "rank 1 (pid 122) was stopped by the launcher (SIGTERM) after rank 2 failed"
  std::vector<std::string> FailureLines() const;
};

// Setup failed (no free port, run dir not creatable, the program not found, fork failed). Any rank
// already started has been stopped and reaped when this is thrown.
class LaunchError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Starts spec.nproc ranks, waits for all of them, fills *report (may be null) and returns
// the exit status described above.
int Launch(const LaunchSpec& spec, LaunchReport* report);

// The exit status of a finished launch (above).
int ExitStatusOf(const LaunchReport& report);

// `program` as execve takes it: itself when it holds a '/', else the first executable
// PATH/program; nullopt when there is none.
std::optional<std::string> ResolveExecutable(const std::string& program);

}  // namespace dsdiag::launch
