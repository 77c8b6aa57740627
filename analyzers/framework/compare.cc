#include "analyzers/framework/compare.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "analyzers/framework/findings_pass.h"
#include "analyzers/framework/registry.h"
#include "analyzers/framework/run_loader.h"
#include "analyzers/torch_fr/fr_compare.h"
#include "analyzers/torch_fr/fr_run.h"
#include "trace/run_files.h"

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

// Any `rank-<R>.jsonl[.zst]` in the directory (a directory that cannot be listed counts as
// having some: the run loader then says what is wrong with it).
bool HasRankTraces(const std::string& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec), end;
  if (ec) return true;
  for (; it != end; it.increment(ec)) {
    if (ec) return true;
    if (trace::ParseRankTraceFileName(it->path().filename().string())) return true;
  }
  return false;
}

}  // namespace

CompareResult CompareFrRun(const torch_fr::FrRun& fr) {
  CompareResult result;
  result.findings = torch_fr::AnalyzeFrRun(fr);
  for (auto& f : result.findings) NormalizeRanks(&f.ranks);
  SortFindings(&result.findings);
  result.run.dir = fr.dir;
  result.run.run_id = fr.prefix + "*";
  result.run.world_size = fr.world_size;
  for (const auto& d : fr.dumps) result.run.ranks_found.push_back(d.rank);
  result.run.ranks_missing = fr.missing_ranks;
  result.stats.flight_dumps = static_cast<int64_t>(fr.dumps.size() + fr.unreadable.size());
  return result;
}

std::optional<torch_fr::FrRun> LoadFrOnlyRun(const std::string& dir, const InputOptions& input) {
  if (HasRankTraces(dir)) return std::nullopt;
  return torch_fr::LoadFrRun(dir, input.torch_fr_prefix);
}

namespace {

// Dumps beside dsdiag's traces: what the traces did not already say.
void AddFrFindings(const torch_fr::FrRun& fr, CompareResult* result) {
  std::set<std::string> kinds;
  for (const Finding& f : result->findings) kinds.insert(f.kind);
  for (Finding& f : torch_fr::AnalyzeFrRun(fr)) {
    if (kinds.count(f.kind)) continue;
    NormalizeRanks(&f.ranks);
    result->findings.push_back(std::move(f));
  }
  SortFindings(&result->findings);
  result->stats.flight_dumps += static_cast<int64_t>(fr.dumps.size());
}

}  // namespace

bool CompareResult::has_error() const {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.severity == Severity::kError; });
}

CompareResult RunCompare(const std::string& dir, const DriveOptions& options,
                         const InputOptions& input) {
  if (std::optional<torch_fr::FrRun> fr = LoadFrOnlyRun(dir, input)) return CompareFrRun(*fr);
  CompareResult result = RunCompareWith(dir, CreateAllAnalyzers(), options);
  if (std::optional<torch_fr::FrRun> fr = torch_fr::LoadFrRun(dir, input.torch_fr_prefix)) {
    AddFrFindings(*fr, &result);
  }
  return result;
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
