#include "timeline/timeline.h"

#include <cstdlib>
#include <memory>
#include <utility>

#include "analyzers/framework/registry.h"

namespace dsdiag::timeline {
namespace {

std::string SpoolDir(const TimelineOptions& options) {
  if (!options.spool_dir.empty()) return options.spool_dir;
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

}  // namespace

TimelineResult WriteTimeline(const analyzers::RunContext& run, const TimelineOptions& options,
                             std::ostream& out) {
  std::vector<std::unique_ptr<analyzers::Analyzer>> analyzers = analyzers::CreateAllAnalyzers();
  auto owned = std::make_unique<TimelineCollector>(options.selection, SpoolDir(options),
                                                   options.format, &out);
  TimelineCollector& collector = *owned;
  analyzers.push_back(std::move(owned));
  TimelineResult result;
  result.compare = analyzers::RunCompareOn(run, analyzers, options.drive);
  result.stats = collector.Write(run, result.compare.findings, options.progress);
  return result;
}

TimelineStats WriteTimeline(const analyzers::RunContext& run,
                            const std::vector<analyzers::Finding>& findings,
                            const TimelineOptions& options, std::ostream& out) {
  std::vector<std::unique_ptr<analyzers::Analyzer>> analyzers;
  auto owned = std::make_unique<TimelineCollector>(options.selection, SpoolDir(options),
                                                   options.format, &out);
  TimelineCollector& collector = *owned;
  analyzers.push_back(std::move(owned));
  analyzers::DriveRun(run, analyzers, options.drive);
  return collector.Write(run, findings, options.progress);
}

}  // namespace dsdiag::timeline
