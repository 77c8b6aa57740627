#include "probes/probe_timer.h"

#include "trace/clock.h"

namespace dsdiag::probes {
namespace {
// Probe calls nest (a collective scope counts its op into the session's step totals): only
// the outermost one on a thread is timed, so no time is counted twice.
thread_local int g_open_timers = 0;
}  // namespace

ProbeTimer::ProbeTimer(Session* session) noexcept
    : session_(session && session->on() && g_open_timers == 0 ? session : nullptr) {
  if (!session_) return;
  ++g_open_timers;
  start_ns_ = trace::MonotonicNs();
}

ProbeTimer::~ProbeTimer() {
  if (!session_) return;
  session_->AddProbeTime(trace::MonotonicNs() - start_ns_);
  --g_open_timers;
}

}  // namespace dsdiag::probes
