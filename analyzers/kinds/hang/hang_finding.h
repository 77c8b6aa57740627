// The hang finding: the verdict (hang_verdict.h) written up — summary, evidence (the
// stuck collective, the culprits and what they were doing instead, the waiters and since
// when, other collectives some ranks were stuck in, a cut link) and hint.
#pragma once

#include <vector>

#include "analyzers/framework/finding.h"
#include "analyzers/kinds/hang/hang_evidence.h"
#include "analyzers/kinds/hang/hang_verdict.h"

namespace dsdiag::analyzers::hang {

Finding MakeHangFinding(const HangRun& run, const std::vector<Witness>& witnesses,
                        const HangVerdict& verdict);

}  // namespace dsdiag::analyzers::hang
