// What `dsdiag loader-sweep` makes of its measurements: the recommendation and the table a
// person reads. The torch-free half of the sweep: the measuring lives in
// trainer/torch/loader_sweep.h, the file it writes (loader-sweep.json) in
// trace/loader_sweep_file.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trace/loader_sweep_file.h"

namespace dsdiag::trainer {

// Within this fraction of the fastest median, fewer workers win: a worker costs memory
// and a core the training loop could use.
inline constexpr double kLoaderSweepTolerance = 0.05;

// The fastest median, or the fewest workers (then the smallest batch) within `tolerance`
// of it. nullopt when there is no point.
std::optional<trace::LoaderSweepRecommendation> RecommendLoaderSetting(
    const std::vector<trace::LoaderSweepPoint>& points, double tolerance = kLoaderSweepTolerance);

// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double MedianOf(std::vector<double> values);

// The table of points, then "recommendation: ..." on its own line.
std::string LoaderSweepTable(const trace::LoaderSweep& sweep);

}  // namespace dsdiag::trainer
