// The local launcher behind `dsdiag train --nproc N` and `dsdiag run` (see launcher.h for the
// rules).
//
// The supervision loop sleeps in poll() on a self-pipe that the SIGCHLD, SIGTERM, SIGINT and
// SIGHUP handlers write to, so it wakes the moment a rank exits or the launcher is told to
// stop, and otherwise only when the SIGTERM→SIGKILL grace runs out. Ranks are reaped by pid
// (never waitpid(-1)), so a host program's other children are left alone.
#include "launch/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "launch/rank_env.h"
#include "launch/rendezvous.h"
#include "launch/signal_scope.h"
#include "trace/run_id.h"
#include "trace/signal_name.h"

namespace dsdiag::launch {
namespace {

using Clock = std::chrono::steady_clock;

// ---- the ranks -----------------------------------------------------------------------

// Signals the rank's process group (itself and anything it started); falls back to the pid
// when the group does not exist yet (the child has not reached setpgid).
void SignalRank(pid_t pid, int signo) {
  if (kill(-pid, signo) != 0) kill(pid, signo);
}

std::string Seconds(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

class Supervisor {
 public:
  // `path`: spec.executable resolved (ResolveExecutable); argv[0] stays as the user gave it.
  Supervisor(const LaunchSpec& spec, std::string path, LaunchReport* report,
             const SignalScope& signals)
      : spec_(spec), path_(std::move(path)), report_(*report), signals_(signals) {}

  // Never leaves a child behind, even when an exception unwinds through Launch.
  ~Supervisor() {
    for (RankOutcome& r : report_.ranks) {
      if (r.pid > 0 && alive(r)) {
        SignalRank(r.pid, SIGKILL);
        int status = 0;
        while (waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
        }
        kill(-r.pid, SIGKILL);
      }
    }
  }

  void StartAll() {
    report_.ranks.resize(spec_.nproc);
    for (int rank = 0; rank < spec_.nproc; ++rank) report_.ranks[rank].rank = rank;
    Log("starting " + std::to_string(spec_.nproc) + (spec_.nproc == 1 ? " rank" : " ranks") +
        " (run " + report_.run_id +
        ", rendezvous 127.0.0.1:" + std::to_string(report_.master_port) +
        (spec_.run_dir.empty() ? "" : ", run dir " + spec_.run_dir) + ")");
    for (int rank = 0; rank < spec_.nproc; ++rank) {
      if (SignalScope::stop_signal() != 0 || report_.first_failure)
        break;  // stopping: start no more
      Start(rank);
    }
  }

  void Supervise() {
    for (;;) {
      Reap();
      if (SignalScope::stop_signal() != 0 && !stopping_) {
        report_.launcher_signal = SignalScope::stop_signal();
        // Only the first signal started the stop; any more (even ones that arrived before
        // we woke up) ask for the rest of the grace to be skipped.
        BeginStop("the launcher received " + trace::SignalName(SignalScope::stop_signal()), 1);
      }
      // Any stop signal after the stop began means "now": skip the rest of the grace.
      if (stopping_ && !killed_ &&
          (SignalScope::stop_count() > signals_at_stop_ || Clock::now() >= deadline_)) {
        KillRemaining();
      }
      if (AliveCount() == 0) return;
      WaitForEvent();
      signals_.Drain();
    }
  }

 private:
  bool alive(const RankOutcome& r) const { return reaped_.count(r.pid) == 0; }

  int AliveCount() const {
    int n = 0;
    for (const RankOutcome& r : report_.ranks) n += r.pid > 0 && alive(r);
    return n;
  }

  void Start(int rank) {
    ExecStrings argv = [&] {
      std::vector<std::string> a = {spec_.executable};
      a.insert(a.end(), spec_.args.begin(), spec_.args.end());
      return ExecStrings(std::move(a));
    }();
    ExecStrings envp(RankEnv(spec_, rank, report_.master_port, report_.run_id));
    int exec_error[2];
    if (pipe2(exec_error, O_CLOEXEC) != 0) {
      throw LaunchError(std::string("cannot create a pipe: ") + std::strerror(errno));
    }
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
      const int err = errno;
      close(exec_error[0]);
      close(exec_error[1]);
      throw LaunchError("cannot start rank " + std::to_string(rank) +
                        ": fork: " + std::strerror(err));
    }
    if (pid == 0) ExecRank(parent, exec_error[1], path_.c_str(), argv.get(), envp.get());

    close(exec_error[1]);
    setpgid(pid, pid);  // also done by the child; whichever runs first wins the race
    RankOutcome& r = report_.ranks[rank];
    r.pid = pid;
    int child_errno = 0;
    ssize_t n;
    while ((n = read(exec_error[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
    }
    close(exec_error[0]);
    if (n == static_cast<ssize_t>(sizeof child_errno)) {
      r.start_error = "cannot execute " + path_ + ": " + std::strerror(child_errno);
      Log("rank " + std::to_string(rank) + " " + r.start_error);
      // The child exits 127 at once; Reap() records it as the failure.
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      Record(r, status);
    }
  }

  // In the forked child: only async-signal-safe calls until execve.
  [[noreturn]] void ExecRank(pid_t parent, int error_fd, const char* path, char** argv,
                             char** envp) {
    signals_.RestoreDispositions();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    setpgid(0, 0);
    // Die with the launcher even if it is SIGKILLed; if it already died, do not start.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    // A rank in its own process group that read the terminal would be stopped (SIGTTIN).
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
      dup2(devnull, STDIN_FILENO);
      if (devnull != STDIN_FILENO) close(devnull);
    }
    execve(path, argv, envp);
    const int err = errno;
    [[maybe_unused]] ssize_t n = write(error_fd, &err, sizeof err);
    _exit(127);
  }

  // Sleeps until a signal arrives or the grace deadline passes.
  void WaitForEvent() const {
    int timeout_ms = 1000;  // a safety net only: the self-pipe wakes us
    if (stopping_ && !killed_) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left.count(), 1000)));
    }
    pollfd fd{signals_.wake_fd(), POLLIN, 0};
    poll(&fd, 1, timeout_ms);
  }

  void Reap() {
    for (RankOutcome& r : report_.ranks) {
      if (r.pid <= 0 || !alive(r)) continue;
      int status = 0;
      const pid_t got = waitpid(r.pid, &status, WNOHANG);
      if (got == r.pid) Record(r, status);
    }
  }

  void Record(RankOutcome& r, int status) {
    reaped_.insert(r.pid);
    kill(-r.pid, SIGKILL);  // whatever the rank left running in its group
    if (WIFEXITED(status)) {
      r.exited = true;
      r.exit_status = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      r.term_signal = WTERMSIG(status);
    }
    const bool failed = !(r.exited && r.exit_status == 0);
    if (failed && r.signal_sent == 0 && !report_.first_failure) {
      report_.first_failure = r.rank;
      BeginStop("rank " + std::to_string(r.rank) + " failed", SignalScope::stop_count());
    }
  }

  // `signals_seen`: how many stop signals are accounted for by this stop.
  void BeginStop(const std::string& why, sig_atomic_t signals_seen) {
    if (stopping_) return;
    stopping_ = true;
    report_.stop_cause = why;
    signals_at_stop_ = signals_seen;
    deadline_ = Clock::now() + spec_.grace;
    const int n = AliveCount();
    if (n == 0) return;
    Log(why + "; stopping " + std::to_string(n) + (n == 1 ? " rank" : " ranks") +
        " (SIGTERM, then SIGKILL after " + Seconds(spec_.grace) + ")");
    for (RankOutcome& r : report_.ranks) {
      if (r.pid > 0 && alive(r)) {
        SignalRank(r.pid, SIGTERM);
        r.signal_sent = SIGTERM;
      }
    }
  }

  void KillRemaining() {
    killed_ = true;
    for (RankOutcome& r : report_.ranks) {
      if (r.pid > 0 && alive(r)) {
        Log("rank " + std::to_string(r.rank) + " (pid " + std::to_string(r.pid) +
            ") is still running; sending SIGKILL");
        SignalRank(r.pid, SIGKILL);
        r.signal_sent = SIGKILL;
      }
    }
  }

  void Log(const std::string& line) const {
    if (spec_.log != nullptr) *spec_.log << spec_.log_prefix << ": " << line << std::endl;
  }

  const LaunchSpec& spec_;
  const std::string path_;
  LaunchReport& report_;
  const SignalScope& signals_;
  std::set<pid_t> reaped_;
  bool stopping_ = false;
  bool killed_ = false;
  sig_atomic_t signals_at_stop_ = 0;
  Clock::time_point deadline_;
};

}  // namespace

int Launch(const LaunchSpec& spec, LaunchReport* report) {
  if (spec.nproc < 1) throw LaunchError("nproc must be >= 1, got " + std::to_string(spec.nproc));
  const std::optional<std::string> executable = ResolveExecutable(spec.executable);
  if (!executable) throw LaunchError(spec.executable + ": command not found in PATH");
  if (access(executable->c_str(), X_OK) != 0) {
    throw LaunchError("cannot execute " + *executable + ": " + std::strerror(errno));
  }
  LaunchReport local;
  LaunchReport& out = report != nullptr ? *report : local;
  out = LaunchReport{};
  out.run_id = spec.run_id.empty() ? trace::MakeRunId() : spec.run_id;
  if (!spec.run_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(spec.run_dir, ec);
    if (ec) throw LaunchError("cannot create run directory " + spec.run_dir + ": " + ec.message());
  }
  out.master_port = PickFreePort();

  SignalScope signals;
  {
    Supervisor supervisor(spec, *executable, &out, signals);
    supervisor.StartAll();
    supervisor.Supervise();
  }
  out.exit_status = ExitStatusOf(out);
  return out.exit_status;
}

std::optional<std::string> ResolveExecutable(const std::string& program) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t begin = 0;
  while (begin <= dirs.size()) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(begin, end - begin);
    if (dir.empty()) dir = ".";  // an empty PATH entry is the current directory
    const std::string candidate = dir + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate))
      return candidate;
    begin = end + 1;
  }
  return std::nullopt;
}

}  // namespace dsdiag::launch
