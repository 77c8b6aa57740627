#include "timeline/timeline.h"

#include <algorithm>
#include <set>
#include <string>

#include "timeline/chrome_trace_writer.h"
#include "timeline/finding_placement.h"
#include "timeline/rank_events.h"
#include "timeline/run_scan.h"

namespace dsdiag::timeline {
namespace {

using analyzers::Finding;

std::string StepsText(const StepRange& steps) {
  if (steps.unbounded()) return "all";
  return (steps.first ? std::to_string(*steps.first) : "") + ":" +
         (steps.last ? std::to_string(*steps.last) : "");
}

void WriteFinding(const PlacedFinding& p, int64_t origin, ChromeTraceWriter* out) {
  const Finding& f = *p.finding;
  const std::string_view severity = analyzers::SeverityName(f.severity);
  auto e = out->Instant(std::string(severity) + ": " + f.kind, "finding", p.scope, p.pid, 0,
                        p.has_time ? p.ts_ns - origin : 0);
  auto& a = e.Args();
  a.Field("kind", f.kind).Field("severity", severity).Field("summary", f.summary);
  if (f.subject) {
    a.Field("subject", *f.subject);
  } else {
    a.Null("subject");
  }
  if (f.step) {
    a.Field("step", *f.step);
  } else {
    a.Null("step");
  }
  a.Field("ranks", analyzers::FormatRankRanges(f.ranks));
  if (!f.hint.empty()) a.Field("hint", f.hint);
  e.EndArgs();
}

// Findings about a rank without a usable trace (missing, excluded) still get a named
// process, so that "Process 3" reads "rank 3 (no usable trace)".
void NameTracelessRanks(const std::vector<PlacedFinding>& placed, const std::set<int>& written,
                        ChromeTraceWriter* out) {
  std::set<int> named;
  for (const auto& p : placed) {
    if (written.count(p.pid) || !named.insert(p.pid).second) continue;
    {
      auto e = out->Metadata("process_name", p.pid, 0);
      e.Args().Field("name", "rank " + std::to_string(p.pid) + " (no usable trace)");
      e.EndArgs();
    }
    auto e = out->Metadata("process_sort_index", p.pid, 0);
    e.Args().Field("sort_index", p.pid);
    e.EndArgs();
  }
}

trace::JsonValue OtherData(const analyzers::RunContext& run, const TimelineOptions& options,
                           const TimelineStats& stats) {
  trace::JsonValue d = trace::JsonValue::Object();
  d.Set("generator", "dsdiag timeline " DSDIAG_VERSION);
  d.Set("run_dir", run.dir);
  d.Set("run_id", run.run_id);
  d.Set("world_size", run.world_size);
  d.Set("clock", "rank 0 wall clock; ts 0 = origin_unix_ns");
  d.Set("origin_unix_ns", stats.origin_unix_ns);
  d.Set("ranks", options.selection.ranks.ToString());
  d.Set("steps", StepsText(options.selection.steps));
  d.Set("collectives", stats.collectives);
  d.Set("findings", stats.findings);
  return d;
}

}  // namespace

TimelineStats WriteTimeline(const analyzers::RunContext& run, const std::vector<Finding>& findings,
                            const TimelineOptions& options, std::ostream& out) {
  const Selection& selection = options.selection;
  const RunScan scan =
      ScanRun(run, selection, StepBeginsWanted(findings, run, selection), [&](int done, int total) {
        if (options.progress) options.progress(1, done, total);
      });
  const std::vector<PlacedFinding> placed = PlaceFindings(findings, run, selection, scan);

  TimelineStats stats;
  std::optional<int64_t> origin = scan.earliest;
  for (const auto& p : placed)
    if (p.has_time) origin = std::min(origin.value_or(p.ts_ns), p.ts_ns);
  stats.origin_unix_ns = origin.value_or(0);
  stats.collectives = scan.collectives.size();

  ChromeTraceWriter writer(&out);
  std::set<int> written;
  int selected_total = 0;
  for (const auto& r : run.ranks) selected_total += selection.ranks.Contains(r.rank) ? 1 : 0;
  for (const auto& r : run.ranks) {
    if (!selection.ranks.Contains(r.rank)) continue;
    WriteRankEvents(r, selection.steps, scan.collectives, stats.origin_unix_ns, &writer);
    written.insert(r.rank);
    if (options.progress) options.progress(2, static_cast<int>(written.size()), selected_total);
  }
  NameTracelessRanks(placed, written, &writer);
  for (const auto& p : placed) WriteFinding(p, stats.origin_unix_ns, &writer);

  stats.ranks = static_cast<int>(written.size());
  stats.findings = static_cast<int64_t>(placed.size());
  stats.events = writer.events();
  writer.Finish(OtherData(run, options, stats));
  return stats;
}

}  // namespace dsdiag::timeline
