// RunCompare: the whole of `dsdiag compare` short of printing — load RUN_DIR, stream every
// rank through every analyzer, collect and order the findings.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzers/framework/analyzer.h"
#include "analyzers/framework/finding.h"
#include "analyzers/framework/run_context.h"
#include "analyzers/framework/step_driver.h"
#include "analyzers/torch_fr/fr_run.h"

namespace dsdiag::analyzers {

// What the reader went through, shown to the user (like trace_processor's stats): a run
// whose traces lost lines says so even when no analyzer tripped over it.
struct ReaderStats {
  int64_t files = 0;           // rank traces analysed
  int64_t files_excluded = 0;  // rank traces left out (trace-corrupt errors)
  int64_t flight_dumps = 0;
  int64_t records = 0;  // valid records, headers included
  int64_t lines = 0;
  int64_t bytes = 0;
  int64_t malformed_lines = 0;  // skipped lines, truncated tails excluded
  int64_t truncated_tails = 0;  // files whose last line was cut short
  // False when the run had more ranks than dsdiag keeps files open for: they were closed
  // between step windows and reopened, or, compressed, read one rank at a time
  // (DriveResult::files_kept_open; the name predates step windows).
  bool lockstep = true;
};

struct RunSummary {
  std::string dir;  // as given
  std::string run_id;
  int world_size = 0;
  std::vector<int> ranks_found;     // analysed ranks
  std::vector<int> ranks_missing;   // no trace file
  std::vector<int> ranks_excluded;  // a trace file the analysis could not use
  int64_t steps = 0;                // highest step begun on any rank + 1 (0 when none began)
};

struct CompareResult {
  RunSummary run;
  std::vector<Finding> findings;  // sorted (finding.h)
  ReaderStats stats;
  bool has_error() const;
};

// Which inputs of RUN_DIR to read besides dsdiag's own traces.
struct InputOptions {
  // The file-name prefix of PyTorch Flight Recorder dumps (`nccl_trace_rank_`); none: any
  // prefix, the set with most files (analyzers/torch_fr/fr_run.h).
  std::optional<std::string> torch_fr_prefix;
};

// Throws RunInputError (run_loader.h) when RUN_DIR cannot be analysed at all. A RUN_DIR of
// PyTorch Flight Recorder dumps and no rank traces is analysed from the dumps alone
// (analyzers/torch_fr/); dumps beside rank traces add the findings of a kind the traces'
// analysis did not make.
CompareResult RunCompare(const std::string& dir, const DriveOptions& options = {},
                         const InputOptions& input = {});

// RUN_DIR's Flight Recorder dumps when it holds no rank trace, else nullopt: the run that
// `timeline` and `report` draw from the dumps alone. Throws RunInputError when RUN_DIR
// cannot be listed.
std::optional<torch_fr::FrRun> LoadFrOnlyRun(const std::string& dir,
                                             const InputOptions& input = {});
// The comparison of such a run (RunCompare's for it).
CompareResult CompareFrRun(const torch_fr::FrRun& run);
// The same with a chosen set of analyzers (tests, or a future --only flag).
CompareResult RunCompareWith(const std::string& dir,
                             const std::vector<std::unique_ptr<Analyzer>>& analyzers,
                             const DriveOptions& options = {});
// The same on a run already loaded (LoadRun), e.g. with a timeline or report collector
// among the analyzers riding the same pass.
CompareResult RunCompareOn(const RunContext& run,
                           const std::vector<std::unique_ptr<Analyzer>>& analyzers,
                           const DriveOptions& options = {});

}  // namespace dsdiag::analyzers
