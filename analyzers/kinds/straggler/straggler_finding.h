// The straggler verdict and finding: which ranks are late often enough, and by enough, to
// be stragglers (the rules in straggler_analyzer.cc), the phase that explains it, and the
// finding's figures.
#pragma once

#include <optional>
#include <vector>

#include "analyzers/framework/finding.h"
#include "analyzers/kinds/straggler/straggler_stats.h"

namespace dsdiag::analyzers::straggler {

// `ranks` by rank number (absent ranks have present == false), every histogram closed.
std::optional<Finding> JudgeStragglers(const std::vector<RankStats>& ranks);

}  // namespace dsdiag::analyzers::straggler
