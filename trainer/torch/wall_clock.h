// WallClock: the trainer's only source of CLOCK_REALTIME readings, so that the `clock-skew`
// fault can make one rank's wall clock run ahead the way a badly synced host does — the
// header's clock pair and the offset measurement included (RankProbesConfig::wall_clock);
// the probes don't know.
#pragma once

#include <cstdint>

#include "trace/clock.h"

namespace dsdiag::trainer {

class WallClock {
 public:
  explicit WallClock(int64_t skew_ns = 0) : skew_ns_(skew_ns) {}
  int64_t Now() const noexcept { return trace::WallNs() + skew_ns_; }
  int64_t skew_ns() const { return skew_ns_; }

 private:
  int64_t skew_ns_;
};

}  // namespace dsdiag::trainer
