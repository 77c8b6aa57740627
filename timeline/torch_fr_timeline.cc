#include "timeline/torch_fr_timeline.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyzers/torch_fr/fr_groups.h"
#include "timeline/chrome_trace_writer.h"
#include "timeline/perfetto_fields.h"
#include "timeline/perfetto_inline_args.h"
#include "timeline/perfetto_rank_out.h"
#include "timeline/perfetto_trace_writer.h"

namespace dsdiag::timeline {
namespace {

namespace fr = analyzers::torch_fr;
namespace pf = perfetto_fields;

// The timeline's events as Chrome Trace JSON: a process per rank (pid rank + 1), a thread
// per process group, times in us from the run's earliest entry.
class FrJsonOut {
 public:
  using Event = ChromeTraceWriter::Event;
  FrJsonOut(std::ostream* out, int64_t origin) : writer_(out), origin_(origin) {}

  void Rank(int rank, std::string_view name) {
    auto e = writer_.Metadata("process_name", Pid(rank), 0);
    e.Args().Field("name", name);
    e.EndArgs();
  }
  void Group(int rank, int tid, std::string_view name) {
    auto e = writer_.Metadata("thread_name", Pid(rank), tid);
    e.Args().Field("name", name);
    e.EndArgs();
  }
  Event Span(int rank, int tid, std::string_view name, std::string_view category, int64_t start,
             int64_t end) {
    return writer_.Complete(name, category, Pid(rank), tid, start - origin_, end - start);
  }
  Event Finding(std::string_view name, int64_t ts) {
    return writer_.Instant(name, "finding", 'g', 0, 0, ts - origin_);
  }
  int64_t Finish() {
    trace::JsonValue other = trace::JsonValue::Object();
    other.Set("source", "torch-flight-recorder");
    other.Set("origin_unix_ns", origin_);
    writer_.Finish(other);
    return writer_.events();
  }

 private:
  static int Pid(int rank) { return rank + 1; }
  ChromeTraceWriter writer_;
  const int64_t origin_;
};

// The same events as a Perfetto trace (perfetto_trace_writer.h), in absolute ns: a top-level
// track per rank, a child track per process group, and per group as many lanes as its
// collectives overlap (one issued before the one before it completed), since the slices of
// a track must nest. Names are inline; findings go on a top-level "findings" track.
class FrPerfettoOut {
 public:
  // A slice or an instant being built: its annotations go in until it goes out of scope.
  class Event {
   public:
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    Event(Event&& other) noexcept
        : out_(other.out_),
          pb_(other.pb_),
          args_(other.args_),
          mark_(other.mark_),
          track_(other.track_),
          end_(other.end_) {
      other.out_ = nullptr;
    }
    ~Event() {
      if (out_ == nullptr) return;
      pb_.End(mark_);
      out_->writer_.EndPacket();
      if (!end_) return;
      out_->Packet(*end_, pf::kTypeSliceEnd, track_).End(out_->track_event_);
      out_->writer_.EndPacket();
    }
    PerfettoInlineArgs& Args() { return args_; }
    void EndArgs() {}

   private:
    friend class FrPerfettoOut;
    Event(FrPerfettoOut* out, ProtoEncoder pb, uint64_t track, std::optional<int64_t> end)
        : out_(out), pb_(pb), args_(pb), mark_(out->track_event_), track_(track), end_(end) {}
    FrPerfettoOut* out_;  // null once moved from
    ProtoEncoder pb_;
    PerfettoInlineArgs args_;
    size_t mark_;
    uint64_t track_;
    std::optional<int64_t> end_;  // a slice's end: its SLICE_END follows
  };

  explicit FrPerfettoOut(std::ostream* out) : writer_(out, /*scratch_dir=*/"") {}

  void Rank(int rank, std::string_view name) {
    writer_.Track(PerfettoRankOut::RootTrack(rank), 0, name, rank);
  }
  void Group(int rank, int tid, std::string_view name) {
    groups_[{rank, tid}].name = std::string(name);
  }
  Event Span(int rank, int tid, std::string_view name, std::string_view category, int64_t start,
             int64_t end) {
    const uint64_t track = Lane(rank, tid, start, end);
    ProtoEncoder pb = Packet(start, pf::kTypeSliceBegin, track);
    pb.String(pf::kEventName, name);
    pb.String(pf::kEventCategories, category);
    return Event(this, pb, track, end);
  }
  Event Finding(std::string_view name, int64_t ts) {
    if (!findings_track_) writer_.Track(kFindingsTrack, 0, "findings", -1);
    findings_track_ = true;
    ProtoEncoder pb = Packet(ts, pf::kTypeInstant, kFindingsTrack);
    pb.String(pf::kEventName, name);
    pb.String(pf::kEventCategories, "finding");
    return Event(this, pb, kFindingsTrack, std::nullopt);
  }
  int64_t Finish() {
    writer_.Finish();
    return writer_.packets();
  }

 private:
  static constexpr uint64_t kFindingsTrack = 1;  // below every rank's uuid
  struct GroupLanes {
    std::string name;
    std::vector<std::pair<uint64_t, int64_t>> lanes;  // (track, the latest end on it)
  };

  // The group's first lane free at `start` (all on it ended by then), made if none is. A
  // slice's END goes out right after its BEGIN, before the next slice's BEGIN at that time.
  uint64_t Lane(int rank, int tid, int64_t start, int64_t end) {
    GroupLanes& g = groups_[{rank, tid}];
    auto lane = std::find_if(g.lanes.begin(), g.lanes.end(),
                             [&](const auto& l) { return l.second <= start; });
    if (lane == g.lanes.end()) {
      const uint64_t uuid = PerfettoRankOut::RootTrack(rank) + ++children_[rank];
      const std::string name =
          g.lanes.empty() ? g.name : g.name + ", lane " + std::to_string(g.lanes.size() + 1);
      writer_.Track(uuid, PerfettoRankOut::RootTrack(rank), name,
                    int64_t{tid} * 1000 + static_cast<int64_t>(g.lanes.size()));
      g.lanes.emplace_back(uuid, end);
      return uuid;
    }
    lane->second = std::max(lane->second, end);
    return lane->first;
  }

  ProtoEncoder Packet(int64_t ts, uint64_t type, uint64_t track) {
    auto [pb, track_event] = writer_.BeginTrackEvent(PerfettoTraceWriter::kInlineNamesSequence, ts,
                                                     /*sequence_flags=*/0, type, track);
    track_event_ = track_event;
    return pb;
  }

  PerfettoTraceWriter writer_;
  std::map<std::pair<int, int>, GroupLanes> groups_;  // by (rank, tid)
  std::map<int, uint64_t> children_;                  // tracks made under each rank
  size_t track_event_ = 0;                            // the open packet's TrackEvent
  bool findings_track_ = false;
};

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

// One collective of one rank: issued -> completed, or -> `rank_end` when not done.
template <class Out>
void WriteOp(Out* out, const fr::FrRun& run, int rank, int tid, const fr::FrGroup& g,
             const fr::FrOp& op, int64_t next_created, int64_t rank_end) {
  const fr::FrEntry& e = *op.entry;
  if (e.created_ns == fr::FrEntry::kNoTime) return;
  const int64_t start = e.created_ns;
  int64_t end = op.done ? next_created : rank_end;
  if (e.completed_ns != fr::FrEntry::kNoTime) end = e.completed_ns;
  end = std::max(end, start);
  const std::string name = run.Str(e.op) + " #" + std::to_string(op.seq);
  auto ev = out->Span(rank, tid, name, op.done ? "coll" : "coll,pending", start, end);
  auto& a = ev.Args();
  a.Field("group", g.name()).Field("seq", op.seq).Field("done", op.done);
  a.Field("torch_state", trace::TorchFrStateName(e.state));
  a.Field("elements", e.numel);
  if (!run.Str(e.dtypes).empty()) a.Field("dtype", run.Str(e.dtypes));
  if (!run.Str(e.where).empty()) a.Field("python_where", run.Str(e.where));
  ev.EndArgs();
}

// The run's events, once for both formats: `Out` is FrJsonOut or FrPerfettoOut.
template <class Out>
TimelineStats WriteEvents(const fr::FrRun& run, const std::vector<analyzers::Finding>& findings,
                          const Span& all, Out* out) {
  TimelineStats stats;
  const std::vector<fr::FrGroup> groups = fr::BuildGroups(run);
  for (const fr::FrRankDump& d : run.dumps) {
    out->Rank(d.rank, "rank " + std::to_string(d.rank) + " (" + d.file_name + ")");
    ++stats.ranks;
    const Span mine = TimesOf(d);
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const fr::FrRankOps* ops = groups[gi].Of(d.rank);
      if (ops == nullptr) continue;
      const int tid = static_cast<int>(gi);
      out->Group(d.rank, tid, groups[gi].Label());
      for (size_t i = 0; i < ops->ops.size(); ++i) {
        const fr::FrOp& op = ops->ops[i];
        const bool has_next =
            i + 1 < ops->ops.size() && ops->ops[i + 1].entry->created_ns != fr::FrEntry::kNoTime;
        const int64_t next = has_next ? ops->ops[i + 1].entry->created_ns : mine.last;
        WriteOp(out, run, d.rank, tid, groups[gi], op, next, mine.last);
      }
    }
  }
  const int64_t findings_at = all.first <= all.last ? all.last : 0;
  for (const analyzers::Finding& f : findings) {
    auto ev = out->Finding(f.kind + ": " + f.summary.substr(0, 80), findings_at);
    ev.Args().Field("severity", analyzers::SeverityName(f.severity)).Field("summary", f.summary);
    ev.EndArgs();
    ++stats.findings;
  }
  return stats;
}

}  // namespace

TimelineStats WriteTorchFrTimeline(const fr::FrRun& run,
                                   const std::vector<analyzers::Finding>& findings,
                                   std::ostream& out, TimelineFormat format) {
  Span all;
  for (const fr::FrRankDump& d : run.dumps) {
    const Span s = TimesOf(d);
    if (s.first <= s.last) all.Add(s.first), all.Add(s.last);
  }
  const int64_t origin = all.first <= all.last ? all.first : 0;
  TimelineStats stats;
  if (format == TimelineFormat::kPerfetto) {
    FrPerfettoOut writer(&out);
    stats = WriteEvents(run, findings, all, &writer);
    stats.events = writer.Finish();
  } else {
    FrJsonOut writer(&out, origin);
    stats = WriteEvents(run, findings, all, &writer);
    stats.events = writer.Finish();
  }
  stats.origin_unix_ns = origin;
  return stats;
}

}  // namespace dsdiag::timeline
