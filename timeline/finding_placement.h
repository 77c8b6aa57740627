// Where each finding of `dsdiag compare` goes on the timeline: which process (rank) and
// which time, on rank 0's clock.
//
//   rank: the finding's ts_rank when set and selected, else its first selected rank; a
//         finding about no rank in particular (a setting, the run) is a global instant
//         ("s":"g") shown under the first selected rank. A finding whose ranks are all
//         outside --ranks is left out.
//   time: ts_ns mapped with ts_rank's clock when both are set (the analyzer knew the
//         moment); else the step_begin of the finding's step on that rank, or on the
//         lowest analysed rank; else the first event the timeline shows for that rank;
//         else the timeline's start.
//   A finding with a step outside --steps is left out; one without a step is kept.
//
// The times come from the timeline's pass over the traces (RankPlacement, one per analysed
// rank): step_begin times are kept for the selected ranks and the lowest analysed rank, in
// the selected steps — the only ones a finding can be placed at.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "analyzers/framework/finding.h"
#include "analyzers/framework/run_context.h"
#include "timeline/selection.h"
#include "trace/rank_clock.h"

namespace dsdiag::timeline {

// What the pass learned about one rank for placing findings.
struct RankPlacement {
  trace::OffsetHistory clock;       // maps a finding's ts_ns
  std::optional<int64_t> first_ns;  // the rank's earliest selected event, rank 0's clock
  // (step, rank 0's time) of its step_begin records, in file order; the first counts.
  std::vector<std::pair<int64_t, int64_t>> step_begins;
  std::optional<int64_t> StepBegin(int64_t step) const;
};

struct PlacedFinding {
  const analyzers::Finding* finding = nullptr;
  int pid = 0;
  char scope = 'p';       // 'p': on its rank's process; 'g': global
  int64_t ts_ns = 0;      // rank 0's clock (not yet relative to the origin)
  bool has_time = false;  // false: nothing placed it; goes at the timeline's start
};

// In the order of `findings` (most severe first). `ranks` is aligned with run.ranks.
std::vector<PlacedFinding> PlaceFindings(const std::vector<analyzers::Finding>& findings,
                                         const analyzers::RunContext& run,
                                         const Selection& selection,
                                         const std::vector<RankPlacement>& ranks);

}  // namespace dsdiag::timeline
