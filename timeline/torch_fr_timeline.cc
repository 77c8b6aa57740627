#include "timeline/torch_fr_timeline.h"

#include <algorithm>
#include <climits>
#include <string>

#include "analyzers/torch_fr/fr_groups.h"
#include "timeline/chrome_trace_writer.h"

namespace dsdiag::timeline {
namespace {

namespace fr = analyzers::torch_fr;

int Pid(int rank) { return rank + 1; }

// The earliest and latest wall time any entry of the run carries.
struct Span {
  int64_t first = INT64_MAX;
  int64_t last = INT64_MIN;
  void Add(int64_t t) {
    first = std::min(first, t);
    last = std::max(last, t);
  }
};

Span TimesOf(const fr::FrRankDump& d) {
  Span s;
  for (const fr::FrEntry& e : d.entries) {
    if (e.created_ns != fr::FrEntry::kNoTime) s.Add(e.created_ns);
    if (e.completed_ns != fr::FrEntry::kNoTime) s.Add(e.completed_ns);
  }
  return s;
}

void NameProcess(ChromeTraceWriter* w, const fr::FrRankDump& d) {
  auto e = w->Metadata("process_name", Pid(d.rank), 0);
  e.Args().Field("name", "rank " + std::to_string(d.rank) + " (" + d.file_name + ")");
  e.EndArgs();
}

void NameTrack(ChromeTraceWriter* w, int rank, int tid, const fr::FrGroup& g) {
  auto e = w->Metadata("thread_name", Pid(rank), tid);
  e.Args().Field("name", g.Label());
  e.EndArgs();
}

// One collective of one rank: issued -> completed, or -> `rank_end` when not done.
void WriteOp(ChromeTraceWriter* w, const fr::FrRun& run, int rank, int tid, const fr::FrGroup& g,
             const fr::FrOp& op, int64_t next_created, int64_t rank_end, int64_t origin) {
  const fr::FrEntry& e = *op.entry;
  if (e.created_ns == fr::FrEntry::kNoTime) return;
  const int64_t start = e.created_ns;
  int64_t end = op.done ? next_created : rank_end;
  if (e.completed_ns != fr::FrEntry::kNoTime) end = e.completed_ns;
  end = std::max(end, start);
  const std::string name = run.Str(e.op) + " #" + std::to_string(op.seq);
  auto ev = w->Complete(name, op.done ? "coll" : "coll,pending", Pid(rank), tid, start - origin,
                        end - start);
  auto& a = ev.Args();
  a.Field("group", g.name()).Field("seq", op.seq).Field("done", op.done);
  a.Field("torch_state", trace::TorchFrStateName(e.state));
  a.Field("elements", e.numel);
  if (!run.Str(e.dtypes).empty()) a.Field("dtype", run.Str(e.dtypes));
  if (!run.Str(e.where).empty()) a.Field("python_where", run.Str(e.where));
  ev.EndArgs();
}

}  // namespace

TimelineStats WriteTorchFrTimeline(const fr::FrRun& run,
                                   const std::vector<analyzers::Finding>& findings,
                                   std::ostream& out) {
  Span all;
  for (const fr::FrRankDump& d : run.dumps) {
    const Span s = TimesOf(d);
    if (s.first <= s.last) all.Add(s.first), all.Add(s.last);
  }
  const int64_t origin = all.first <= all.last ? all.first : 0;
  ChromeTraceWriter w(&out);
  TimelineStats stats;
  const std::vector<fr::FrGroup> groups = fr::BuildGroups(run);
  for (const fr::FrRankDump& d : run.dumps) {
    NameProcess(&w, d);
    ++stats.ranks;
    const Span mine = TimesOf(d);
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const fr::FrRankOps* ops = groups[gi].Of(d.rank);
      if (ops == nullptr) continue;
      const int tid = static_cast<int>(gi);
      NameTrack(&w, d.rank, tid, groups[gi]);
      for (size_t i = 0; i < ops->ops.size(); ++i) {
        const fr::FrOp& op = ops->ops[i];
        const bool has_next =
            i + 1 < ops->ops.size() && ops->ops[i + 1].entry->created_ns != fr::FrEntry::kNoTime;
        const int64_t next = has_next ? ops->ops[i + 1].entry->created_ns : mine.last;
        WriteOp(&w, run, d.rank, tid, groups[gi], op, next, mine.last, origin);
      }
    }
  }
  for (const analyzers::Finding& f : findings) {
    auto ev = w.Instant(f.kind + ": " + f.summary.substr(0, 80), "finding", 'g', 0, 0,
                        std::max<int64_t>(0, all.last - origin));
    ev.Args().Field("severity", analyzers::SeverityName(f.severity)).Field("summary", f.summary);
    ev.EndArgs();
    ++stats.findings;
  }
  trace::JsonValue other = trace::JsonValue::Object();
  other.Set("source", "torch-flight-recorder");
  other.Set("origin_unix_ns", origin);
  w.Finish(other);
  stats.events = w.events();
  stats.origin_unix_ns = origin;
  return stats;
}

}  // namespace dsdiag::timeline
