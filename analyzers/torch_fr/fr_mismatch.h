// The collective-mismatch rule over Flight Recorder dumps: at one sequence number of one
// group, the ranks' entries disagree on the op, the input sizes or the dtypes.
//
// The odd rank is named by what the others say, never by rank order (torch's fr_trace
// compares every rank with the first, so when the first is the odd one it names the healthy
// ones): a strict majority of the ranks that have the entry; without one (two ranks), the
// group's history — a rank whose op, sizes and dtypes are those of an earlier collective
// every rank agreed on keeps its word, a rank that sends something new is the odd one;
// when neither tells, every rank of the entry is named and the finding says so. One finding
// per group: the first seq that disagrees (what follows a mismatch is its consequence); the
// evidence counts the later ones.
//
// Dumps written after the failure may hold one side only: a rank Gloo aborted for receiving
// more bytes than it posted leaves no dump. When ranks left none and fewer than two dumps hold
// the collective the others ended in, a dumped rank whose entry there differs in size or dtype
// from every earlier entry its same line issued is named (`basis` `call-site history`).
#pragma once

#include <vector>

#include "analyzers/framework/finding.h"
#include "analyzers/torch_fr/fr_groups.h"

namespace dsdiag::analyzers::torch_fr {

void FindMismatches(const FrRun& run, const std::vector<FrGroup>& groups,
                    std::vector<Finding>* findings);

}  // namespace dsdiag::analyzers::torch_fr
