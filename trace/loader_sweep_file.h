// LoaderSweep: `RUN_DIR/loader-sweep.json`, what `dsdiag loader-sweep` (or the Python
// package's sweep over a user's own dataset) measured and recommends
// (docs/trace-format.md, "Loader-sweep result"):
//
//   {"schema":"dsdiag.loader-sweep/1",
//    "points":[{"workers":4,"batch_size":8,"samples_per_s_median":812.5,
//               "samples_per_s_min":790.1,"samples_per_s_max":830.0,
//               "first_batch_ms":210.4,"peak_rss_mb":1532.0}],
//    "recommendation":{"workers":4,"batch_size":8,"reason":"..."}}
//
// One struct, its writer and its reader. The report draws the file when it is there; one that
// is there but cannot be used does not stop the report, its LocatedIssue is shown instead.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/located_issue.h"

namespace dsdiag::trace {

inline constexpr char kLoaderSweepFileName[] = "loader-sweep.json";
inline constexpr std::string_view kLoaderSweepSchema = "dsdiag.loader-sweep/1";

struct LoaderSweepPoint {
  int workers = 0;     // loader worker processes (0: batches made on the training thread)
  int batch_size = 1;  // samples per batch
  double samples_per_s_median = 0;          // throughput, the median over the repeats
  std::optional<double> samples_per_s_min;  // the slowest and fastest repeat
  std::optional<double> samples_per_s_max;
  std::optional<double> first_batch_ms;  // loader start to its first batch
  std::optional<double> peak_rss_mb;     // peak resident memory while measuring this point
  // The DataLoader switches a Python sweep varies (absent: not a dimension of this sweep).
  std::optional<bool> pin_memory;
  std::optional<bool> persistent_workers;
};

struct LoaderSweepRecommendation {
  int workers = 0;
  std::optional<int> batch_size;
  std::string reason;              // one line a human reads
  std::optional<bool> pin_memory;  // as the recommended point's, when the sweep has them
  std::optional<bool> persistent_workers;
};

// ", pin_memory, persistent_workers": the switches that are on, "" when none is (or absent).
std::string LoaderSwitchesText(const std::optional<bool>& pin_memory,
                               const std::optional<bool>& persistent_workers);

struct LoaderSweep {
  std::vector<LoaderSweepPoint> points;  // in the order measured
  std::optional<LoaderSweepRecommendation> recommendation;
};

// The file's text: one '\n'-terminated JSON line. Absent optional numbers are written null.
std::string LoaderSweepJson(const LoaderSweep& sweep);

// What a run directory holds: nothing, a usable sweep, or a file with an issue.
struct LoaderSweepFile {
  bool present = false;  // the file exists
  std::string path;
  std::optional<LoaderSweep> sweep;
  std::optional<LocatedIssue> issue;  // present but unusable
};

LoaderSweepFile ReadLoaderSweepFile(const std::string& run_dir);
// Parses the text of such a file (`path` names it in the issue).
LoaderSweepFile ParseLoaderSweep(const std::string& text, const std::string& path);

}  // namespace dsdiag::trace
