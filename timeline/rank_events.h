// RankEvents: the second pass of `dsdiag timeline` for one rank — streams its trace and
// writes its events as it reads them (one process per rank, pid = rank).
//
// How records map to events (all times on rank 0's clock, minus the timeline's origin):
//
//   header             process_name "rank R (host)", process_sort_index R, process_labels
//                      (clock offset), thread_name "main" for tid 0
//   thread             thread_name for its tid
//   step               "X" "step N" [ts, ts+dur] on its thread, args step/epoch/loss/...;
//                      counters loss, gloss, lr, samples/s (at the step's start)
//   step_begin         nothing, unless the step never closes (the rank died or hung in it):
//                      then "X" "step N (unfinished)" up to the rank's last event
//   phase              "X" named after the phase, nested inside its step
//   coll               "X" named after the op, args pg/seq/op/tag/dtype/n/bytes and `wait`
//                      (see below), on a "collectives" track
//   grad, scaler       counters "grad norm", "loss scale"
//   error, signal,     process-scoped instants ("ph":"i","s":"p")
//   mark, end
//
// Collectives sit on tracks of their own, not on the thread that issued them: a
// collective's span runs from issue to completion, overlapping the backward and sync phases
// and the next bucket's collective without nesting in them, and trace viewers draw only
// properly nested spans on one track. Each rank gets as many "collectives" lanes as it had
// collectives in flight at once (greedy: the first lane free at the op's start).
//
// `wait` (ns, integer like every duration of the trace format): how long this rank waited
// in the collective for its peers = the last rank's enter minus this rank's enter, both on
// rank 0's clock, clamped to [0, dur]; `last` names the rank that entered last. Its
// precision is that of the clock offsets (offset_err in the process labels).
#pragma once

#include <cstdint>
#include <string_view>

#include "analyzers/run_context.h"
#include "timeline/chrome_trace_writer.h"
#include "timeline/collective_index.h"
#include "timeline/selection.h"

namespace dsdiag::timeline {

// Whether a record of this type becomes an event (the first pass finds the earliest).
bool MakesEvent(std::string_view type);

// tids of the collective lanes: kLaneTidBase + lane, above any writer thread's index.
inline constexpr int64_t kLaneTidBase = 1000000;

// Throws analyzers::RunInputError when the trace cannot be opened any more.
void WriteRankEvents(const analyzers::RankInfo& rank, const StepRange& steps,
                     const CollectiveIndex& collectives, int64_t origin_ns, ChromeTraceWriter* out);

}  // namespace dsdiag::timeline
