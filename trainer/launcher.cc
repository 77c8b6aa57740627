// The local launcher behind `dsdiag train --nproc N` (see launcher.h for the rules).
//
// The supervision loop sleeps in poll() on a self-pipe that the SIGCHLD, SIGTERM, SIGINT and
// SIGHUP handlers write to, so it wakes the moment a rank exits or the launcher is told to
// stop, and otherwise only when the SIGTERM→SIGKILL grace runs out. Ranks are reaped by pid
// (never waitpid(-1)), so a host program's other children are left alone.
#include "trainer/launcher.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <set>

extern char** environ;

namespace dsdiag::trainer {
namespace {

using Clock = std::chrono::steady_clock;

// ---- signals -------------------------------------------------------------------------

int g_wake_fd = -1;                       // write end of the self-pipe
volatile sig_atomic_t g_stop_signal = 0;  // first SIGTERM/SIGINT/SIGHUP received
volatile sig_atomic_t g_stop_count = 0;   // how many of them

void OnSignal(int signo) {
  const int saved_errno = errno;
  if (signo != SIGCHLD) {
    if (g_stop_signal == 0) g_stop_signal = signo;
    g_stop_count = g_stop_count + 1;
  }
  const char byte = 0;
  if (g_wake_fd >= 0) {
    [[maybe_unused]] ssize_t n = write(g_wake_fd, &byte, 1);  // full pipe: already awake
  }
  errno = saved_errno;
}

constexpr std::array<int, 4> kHandledSignals = {SIGCHLD, SIGTERM, SIGINT, SIGHUP};

// Installs the handlers and the self-pipe for the lifetime of one Launch. SIGINT and SIGHUP
// stay ignored when they were (a launcher started with nohup or in a non-interactive
// background job should not react to them either).
class SignalScope {
 public:
  SignalScope() {
    if (pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw LaunchError(std::string("cannot create a pipe: ") + std::strerror(errno));
    }
    g_wake_fd = pipe_[1];
    g_stop_signal = 0;
    g_stop_count = 0;
    struct sigaction action {};
    action.sa_handler = OnSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_NOCLDSTOP;
    for (size_t i = 0; i < kHandledSignals.size(); ++i) {
      sigaction(kHandledSignals[i], nullptr, &previous_[i]);
      const int signo = kHandledSignals[i];
      const bool ignored = previous_[i].sa_handler == SIG_IGN;
      if (ignored && (signo == SIGINT || signo == SIGHUP)) continue;
      sigaction(signo, &action, nullptr);
    }
  }
  ~SignalScope() {
    RestoreDispositions();
    g_wake_fd = -1;
    close(pipe_[0]);
    close(pipe_[1]);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  // Async-signal-safe: also used in a forked child before exec, so that a rank starts with
  // the dispositions the launcher was given.
  void RestoreDispositions() const {
    for (size_t i = 0; i < kHandledSignals.size(); ++i)
      sigaction(kHandledSignals[i], &previous_[i], nullptr);
  }

  int wake_fd() const { return pipe_[0]; }
  void Drain() const {
    char buf[64];
    while (read(pipe_[0], buf, sizeof buf) > 0) {
    }
  }

 private:
  int pipe_[2] = {-1, -1};
  struct sigaction previous_[kHandledSignals.size()]{};
};

// ---- environment and argv ------------------------------------------------------------

// NAME=VALUE strings for execve, built before fork so that the child only calls
// async-signal-safe functions.
class ExecStrings {
 public:
  explicit ExecStrings(std::vector<std::string> strings) : strings_(std::move(strings)) {
    for (std::string& s : strings_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
  }
  char** get() { return pointers_.data(); }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

std::vector<std::string> RankEnv(const LaunchSpec& spec, int rank, int port,
                                 const std::string& run_id) {
  std::vector<std::pair<std::string, std::string>> ours = {
      {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(spec.nproc)},
      {"LOCAL_RANK", std::to_string(rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(spec.nproc)},
      {"MASTER_ADDR", "127.0.0.1"},
      {"MASTER_PORT", std::to_string(port)},
      {"DSDIAG_RUN_ID", run_id},
  };
  // One BLAS/OpenMP thread per rank unless the user chose: N ranks each spawning one thread
  // per core oversubscribe the machine and make every step a straggler.
  const char* omp = std::getenv("OMP_NUM_THREADS");
  if (omp == nullptr || *omp == '\0') ours.emplace_back("OMP_NUM_THREADS", "1");
  for (const auto& kv : spec.env) {
    bool replaced = false;
    for (auto& mine : ours) {
      if (mine.first == kv.first) {
        mine.second = kv.second;
        replaced = true;
      }
    }
    if (!replaced) ours.push_back(kv);
  }

  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& kv : ours) overridden = overridden || kv.first == name;
    if (!overridden) env.push_back(entry);
  }
  for (const auto& kv : ours) env.push_back(kv.first + "=" + kv.second);
  return env;
}

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
  Supervisor(const LaunchSpec& spec, LaunchReport* report, const SignalScope& signals)
      : spec_(spec), report_(*report), signals_(signals) {}

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
      if (g_stop_signal != 0 || report_.first_failure) break;  // stopping: start no more
      Start(rank);
    }
  }

  void Supervise() {
    for (;;) {
      Reap();
      if (g_stop_signal != 0 && !stopping_) {
        report_.launcher_signal = g_stop_signal;
        // Only the first signal started the stop; any more (even ones that arrived before
        // we woke up) ask for the rest of the grace to be skipped.
        BeginStop("the launcher received " + SignalName(g_stop_signal), 1);
      }
      // Any stop signal after the stop began means "now": skip the rest of the grace.
      if (stopping_ && !killed_ && (g_stop_count > signals_at_stop_ || Clock::now() >= deadline_)) {
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
    if (pid == 0) ExecRank(parent, exec_error[1], argv.get(), envp.get());

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
      r.start_error = "cannot execute " + spec_.executable + ": " + std::strerror(child_errno);
      Log("rank " + std::to_string(rank) + " " + r.start_error);
      // The child exits 127 at once; Reap() records it as the failure.
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      Record(r, status);
    }
  }

  // In the forked child: only async-signal-safe calls until execve.
  [[noreturn]] void ExecRank(pid_t parent, int error_fd, char** argv, char** envp) {
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
    execve(argv[0], argv, envp);
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
      BeginStop("rank " + std::to_string(r.rank) + " failed", g_stop_count);
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
  LaunchReport& report_;
  const SignalScope& signals_;
  std::set<pid_t> reaped_;
  bool stopping_ = false;
  bool killed_ = false;
  sig_atomic_t signals_at_stop_ = 0;
  Clock::time_point deadline_;
};

int ExitStatus(const LaunchReport& report) {
  if (report.launcher_signal != 0) return 128 + report.launcher_signal;
  if (report.first_failure) {
    const RankOutcome& r = report.ranks[*report.first_failure];
    return r.exited ? r.exit_status : 128 + r.term_signal;
  }
  for (const RankOutcome& r : report.ranks)
    if (!r.ok()) return 1;
  return 0;
}

}  // namespace

std::vector<std::string> LaunchReport::FailureLines() const {
  const std::string& cause = stop_cause;
  auto describe = [&](const RankOutcome& r) {
    std::string who = "rank " + std::to_string(r.rank);
    if (r.pid <= 0)
      return who + " was not started (" + (cause.empty() ? "setup failed" : cause) + ")";
    who += " (pid " + std::to_string(r.pid) + ")";
    if (!r.start_error.empty()) return who + " could not start: " + r.start_error;
    if (r.signal_sent == SIGKILL) {
      return who + " was killed by the launcher (SIGKILL, it outlived the SIGTERM grace) after " +
             cause;
    }
    if (r.signal_sent == SIGTERM) {
      std::string line = who + " was stopped by the launcher (SIGTERM) after " + cause;
      // Another signal ended it first (e.g. SIGPIPE writing to the failed peer): say so.
      if (!r.exited && r.term_signal != SIGTERM)
        line += ", but died of " + SignalName(r.term_signal);
      return line;
    }
    if (r.exited) return who + " exited with status " + std::to_string(r.exit_status);
    return who + " was killed by " + SignalName(r.term_signal);
  };
  std::vector<std::string> lines;
  if (first_failure) lines.push_back(describe(ranks[*first_failure]));
  for (const RankOutcome& r : ranks) {
    if (r.ok() || (first_failure && r.rank == *first_failure)) continue;
    lines.push_back(describe(r));
  }
  return lines;
}

int Launch(const LaunchSpec& spec, LaunchReport* report) {
  if (spec.nproc < 1) throw LaunchError("nproc must be >= 1, got " + std::to_string(spec.nproc));
  if (access(spec.executable.c_str(), X_OK) != 0) {
    throw LaunchError("cannot execute " + spec.executable + ": " + std::strerror(errno));
  }
  LaunchReport local;
  LaunchReport& out = report != nullptr ? *report : local;
  out = LaunchReport{};
  out.run_id = spec.run_id.empty() ? MakeRunId() : spec.run_id;
  if (!spec.run_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(spec.run_dir, ec);
    if (ec) throw LaunchError("cannot create run directory " + spec.run_dir + ": " + ec.message());
  }
  out.master_port = PickFreePort();

  SignalScope signals;
  {
    Supervisor supervisor(spec, &out, signals);
    supervisor.StartAll();
    supervisor.Supervise();
  }
  out.exit_status = ExitStatus(out);
  return out.exit_status;
}

int PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw LaunchError(std::string("cannot create a socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    close(fd);
    throw LaunchError(std::string("cannot find a free port on 127.0.0.1: ") + std::strerror(err));
  }
  close(fd);
  return ntohs(addr.sin_port);
}

std::string MakeRunId() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  std::random_device random;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", static_cast<unsigned>(random()));
  return std::string(stamp) + "-" + suffix;
}

std::string SignalName(int signo) {
  switch (signo) {
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGILL:
      return "SIGILL";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGALRM:
      return "SIGALRM";
    case SIGTERM:
      return "SIGTERM";
    case SIGXCPU:
      return "SIGXCPU";
    case SIGXFSZ:
      return "SIGXFSZ";
    case SIGSYS:
      return "SIGSYS";
  }
  return "signal " + std::to_string(signo);
}

}  // namespace dsdiag::trainer
