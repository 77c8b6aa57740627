// ProbeTimer: the probes measure what they cost. Every public probe call opens one for its
// duration; the outermost on a thread adds that duration to its session's running total,
// which each `step` record carries as `probe_ns` (the time spent inside probes since the
// previous step record, on every thread of the rank) and the `end` record as the session's
// total. So the probes' share of a step is read off the trace, steadily, where timing whole
// runs with probes on and off drowns a 1% effect in the machine's noise (bench/README.md).
//
// Costs two clock reads (~40 ns) per probe call; with probes off, one branch. A loop that
// does its own work for the probes (hashing a generator's state for an `rng` record) opens
// one around it too:
//
//   { dsdiag::probes::ProbeTimer t(session); records::WriteRng(session, ..., Hash(state)); }
#pragma once

#include <cstdint>

#include "probes/session.h"

namespace dsdiag::probes {

class ProbeTimer {
 public:
  explicit ProbeTimer(Session* session) noexcept;
  ~ProbeTimer();
  ProbeTimer(const ProbeTimer&) = delete;
  ProbeTimer& operator=(const ProbeTimer&) = delete;
  void* operator new(size_t) = delete;

 private:
  Session* session_;  // null: probes off, or inside another ProbeTimer on this thread
  int64_t start_ns_ = 0;
};

}  // namespace dsdiag::probes
