#include "launch/signal_scope.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "launch/launcher.h"  // LaunchError

namespace dsdiag::launch {
namespace {

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

}  // namespace

SignalScope::SignalScope() {
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

SignalScope::~SignalScope() {
  RestoreDispositions();
  g_wake_fd = -1;
  close(pipe_[0]);
  close(pipe_[1]);
}

void SignalScope::RestoreDispositions() const {
  for (size_t i = 0; i < kHandledSignals.size(); ++i)
    sigaction(kHandledSignals[i], &previous_[i], nullptr);
}

void SignalScope::Drain() const {
  char buf[64];
  while (read(pipe_[0], buf, sizeof buf) > 0) {
  }
}

int SignalScope::stop_signal() { return g_stop_signal; }
sig_atomic_t SignalScope::stop_count() { return g_stop_count; }

}  // namespace dsdiag::launch
