#include "trace/signal_name.h"

#include <signal.h>

namespace dsdiag::trace {

const char* KnownSignalName(int signo) noexcept {
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
  return nullptr;
}

std::string SignalName(int signo) {
  const char* name = KnownSignalName(signo);
  return name ? std::string(name) : "signal " + std::to_string(signo);
}

}  // namespace dsdiag::trace
