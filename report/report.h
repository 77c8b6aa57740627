// Report: `dsdiag report` short of the command line — one self-contained HTML page with the
// findings of `dsdiag compare` and inline-SVG charts of the run:
//
//   findings        counts by severity, an index, each finding in full (sections.h)
//   heatmaps        collective wait and arrival delay, rank x step
//   phases          mean step time per rank, stacked by phase
//   loss, scale     per-rank curves of step.loss and scaler.scale
//   loader sweep    RUN_DIR/loader-sweep.json, when present
//   config          header settings that differ across ranks
//
// One streaming pass: the charts' collector (run_collector.h) runs beside compare's
// analyzers in the step driver. Memory is bounded by the chart bins (at most 128 rank rows
// by 200 step columns), the ranks and the findings — not by the number of steps — and the
// page is at most a few tens of thousands of SVG elements however large the run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "analyzers/framework/step_driver.h"
#include "report/collective_waits.h"

namespace dsdiag::report {

struct ReportOptions {
  std::string title;  // empty: "dsdiag report: <run id>"
  // Called at each step every rank has delivered.
  std::function<void(int64_t step)> progress;
  analyzers::DriveOptions drive;
  // How many collective enters the wait computation may hold (collective_waits.h); tests
  // lower it to see the fallback.
  size_t max_held_enters = CollectiveWaits::kMaxHeldEnters;
};

struct ReportStats {
  int64_t findings = 0;
  bool has_error = false;  // a finding of severity error
  int ranks = 0;
  int64_t steps = 0;
  int64_t bytes = 0;  // HTML written
};

// Reads RUN_DIR and writes the page to `out` (check `out` afterwards for write errors).
// Throws analyzers::RunInputError when RUN_DIR cannot be analysed (as `dsdiag compare`).
ReportStats WriteReport(const std::string& run_dir, const ReportOptions& options,
                        std::ostream& out);

}  // namespace dsdiag::report
