// What `dsdiag loader-sweep` measured, and what it recommends: the torch-free half of the
// sweep (the measuring lives in trainer/torch/loader_sweep.h). Written as loader-sweep.json
// ("dsdiag.loader-sweep/1", docs/trace-format.md) and printed as a table.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dsdiag::trainer {

struct LoaderSweepPoint {
  int workers = 0;
  int batch_size = 1;
  double samples_per_s_median = 0;  // over the repeats
  double samples_per_s_min = 0;
  double samples_per_s_max = 0;
  std::optional<double> first_batch_ms;  // loader start to its first batch (median)
  std::optional<double> peak_rss_mb;     // process VmHWM while measuring this point
};

struct LoaderSweepRecommendation {
  int workers = 0;
  int batch_size = 1;
  std::string reason;
};

struct LoaderSweepResult {
  std::vector<LoaderSweepPoint> points;  // in the order measured
  std::optional<LoaderSweepRecommendation> recommendation;
};

// Within this fraction of the fastest median, fewer workers win: a worker costs memory
// and a core the training loop could use.
inline constexpr double kLoaderSweepTolerance = 0.05;

// The fastest median, or the fewest workers (then the smallest batch) within `tolerance`
// of it. nullopt when there is no point.
std::optional<LoaderSweepRecommendation> RecommendLoaderSetting(
    const std::vector<LoaderSweepPoint>& points, double tolerance = kLoaderSweepTolerance);

// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double MedianOf(std::vector<double> values);

std::string LoaderSweepJson(const LoaderSweepResult& result);  // one line, '\n'-terminated
// The table of points, then "recommendation: ..." on its own line.
std::string LoaderSweepTable(const LoaderSweepResult& result);

}  // namespace dsdiag::trainer
