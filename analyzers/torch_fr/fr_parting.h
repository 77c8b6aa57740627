// Where the ranks' collective streams parted, from the Flight Recorder's frames: the first
// sequence number of a group from which the ranks issued their collectives from different
// lines of the job, while op, sizes and dtypes still agree.
//
// A rank that skips a collective of the same op and size as its neighbour (a metrics
// all_reduce beside the gradients') fails nothing where it skips: its next collective pairs
// with the others' skipped one, and so on, and the job fails only at the end of the streams,
// one collective short. torch's fr_trace compares op and sizes only, so it sees nothing
// there; the frames (the Python line that issued each entry) do. The parting is the start of
// the run of sequence numbers, up to the last one every member recorded, at which the ranks'
// call sites differ (a rank-dependent branch that issues the same collective from two lines
// and joins again is no parting: its sites agree again after it). It is a finding only when
// the streams do not end together — the ranks' last sequence numbers differ, or a later
// collective's op, size or dtype differs — for a rank-dependent line alone proves nothing.
//
// The odd rank: the ranks a strict majority of call sites contradicts; with no majority (two
// ranks), the one whose call site never followed the previous one in the group's history
// (every earlier step issued the metrics after the gradients: the rank that issued the
// gradients twice in a row broke the pattern); else every rank. How it parted: the odd rank's
// call site is the majority's next one (it skipped one), or its next is the majority's
// (it issued one more), or neither.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analyzers/framework/finding.h"
#include "analyzers/torch_fr/fr_groups.h"

namespace dsdiag::analyzers::torch_fr {

struct FrParting {
  const FrGroup* group = nullptr;
  int64_t seq = 0;
  std::vector<int> odd;
  std::string basis;                 // "majority", "history", "none"
  std::string how;                   // "skipped", "extra", "other"
  std::map<int, const FrEntry*> at;  // each member's entry at `seq`
};

// One per group whose streams parted (none in a point-to-point group).
std::vector<FrParting> FindPartings(const FrRun& run, const std::vector<FrGroup>& groups);

// The collective-mismatch finding that names the parting.
Finding PartingFinding(const FrRun& run, const FrParting& parting);

}  // namespace dsdiag::analyzers::torch_fr
