// The timeline of a run of PyTorch Flight Recorder dumps alone (analyzers/torch_fr/): one
// process per rank, one track per process group, each collective a span from when the rank
// issued it to when it was seen completing — or, not done, to the rank's last recorded time,
// marked pending — and the findings as instants on the collective they name. Times are the
// dumps' wall clocks (ns since the epoch), from the earliest entry of the run: Flight Recorder
// dumps carry no offset between hosts, so spans of different hosts compare to the accuracy of
// their clocks (NTP: about a millisecond). As Chrome Trace JSON or as a Perfetto trace, the
// latter with a lane per overlap within a group (a track's slices must nest there).
#pragma once

#include <ostream>
#include <vector>

#include "analyzers/framework/finding.h"
#include "analyzers/torch_fr/fr_run.h"
#include "timeline/timeline_collector.h"
#include "timeline/timeline_format.h"

namespace dsdiag::timeline {

TimelineStats WriteTorchFrTimeline(const analyzers::torch_fr::FrRun& run,
                                   const std::vector<analyzers::Finding>& findings,
                                   std::ostream& out,
                                   TimelineFormat format = TimelineFormat::kJson);

}  // namespace dsdiag::timeline
