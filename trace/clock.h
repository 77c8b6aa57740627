// Clocks of the trace: every record's `ts` is CLOCK_MONOTONIC in ns, local to its rank.
// The header pairs one monotonic reading with one CLOCK_REALTIME reading so that
// tools can map `ts` to wall time, then to rank 0's clock with the measured offset.
#pragma once

#include <cstdint>
#include <ctime>

namespace dsdiag::trace {

inline int64_t MonotonicNs() noexcept {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

inline int64_t WallNs() noexcept {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

}  // namespace dsdiag::trace
