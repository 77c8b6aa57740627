// What a loader sweep's measurements come to: the recommendation and the table a person
// reads, beside the file format they go into (trace/loader_sweep_file.h). Shared by
// `dsdiag loader-sweep` (the trainer's pipeline, trainer/torch/loader_sweep.h measures) and
// the Python package's sweep over a user's own dataset.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trace/loader_sweep_file.h"

namespace dsdiag::trace {

// Within this fraction of the fastest median, fewer workers win: a worker costs memory
// and a core the training loop could use.
inline constexpr double kLoaderSweepTolerance = 0.05;

// The fastest median, or the fewest workers (then the smallest batch) within `tolerance`
// of it. nullopt when there is no point.
std::optional<LoaderSweepRecommendation> RecommendLoaderSetting(
    const std::vector<LoaderSweepPoint>& points, double tolerance = kLoaderSweepTolerance);

// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double MedianOf(std::vector<double> values);

// The table of points, then "recommendation: ..." on its own line.
std::string LoaderSweepTable(const LoaderSweep& sweep);

}  // namespace dsdiag::trace
