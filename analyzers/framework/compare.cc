#include "analyzers/framework/compare.h"

#include <algorithm>

#include "analyzers/framework/findings_pass.h"
#include "analyzers/framework/registry.h"
#include "analyzers/framework/run_loader.h"

namespace dsdiag::analyzers {
namespace {

RunSummary Summarize(const RunContext& run, const DriveResult& drive) {
  RunSummary summary;
  summary.dir = run.dir;
  summary.run_id = run.run_id;
  summary.world_size = run.world_size;
  summary.ranks_found = run.ranks_found;
  summary.ranks_missing = run.missing_ranks;
  for (const auto& e : run.excluded) summary.ranks_excluded.push_back(e.rank);
  for (const auto& end : drive.ends)
    if (end.last_step_begun) summary.steps = std::max(summary.steps, *end.last_step_begun + 1);
  return summary;
}

ReaderStats CountStats(const RunContext& run, const DriveResult& drive) {
  ReaderStats stats;
  stats.files = static_cast<int64_t>(run.ranks.size());
  stats.files_excluded = static_cast<int64_t>(run.excluded.size());
  stats.flight_dumps = static_cast<int64_t>(run.flight_dumps.size() + run.excluded_dumps.size());
  stats.lockstep = drive.files_kept_open;
  for (const auto& end : drive.ends) {
    stats.records += end.records;
    stats.lines += end.lines_read;
    stats.bytes += end.bytes_read;
    stats.malformed_lines += end.issue_count - (end.truncated_tail ? 1 : 0);
    stats.truncated_tails += end.truncated_tail ? 1 : 0;
  }
  return stats;
}

}  // namespace

bool CompareResult::has_error() const {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.severity == Severity::kError; });
}

CompareResult RunCompare(const std::string& dir, const DriveOptions& options) {
  return RunCompareWith(dir, CreateAllAnalyzers(), options);
}

CompareResult RunCompareWith(const std::string& dir,
                             const std::vector<std::unique_ptr<Analyzer>>& analyzers,
                             const DriveOptions& options) {
  return RunCompareOn(LoadRun(dir), analyzers, options);
}

CompareResult RunCompareOn(const RunContext& run,
                           const std::vector<std::unique_ptr<Analyzer>>& analyzers,
                           const DriveOptions& options) {
  const DriveResult drive = DriveRun(run, analyzers, options);
  CompareResult result;
  for (const auto& a : analyzers) a->Finish(run, &result.findings);
  for (const auto& pass : CreateAllFindingsPasses()) pass->Apply(run, &result.findings);
  for (auto& f : result.findings) NormalizeRanks(&f.ranks);
  SortFindings(&result.findings);
  result.run = Summarize(run, drive);
  result.stats = CountStats(run, drive);
  return result;
}

}  // namespace dsdiag::analyzers
