// The result of `dsdiag loader-sweep`, read from `loader-sweep.json` in the run directory
// (docs/trace-format.md, "Loader-sweep result"):
//
//   {"schema":"dsdiag.loader-sweep/1",
//    "points":[{"workers":4,"batch_size":8,"samples_per_s_median":812.5,
//               "samples_per_s_min":790.1,"samples_per_s_max":830.0,
//               "first_batch_ms":210.4,"peak_rss_mb":1532.0}],
//    "recommendation":{"workers":4,"reason":"..."}}
//
// The report shows it when the file is there. A file that is there but cannot be used
// does not stop the report: the section says what is wrong (file, line, column or field).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dsdiag::report {

inline constexpr char kLoaderSweepFileName[] = "loader-sweep.json";
inline constexpr char kLoaderSweepSchema[] = "dsdiag.loader-sweep/1";

struct SweepPoint {
  int64_t workers = 0;
  int64_t batch_size = 0;
  double samples_per_s_median = 0;
  std::optional<double> samples_per_s_min;
  std::optional<double> samples_per_s_max;
  std::optional<double> first_batch_ms;
  std::optional<double> peak_rss_mb;
};

struct SweepRecommendation {
  int64_t workers = 0;
  std::optional<int64_t> batch_size;
  std::string reason;
};

struct LoaderSweep {
  std::string path;
  std::vector<SweepPoint> points;  // as in the file
  std::optional<SweepRecommendation> recommendation;
};

struct LoaderSweepResult {
  bool present = false;  // the file exists
  std::optional<LoaderSweep> sweep;
  std::string error;  // "FILE:LINE:COL: expected ..., found ..." when present but unusable
};

// Reads RUN_DIR/loader-sweep.json when there is one.
LoaderSweepResult ReadLoaderSweep(const std::string& run_dir);
// Parses the text of such a file (`path` names it in errors).
LoaderSweepResult ParseLoaderSweep(const std::string& text, const std::string& path);

}  // namespace dsdiag::report
