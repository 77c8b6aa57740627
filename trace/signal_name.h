// SignalName: how dsdiag spells a signal everywhere — in `signal` and `end` records, flight
// dumps, the launcher's lines and findings: "SIGTERM", "SIGKILL", ..., "signal 42".
#pragma once

#include <string>

namespace dsdiag::trace {

// "SIGTERM" for the signals a job meets; null for any other number. Async-signal-safe.
const char* KnownSignalName(int signo) noexcept;
// KnownSignalName, or "signal <N>".
std::string SignalName(int signo);

}  // namespace dsdiag::trace
