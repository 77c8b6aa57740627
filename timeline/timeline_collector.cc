#include "timeline/timeline_collector.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "timeline/chrome_trace_writer.h"
#include "timeline/finding_args.h"
#include "timeline/perfetto_findings.h"
#include "trace/record_types.h"
#include "trace/records/coll_record.h"

namespace dsdiag::timeline {

namespace records = trace::records;
namespace {

using analyzers::Finding;

std::string StepsText(const StepRange& steps) {
  if (steps.unbounded()) return "all";
  return (steps.first ? std::to_string(*steps.first) : "") + ":" +
         (steps.last ? std::to_string(*steps.last) : "");
}

void WriteFinding(const PlacedFinding& p, int64_t origin, ChromeTraceWriter* out) {
  auto e = out->Instant(FindingEventName(*p.finding), "finding", p.scope, p.pid, 0,
                        p.has_time ? p.ts_ns - origin : 0);
  AddFindingArgs(*p.finding, &e.Args());
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

trace::JsonValue OtherData(const analyzers::RunContext& run, const Selection& selection,
                           const TimelineStats& stats) {
  trace::JsonValue d = trace::JsonValue::Object();
  d.Set("generator", "dsdiag timeline " DSDIAG_VERSION);
  d.Set("run_dir", run.dir);
  d.Set("run_id", run.run_id);
  d.Set("world_size", run.world_size);
  d.Set("clock", "rank 0 wall clock; ts 0 = origin_unix_ns");
  d.Set("origin_unix_ns", stats.origin_unix_ns);
  d.Set("ranks", selection.ranks.ToString());
  d.Set("steps", StepsText(selection.steps));
  d.Set("collectives", stats.collectives);
  d.Set("findings", stats.findings);
  return d;
}

}  // namespace

TimelineCollector::TimelineCollector(Selection selection, std::string spool_dir,
                                     TimelineFormat format, std::ostream* out)
    : selection_(std::move(selection)),
      spool_dir_(std::move(spool_dir)),
      format_(format),
      out_(out) {}

TimelineCollector::~TimelineCollector() = default;

void TimelineCollector::Begin(const analyzers::RunContext& run) {
  int max_rank = -1;
  for (const auto& r : run.ranks) max_rank = std::max(max_rank, r.rank);
  index_of_rank_.assign(static_cast<size_t>(max_rank + 1), -1);
  ranks_.resize(run.ranks.size());
  placement_.resize(run.ranks.size());
  size_t selected = 0;
  for (size_t i = 0; i < run.ranks.size(); ++i) {
    const analyzers::RankInfo& info = run.ranks[i];
    index_of_rank_[static_cast<size_t>(info.rank)] = static_cast<int>(i);
    RankState& s = ranks_[i];
    s.clock = trace::RankClock(info.header.clock);
    placement_[i].clock = trace::OffsetHistory(info.header.clock);
    s.selected = selection_.ranks.Contains(info.rank);
    s.keeps_step_begins = s.selected || i == 0;
    if (s.selected) s.spool = static_cast<int>(selected++);
  }
  if (format_ == TimelineFormat::kPerfetto) {
    perfetto_ = std::make_unique<PerfettoTraceWriter>(out_, spool_dir_);
  } else {
    spool_ = std::make_unique<SpoolFile>(spool_dir_, selected);
  }
  for (size_t i = 0; i < run.ranks.size(); ++i) {
    RankState& s = ranks_[i];
    if (!s.selected) continue;
    if (perfetto_) {
      s.events = std::make_unique<RankEvents>(run.ranks[i], selection_.steps, perfetto_.get());
    } else {
      s.events = std::make_unique<RankEvents>(run.ranks[i], selection_.steps,
                                              spool_->rank(static_cast<size_t>(s.spool)));
    }
  }
}

void TimelineCollector::OnRecord(const analyzers::RankInfo& rank, const trace::Record& r) {
  const size_t i = static_cast<size_t>(index_of_rank_[static_cast<size_t>(rank.rank)]);
  RankState& s = ranks_[i];
  const int type = r.type_id();
  if (type == trace::rec_id::kClock) {
    s.clock.Refine(r);
    placement_[i].clock.Add(r);
    return;
  }
  if (type == trace::rec_id::kThread) {
    if (s.events) s.events->OnRecord(r, 0);  // names a thread, whatever the steps shown
    return;
  }
  if (!selection_.steps.Contains(r.step())) return;
  const int64_t t = s.clock.ToRank0(r.ts());
  if (type == trace::rec_id::kCollective) {
    const auto pg = records::CollView(r).pg();
    const auto seq = records::CollView(r).seq();
    if (pg && seq) collectives_.Add(*pg, *seq, t, rank.rank);
  } else if (type == trace::rec_id::kStepBegin && s.keeps_step_begins) {
    placement_[i].step_begins.emplace_back(r.step(), t);
  }
  if (!s.selected) return;
  if (MakesEvent(type)) {
    placement_[i].first_ns = std::min(placement_[i].first_ns.value_or(t), t);
    earliest_ = std::min(earliest_.value_or(t), t);
  }
  s.events->OnRecord(r, t);
}

void TimelineCollector::OnRankEnd(const analyzers::RankInfo& rank, const analyzers::RankEnd&) {
  RankState& s = ranks_[static_cast<size_t>(index_of_rank_[static_cast<size_t>(rank.rank)])];
  if (s.events) s.events->End();
}

TimelineStats TimelineCollector::Write(const analyzers::RunContext& run,
                                       const std::vector<Finding>& findings,
                                       const std::function<void(int, int)>& progress) {
  const std::vector<PlacedFinding> placed = PlaceFindings(findings, run, selection_, placement_);
  TimelineStats stats;
  std::optional<int64_t> origin = earliest_;
  for (const auto& p : placed)
    if (p.has_time) origin = std::min(origin.value_or(p.ts_ns), p.ts_ns);
  stats.origin_unix_ns = origin.value_or(0);
  stats.collectives = collectives_.size();
  stats.findings = static_cast<int64_t>(placed.size());
  for (size_t i = 0; i < ranks_.size(); ++i)
    if (ranks_[i].selected) ++stats.ranks;
  if (perfetto_) return WritePerfetto(run, placed, stats, progress);
  return WriteJson(run, placed, stats, progress);
}

TimelineStats TimelineCollector::WriteJson(const analyzers::RunContext& run,
                                           const std::vector<PlacedFinding>& placed,
                                           TimelineStats stats,
                                           const std::function<void(int, int)>& progress) {
  ChromeTraceWriter writer(out_);
  std::set<int> written;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    if (!ranks_[i].selected) continue;
    spool_->Replay(static_cast<size_t>(ranks_[i].spool), collectives_, stats.origin_unix_ns,
                   &writer);
    written.insert(run.ranks[i].rank);
    if (progress) progress(static_cast<int>(written.size()), stats.ranks);
  }
  NameTracelessRanks(placed, written, &writer);
  for (const auto& p : placed) WriteFinding(p, stats.origin_unix_ns, &writer);

  stats.events = writer.events();
  writer.Finish(OtherData(run, selection_, stats));
  return stats;
}

// Every rank's events went out during the pass but its collectives, which go now.
TimelineStats TimelineCollector::WritePerfetto(const analyzers::RunContext& run,
                                               const std::vector<PlacedFinding>& placed,
                                               TimelineStats stats,
                                               const std::function<void(int, int)>& progress) {
  perfetto_->WriteDeferred(collectives_);
  std::set<int> written;
  for (size_t i = 0; i < ranks_.size(); ++i)
    if (ranks_[i].selected) written.insert(run.ranks[i].rank);
  WritePerfettoFindings(placed, written, stats.origin_unix_ns, perfetto_.get());
  perfetto_->Finish();
  stats.events = perfetto_->packets();
  if (progress) progress(stats.ranks, stats.ranks);
  return stats;
}

}  // namespace dsdiag::timeline
