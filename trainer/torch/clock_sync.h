// Wall clocks across ranks.
//
// WallClock is the trainer's only source of CLOCK_REALTIME readings, so that the
// `clock-skew` fault can make one rank's wall clock run ahead the way a badly synced host
// does — header clock pair and offset measurement included; the probes don't know.
//
// MeasureClockOffset estimates this rank's wall clock minus rank 0's by ping-pong through
// the rendezvous store (NTP's method): rank r notes t1, sets a ping key, rank 0 answers
// with its time t0, rank r notes t2 on receipt; offset = (t1 + t2) / 2 - t0 with an error
// of at most (t2 - t1) / 2. The round with the smallest round trip wins.
#pragma once

#include <cstdint>
#include <string_view>

#include "trace/clock.h"

namespace c10d {
class Store;
}

namespace dsdiag::trainer {

class WallClock {
 public:
  explicit WallClock(int64_t skew_ns = 0) : skew_ns_(skew_ns) {}
  int64_t Now() const noexcept { return trace::WallNs() + skew_ns_; }
  int64_t skew_ns() const { return skew_ns_; }

 private:
  int64_t skew_ns_;
};

struct ClockOffset {
  int64_t offset_ns = 0;  // this rank minus rank 0
  int64_t err_ns = -1;    // half the best round trip; -1 when not measured
  int64_t rtt_ns = -1;
};

// Collective over the store: every rank calls it with the same `when` ("start", "end").
// Rank 0 returns {0, 0, 0}; a one-rank job returns {0, 0, 0} at once. Throws on store
// failure or timeout.
ClockOffset MeasureClockOffset(c10d::Store& store, int rank, int world_size, const WallClock& clock,
                               std::string_view when, int rounds = 6);

}  // namespace dsdiag::trainer
