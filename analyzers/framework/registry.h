// The one list of analyzers `dsdiag compare` runs.
#pragma once

#include <memory>
#include <vector>

#include "analyzers/framework/analyzer.h"

namespace dsdiag::analyzers {

// A fresh instance of every analyzer (they keep per-run state), in a fixed order.
std::vector<std::unique_ptr<Analyzer>> CreateAllAnalyzers();

}  // namespace dsdiag::analyzers
