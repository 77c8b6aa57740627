// Timeline: every rank of a run as one Chrome Trace Event JSON (Perfetto UI,
// chrome://tracing, speedscope), on rank 0's clock, with the findings of `dsdiag compare`
// as instant events. The whole of `dsdiag timeline` short of the command line.
//
// One streaming pass: the timeline's collector (timeline_collector.h) rides the step driver
// beside compare's analyzers, so every trace is read once; then each rank's spooled events
// are written (rank after rank), then the findings (finding_placement.h), then "otherData"
// (run id, origin, selection). Memory is bounded by the collective index (O(#collectives)),
// the spool's buffers and the findings — never by the number of records or events.
//
// Times: a record's ts maps to rank 0's wall clock (trace/rank_clock.h), then the origin —
// the earliest selected event, or an earlier finding — is subtracted so that the timeline
// starts at 0; otherData.origin_unix_ns gives it back. "ts"/"dur" are microseconds with ns
// precision.
//
// Damaged traces: lines the reader cannot use are skipped (`dsdiag compare` reports them as
// trace-corrupt findings, which show up here as instants); the output stays valid JSON.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "analyzers/framework/compare.h"
#include "analyzers/framework/finding.h"
#include "analyzers/framework/run_context.h"
#include "timeline/selection.h"
#include "timeline/timeline_collector.h"

namespace dsdiag::timeline {

struct TimelineOptions {
  Selection selection;
  TimelineFormat format = TimelineFormat::kJson;
  // Where the pass keeps events until the origin is known (JSON), or collectives until
  // their waits are (Perfetto): an unlinked temporary file; empty: $TMPDIR, else /tmp.
  std::string spool_dir;
  analyzers::DriveOptions drive;
  // Called after each rank written: ranks done, ranks in all.
  std::function<void(int done, int total)> progress;
};

struct TimelineResult {
  TimelineStats stats;
  analyzers::CompareResult compare;  // the findings drawn, as `dsdiag compare` gives them
};

// Reads `run` once for compare's findings and the timeline, and writes the timeline to
// `out` (check `out` afterwards for write errors). Throws analyzers::RunInputError when a
// trace readable at load time cannot be opened, std::runtime_error when the spool cannot be
// written.
TimelineResult WriteTimeline(const analyzers::RunContext& run, const TimelineOptions& options,
                             std::ostream& out);

// The same with `findings` drawn instead of compare's (no analyzer runs): tests.
TimelineStats WriteTimeline(const analyzers::RunContext& run,
                            const std::vector<analyzers::Finding>& findings,
                            const TimelineOptions& options, std::ostream& out);

}  // namespace dsdiag::timeline
