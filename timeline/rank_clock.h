// RankClock: maps a rank's `ts` (its own CLOCK_MONOTONIC, ns) to rank 0's wall clock.
//
// docs/trace-format.md: wall = ts - clock.mono + clock.wall, then rank0 = wall - offset,
// where offset is this rank's wall clock minus rank 0's. The header gives a first offset; a
// later `clock` record refines it (the trainer measures it once the process group is up).
// Records stream, so a streaming reader applies the header's offset until the first `clock`
// record and the latest one read from then on: records written before a refinement keep the
// coarser mapping, which is also what the rank knew at the time.
//
// OffsetHistory keeps a rank's `clock` records to map an arbitrary rank-local time after the
// fact (a finding's ts_ns): the offset of the latest record at or before that time.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "trace/trace_header.h"

namespace dsdiag::timeline {

class RankClock {
 public:
  RankClock() = default;
  explicit RankClock(const trace::ClockReference& header)
      : mono_(header.mono_ns), wall_(header.wall_ns), offset_(header.offset_ns) {}

  // A `clock` record's offset: it applies to every record read after it.
  void SetOffset(int64_t offset_ns) { offset_ = offset_ns; }
  int64_t offset() const { return offset_; }

  // Rank 0's wall clock, ns. Integer arithmetic: exact, and far from overflow for real
  // clocks (wall times near 2^61 ns).
  int64_t ToRank0(int64_t ts) const { return ts - mono_ + wall_ - offset_; }

 private:
  int64_t mono_ = 0;
  int64_t wall_ = 0;
  int64_t offset_ = 0;
};

class OffsetHistory {
 public:
  // A rank emitting `clock` records periodically would make this grow with the run: past
  // kMaxKept the later records are ignored (they refine by microseconds at most).
  static constexpr size_t kMaxKept = 4096;

  explicit OffsetHistory(const trace::ClockReference& header = {}) : header_(header) {}
  void Add(int64_t ts, int64_t offset_ns);
  // Maps `ts` with the offset in force at that time.
  int64_t ToRank0(int64_t ts) const;

 private:
  trace::ClockReference header_;
  std::vector<std::pair<int64_t, int64_t>> updates_;  // (ts, offset), in file order
};

}  // namespace dsdiag::timeline
