// SignalScope: the launcher's handlers for SIGCHLD, SIGTERM, SIGINT and SIGHUP and the
// self-pipe they write to, for the lifetime of one Launch (launcher.h says what each signal
// does). The supervision loop sleeps in poll() on wake_fd(): a rank exiting or a stop
// request wakes it at once.
//
// SIGINT and SIGHUP stay ignored when they were (a launcher started with nohup or in a
// non-interactive background job should not react to them either).
#pragma once

#include <signal.h>

#include <array>

namespace dsdiag::launch {

class SignalScope {
 public:
  SignalScope();  // throws LaunchError when the pipe cannot be made
  ~SignalScope();
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  // Async-signal-safe: also used in a forked child before exec, so that a rank starts with
  // the dispositions the launcher was given.
  void RestoreDispositions() const;

  int wake_fd() const { return pipe_[0]; }
  // Empties the self-pipe after a wake-up.
  void Drain() const;

  // The first SIGTERM/SIGINT/SIGHUP received (0: none), and how many of them came.
  static int stop_signal();
  static sig_atomic_t stop_count();

  static constexpr std::array<int, 4> kHandledSignals = {SIGCHLD, SIGTERM, SIGINT, SIGHUP};

 private:
  int pipe_[2] = {-1, -1};
  struct sigaction previous_[kHandledSignals.size()]{};
};

}  // namespace dsdiag::launch
