// RankClock: puts a rank's monotonic `ts` on rank 0's wall clock, so that times taken on
// different hosts can be compared (who entered a collective first, since when a rank waits).
//
// The header's `clock` pairs one CLOCK_MONOTONIC and one CLOCK_REALTIME reading and says how
// far this rank's wall clock is from rank 0's:
//   "clock":{"mono":1200,"wall":1796026500000000000,"offset":-35000,"offset_err":12000}
// so  wall = ts - mono + wall_at_mono  and  rank0 = wall - offset.
// A later `clock` record ({"type":"clock","when":"start","offset":..,"offset_err":..}) is a
// better measurement of the offset; Refine() takes it for every later mapping. A rank that
// feeds its records in file order thus maps each `ts` with the latest offset it had measured
// by then. Times are int64 ns: wall times (~1.8e18) fit with room to spare.
#pragma once

#include <cstdint>

#include "trace/trace_header.h"
#include "trace/trace_reader.h"

namespace dsdiag::analyzers {

class RankClock {
 public:
  RankClock() = default;
  explicit RankClock(const trace::ClockReference& reference);

  // `ts` (rank-local CLOCK_MONOTONIC ns) as rank 0's wall clock, ns.
  int64_t ToRank0(int64_t ts) const { return ts - mono_ns_ + wall_ns_ - offset_ns_; }

  // Takes the offset of a `clock` record; other records are ignored. Returns whether the
  // record was a usable clock record.
  bool Refine(const trace::Record& record);
  void SetOffset(int64_t offset_ns, int64_t offset_err_ns);

  int64_t offset_ns() const { return offset_ns_; }
  int64_t offset_err_ns() const { return offset_err_ns_; }

 private:
  int64_t mono_ns_ = 0;
  int64_t wall_ns_ = 0;
  int64_t offset_ns_ = 0;
  int64_t offset_err_ns_ = -1;
};

}  // namespace dsdiag::analyzers
