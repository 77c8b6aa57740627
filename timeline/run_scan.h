// First pass of `dsdiag timeline`: what the event pass needs to know before it writes its
// first event, gathered by streaming every rank's trace once.
//
//   - the earliest time the timeline will show (rank 0's clock), so that its timestamps
//     start near 0 (the selected ranks and steps only);
//   - for each collective of the selected steps, when its last rank entered (every rank,
//     selected or not: the others waited for whoever came last) — CollectiveIndex;
//   - each rank's `clock` records and its first selected time, and the step_begin times of
//     the (rank, step) pairs some finding is to be placed at.
//
// Memory: the collective index (O(#collectives), see collective_index.h) plus a few words
// per rank and per finding; nothing grows with the number of records otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "analyzers/run_context.h"
#include "timeline/collective_index.h"
#include "timeline/selection.h"
#include "trace/rank_clock.h"

namespace dsdiag::timeline {

using RankStep = std::pair<int, int64_t>;

struct RankScan {
  trace::OffsetHistory clock;
  std::optional<int64_t> first_ns;  // the rank's earliest selected event, rank 0's clock
};

struct RunScan {
  CollectiveIndex collectives;
  std::vector<RankScan> ranks;              // aligned with RunContext::ranks
  std::map<RankStep, int64_t> step_begins;  // the wanted ones found, rank 0's clock
  std::optional<int64_t> earliest;          // over the selected ranks' events
};

// `done` of `total` ranks scanned.
using ScanProgress = std::function<void(int done, int total)>;

// Throws analyzers::RunInputError when a trace cannot be opened any more.
RunScan ScanRun(const analyzers::RunContext& run, const Selection& selection,
                const std::set<RankStep>& wanted_step_begins, const ScanProgress& progress);

}  // namespace dsdiag::timeline
