// The hang and rank-died rules over Flight Recorder dumps.
//
// In each group, the ranks whose last op is the group's highest sequence number and not
// done are waiting in it; the group's other ranks never joined it. Of those, a rank waiting
// in another group's collective is held there (its hang is that group's: this one is a
// follow-on, a warning); a rank with a dump and no op pending anywhere is the culprit — it
// skipped the collective, blocks in Python, or went on elsewhere — an error naming it, the
// collective, and each rank's last done and pending op with the line that issued it; a rank
// of the job with no dump at all is `rank-died` (it died, was killed, or never dumped), with
// what its peers wait for, and a culprit of the hang too. When every rank of a group waits
// in the same op, none is missing: the hang says so (a mismatch or the backend, not a rank);
// at a seq the ranks disagree on, it is the mismatch's follow-on (info).
//
// Dumps written after the failure — by the job's except handler once the collective raised,
// by a SIGTERM handler when the launcher stopped a stuck rank, at the job's end — hold no
// pending op: Gloo retires a collective that timed out or failed (its peer gone) and counts
// it in pg_status's last_completed_collective exactly as one that succeeded. There only where
// each rank's stream ends tells: the ranks that reached the group's last seq waited in it, the
// others never issued it (each rank dumps once, at its end, and issues nothing after). A
// culprit whose own last collective completed was outside any collective when it dumped (a
// loader, a blocking call, a signal handler). A rank with no dump is rank-died, with the
// collective its peers last issued; when that collective is a collective-mismatch, the death
// is its follow-on (info): Gloo aborts a rank that receives more bytes than it posted.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analyzers/framework/finding.h"
#include "analyzers/torch_fr/fr_groups.h"

namespace dsdiag::analyzers::torch_fr {

// `mismatched`: the (group name, seq) of the collective-mismatch findings, whose hang is
// theirs (an info follow-on), as is a missing rank's death in the collective its peers ended
// in; `parted`: the groups whose streams parted earlier (fr_parting.h): their hang is the
// parting's follow-on.
void FindHangs(const FrRun& run, const std::vector<FrGroup>& groups,
               const std::set<std::pair<std::string, int64_t>>& mismatched,
               const std::set<std::string>& parted, std::vector<Finding>* findings);

}  // namespace dsdiag::analyzers::torch_fr
