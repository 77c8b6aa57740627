// Timeline: every rank of a run as one Chrome Trace Event JSON (Perfetto UI,
// chrome://tracing, speedscope), on rank 0's clock, with the findings of `dsdiag compare`
// as instant events. The whole of `dsdiag timeline` short of the command line.
//
// Two streaming passes over the traces, rank after rank:
//   1. run_scan.h: the earliest event time (the origin), the last enter of every
//      collective, the times findings are placed at;
//   2. rank_events.h: each selected rank's events, written as its records are read.
// Then the findings (finding_placement.h), then "otherData" (run id, origin, selection).
// Memory is bounded by the collective index (O(#collectives)) and the findings — never by
// the number of records or events; the output is written as it is made.
//
// Times: a record's ts maps to rank 0's wall clock (rank_clock.h), then the origin — the
// earliest selected event — is subtracted so that the timeline starts at 0; otherData
// .origin_unix_ns gives it back. "ts"/"dur" are microseconds with ns precision.
//
// Damaged traces: lines the reader cannot use are skipped (`dsdiag compare` reports them as
// trace-corrupt findings, which show up here as instants); the output stays valid JSON.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string_view>
#include <vector>

#include "analyzers/finding.h"
#include "analyzers/run_context.h"
#include "timeline/selection.h"

namespace dsdiag::timeline {

struct TimelineOptions {
  Selection selection;
  // Called after each rank of each pass: pass 1 or 2, ranks done, ranks in the pass.
  std::function<void(int pass, int done, int total)> progress;
};

struct TimelineStats {
  int ranks = 0;               // processes written
  int64_t events = 0;          // trace events written, metadata included
  int64_t collectives = 0;     // distinct (pg, seq) indexed for `wait`
  int64_t findings = 0;        // findings written as instants
  int64_t origin_unix_ns = 0;  // rank 0's wall clock at ts 0
};

// Writes the timeline of `run` to `out` (check `out` afterwards for write errors).
// Throws analyzers::RunInputError when a trace readable at load time cannot be opened.
TimelineStats WriteTimeline(const analyzers::RunContext& run,
                            const std::vector<analyzers::Finding>& findings,
                            const TimelineOptions& options, std::ostream& out);

}  // namespace dsdiag::timeline
