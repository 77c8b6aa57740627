// The findings of `dsdiag compare` on a Perfetto timeline (perfetto_trace_writer.h): each
// an instant "severity: kind" with its kind, severity, summary, subject, step, ranks and
// hint as annotations, placed as on the JSON timeline (finding_placement.h) — on its rank's
// "findings" track, or on a top-level "findings" track when it is about no rank in
// particular. A rank without a usable trace gets a track "rank R (no usable trace)" for
// its findings. They are written on a sequence of their own, with names spelled inline.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "timeline/finding_placement.h"
#include "timeline/perfetto_trace_writer.h"

namespace dsdiag::timeline {

// `written`: the ranks whose tracks the timeline has; `start_ns`: where a finding that
// nothing placed goes (the timeline's start).
void WritePerfettoFindings(const std::vector<PlacedFinding>& placed, const std::set<int>& written,
                           int64_t start_ns, PerfettoTraceWriter* out);

}  // namespace dsdiag::timeline
