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
// Placement needs step_begin times, which only the first pass reads: StepBeginsWanted says
// which ones before that pass, PlaceFindings uses what it found.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "analyzers/finding.h"
#include "analyzers/run_context.h"
#include "timeline/run_scan.h"
#include "timeline/selection.h"

namespace dsdiag::timeline {

struct PlacedFinding {
  const analyzers::Finding* finding = nullptr;
  int pid = 0;
  char scope = 'p';       // 'p': on its rank's process; 'g': global
  int64_t ts_ns = 0;      // rank 0's clock (not yet relative to the origin)
  bool has_time = false;  // false: nothing placed it; goes at the timeline's start
};

std::set<RankStep> StepBeginsWanted(const std::vector<analyzers::Finding>& findings,
                                    const analyzers::RunContext& run, const Selection& selection);

// In the order of `findings` (most severe first).
std::vector<PlacedFinding> PlaceFindings(const std::vector<analyzers::Finding>& findings,
                                         const analyzers::RunContext& run,
                                         const Selection& selection, const RunScan& scan);

}  // namespace dsdiag::timeline
