// RankClock: puts a rank's monotonic `ts` on rank 0's wall clock, so that times taken on
// different hosts can be compared (who entered a collective first, since when a rank waits,
// where an event sits on the timeline). The one mapping compare, timeline and report use.
//
// The header's `clock` pairs one CLOCK_MONOTONIC and one CLOCK_REALTIME reading and says how
// far this rank's wall clock is from rank 0's (clock_reference.h):
//   "clock":{"mono":1200,"wall":1796026500000000000,"offset":-35000,"offset_err":12000}
// so  wall = ts - mono + wall_at_mono  and  rank0 = wall - offset.
//
// A later `clock` record ({"type":"clock","when":"start","offset":..,"offset_err":..}) is a
// better measurement of the offset; Refine() takes it for every later mapping — except a
// record that measured nothing (offset_err -1) after one that did: an unknown offset does
// not undo a measured one. A rank that feeds its records in file order thus maps each `ts`
// with the latest offset it had measured by then. Times are int64 ns: wall times (~1.8e18)
// fit with room to spare.
//
// OffsetHistory keeps a rank's refinements to map an arbitrary rank-local time after the
// fact (a finding's ts_ns): the offset in force at that time, by the same rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "trace/clock_reference.h"

namespace dsdiag::trace {

class Record;

class RankClock {
 public:
  RankClock() = default;
  explicit RankClock(const ClockReference& reference)
      : mono_ns_(reference.mono_ns),
        wall_ns_(reference.wall_ns),
        offset_ns_(reference.offset_ns),
        offset_err_ns_(reference.offset_err_ns) {}

  // `ts` (rank-local CLOCK_MONOTONIC ns) as rank 0's wall clock, ns.
  int64_t ToRank0(int64_t ts) const { return ts - mono_ns_ + wall_ns_ - offset_ns_; }

  // Takes a measured offset (the rule above); returns whether it was taken.
  bool Refine(int64_t offset_ns, int64_t offset_err_ns);
  // The same from a `clock` record; other records are ignored (false).
  bool Refine(const Record& record);

  int64_t offset_ns() const { return offset_ns_; }
  int64_t offset_err_ns() const { return offset_err_ns_; }

 private:
  int64_t mono_ns_ = 0;
  int64_t wall_ns_ = 0;
  int64_t offset_ns_ = 0;
  int64_t offset_err_ns_ = -1;
};

class OffsetHistory {
 public:
  // A rank emitting `clock` records periodically would make this grow with the run: past
  // kMaxKept the later records are ignored (they refine by microseconds at most).
  static constexpr size_t kMaxKept = 4096;

  explicit OffsetHistory(const ClockReference& header = {}) : header_(header) {}
  // A `clock` record at `ts`; other records are ignored.
  void Add(const Record& record);
  // Maps `ts` with the offset in force at that time.
  int64_t ToRank0(int64_t ts) const;

 private:
  struct Update {
    int64_t ts, offset_ns, offset_err_ns;
  };
  ClockReference header_;
  std::vector<Update> updates_;  // in file order
};

}  // namespace dsdiag::trace
