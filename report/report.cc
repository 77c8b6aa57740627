#include "report/report.h"

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "analyzers/framework/compare.h"
#include "analyzers/framework/registry.h"
#include "report/run_collector.h"
#include "report/sections.h"
#include "trace/loader_sweep_file.h"

namespace dsdiag::report {

ReportStats WriteReport(const std::string& run_dir, const ReportOptions& options,
                        std::ostream& out) {
  std::vector<std::unique_ptr<analyzers::Analyzer>> analyzers = analyzers::CreateAllAnalyzers();
  auto collector = std::make_unique<RunCollector>(options.progress, options.max_held_enters);
  const RunCollector& data = *collector;
  analyzers.push_back(std::move(collector));
  // A run of Flight Recorder dumps alone has findings and no records to chart.
  const std::optional<analyzers::torch_fr::FrRun> fr = analyzers::LoadFrOnlyRun(run_dir);
  if (fr) analyzers.back()->Begin(analyzers::RunContext{});  // the collector: no rank, no record
  const analyzers::CompareResult compare =
      fr ? analyzers::CompareFrRun(*fr)
         : analyzers::RunCompareWith(run_dir, analyzers, options.drive);
  const trace::LoaderSweepFile sweep = trace::ReadLoaderSweepFile(run_dir);

  const std::string title =
      options.title.empty() ? "dsdiag report: " + compare.run.run_id : options.title;
  ReportStats stats;
  stats.findings = static_cast<int64_t>(compare.findings.size());
  stats.has_error = compare.has_error();
  stats.ranks = static_cast<int>(compare.run.ranks_found.size());
  stats.steps = compare.run.steps;

  // Section by section, so that only one section's text is held at a time.
  std::string chunk;
  auto flush = [&] {
    out << chunk;
    stats.bytes += static_cast<int64_t>(chunk.size());
    chunk.clear();
  };
  AppendPageStart(title, compare, data, sweep.present, &chunk);
  AppendFindingsSection(compare, &chunk);
  flush();
  AppendHeatmapSections(data, &chunk);
  flush();
  AppendPhaseSection(data, &chunk);
  AppendCurveSections(data, &chunk);
  AppendLoaderSweepSection(sweep, &chunk);
  AppendConfigSection(data.config(), &chunk);
  AppendPageEnd(compare, &chunk);
  flush();
  return stats;
}

}  // namespace dsdiag::report
