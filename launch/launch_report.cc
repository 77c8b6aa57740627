// What a finished Launch says about its ranks: the failure lines and the exit status
// (launcher.h gives the rules).
#include <signal.h>

#include "launch/launcher.h"
#include "trace/signal_name.h"

namespace dsdiag::launch {

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
        line += ", but died of " + trace::SignalName(r.term_signal);
      return line;
    }
    if (r.exited) return who + " exited with status " + std::to_string(r.exit_status);
    return who + " was killed by " + trace::SignalName(r.term_signal);
  };
  std::vector<std::string> lines;
  if (first_failure) lines.push_back(describe(ranks[*first_failure]));
  for (const RankOutcome& r : ranks) {
    if (r.ok() || (first_failure && r.rank == *first_failure)) continue;
    lines.push_back(describe(r));
  }
  return lines;
}

int ExitStatusOf(const LaunchReport& report) {
  if (report.launcher_signal != 0) return 128 + report.launcher_signal;
  if (report.first_failure) {
    const RankOutcome& r = report.ranks[*report.first_failure];
    return r.exited ? r.exit_status : 128 + r.term_signal;
  }
  for (const RankOutcome& r : report.ranks)
    if (!r.ok()) return 1;
  return 0;
}

}  // namespace dsdiag::launch
