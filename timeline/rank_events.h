// RankEvents: one rank's records as timeline events, as the single pass delivers them (one
// process per rank, pid = rank). Times come in on rank 0's clock (the caller's RankClock);
// the events go to the rank's spool (event_spool.h), which writes them once the origin and
// the collectives' last enters are known.
//
// How records map to events (all times on rank 0's clock, minus the timeline's origin; in
// the Perfetto format, tracks instead of pids and tids: perfetto_trace_writer.h):
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
#include <memory>
#include <string_view>

#include "analyzers/framework/run_context.h"
#include "timeline/event_spool.h"
#include "timeline/selection.h"
#include "trace/trace_reader.h"

namespace dsdiag::timeline {

// Whether a record of this type (trace::rec_id) becomes an event (the earliest of them is
// the origin).
bool MakesEvent(int type_id);

// tids of the collective lanes: kLaneTidBase + lane, above any writer thread's index.
inline constexpr int64_t kLaneTidBase = 1000000;

class RankEventSink;  // rank_events.cc
class PerfettoTraceWriter;

class RankEvents {
 public:
  // Writes the process's metadata events at once: Chrome Trace JSON into the rank's spool,
  // or Perfetto packets straight into the trace (perfetto_trace_writer.h).
  RankEvents(const analyzers::RankInfo& rank, const StepRange& steps, RankSpool* out);
  RankEvents(const analyzers::RankInfo& rank, const StepRange& steps, PerfettoTraceWriter* out);
  ~RankEvents();
  RankEvents(RankEvents&&) noexcept;

  // The rank's next record, in file order, and its ts on rank 0's clock.
  void OnRecord(const trace::Record& record, int64_t t_rank0);
  // The rank's file has run out.
  void End();

 private:
  std::unique_ptr<RankEventSink> writer_;
};

}  // namespace dsdiag::timeline
