#include "timeline/rank_events.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "timeline/json_rank_out.h"
#include "timeline/perfetto_rank_out.h"
#include "trace/record_types.h"
#include "trace/records/coll_record.h"
#include "trace/records/end_record.h"
#include "trace/records/error_record.h"
#include "trace/records/grad_record.h"
#include "trace/records/mark_record.h"
#include "trace/records/phase_record.h"
#include "trace/records/scaler_record.h"
#include "trace/records/signal_record.h"
#include "trace/records/span.h"
#include "trace/records/step_record.h"
#include "trace/records/thread_record.h"
#include "trace/trace_reader.h"

namespace dsdiag::timeline {

namespace records = trace::records;
namespace {

namespace rec = trace::rec;
namespace rec_id = trace::rec_id;

// More lanes than this means a trace with collectives that never end (or a bug): further
// ones share the lane that frees first rather than add tracks without bound.
constexpr size_t kMaxLanes = 16;

// "step 12", "step 12 (unfinished)": a step span's name, without a string per step.
class StepName {
 public:
  explicit StepName(int64_t step, std::string_view suffix = {}) {
    static constexpr std::string_view kPrefix = "step ";
    char* p = std::copy(kPrefix.begin(), kPrefix.end(), text_);
    p = std::to_chars(p, p + kMaxIntChars, step).ptr;
    p = std::copy(suffix.begin(), suffix.begin() + std::min(suffix.size(), kMaxSuffix), p);
    size_ = static_cast<size_t>(p - text_);
  }
  std::string_view view() const { return {text_, size_}; }

 private:
  static constexpr size_t kMaxSuffix = 16;
  char text_[5 + kMaxIntChars + kMaxSuffix];
  size_t size_ = 0;
};

// The rank's counters: each a track of its own whose head is formatted once.
enum CounterTrack {
  kGradNorm,
  kLossScale,
  kCollectivesMs,
  kCollectiveWaitMs,
  kProbesMs,
  kLoss,
  kGloss,
  kLr,
  kSamplesPerS,
  kCounterTracks
};
constexpr std::string_view kCounterNames[kCounterTracks] = {
    "grad norm", "loss scale", "collectives ms", "collective wait ms", "probes ms", "loss",
    "gloss",     "lr",         "samples/s"};

// The heads of one category of spans by (name, tid), made on first use: a rank has a
// handful of phase names, and of collective ops per lane. Past kMax (a trace with names
// without end) spans are written with their head in full.
template <class Out>
class SpanHeads {
 public:
  explicit SpanHeads(std::string_view category) : category_(category) {}

  typename Out::Event Span(Out* out, std::string_view name, int64_t tid, int64_t ts, int64_t dur) {
    for (const Slot& s : slots_)
      if (s.tid == tid && s.name == name) return out->Span(s.head, ts, dur);
    if (slots_.size() == kMax) return out->Span(name, category_, tid, ts, dur);
    slots_.push_back(Slot{std::string(name), tid, out->SpanHead(name, category_, tid)});
    return out->Span(slots_.back().head, ts, dur);
  }

 private:
  static constexpr size_t kMax = 64;
  struct Slot {
    std::string name;
    int64_t tid = 0;
    typename Out::Head head = 0;
  };
  const std::string_view category_;
  std::vector<Slot> slots_;
};

std::string FormatOffset(const trace::ClockReference& clock) {
  std::string s = "clock offset to rank 0: ";
  ChromeTraceWriter::AppendMicros(&s, clock.offset_ns);
  s += " us";
  if (clock.offset_err_ns >= 0) {
    s += " +/- ";
    ChromeTraceWriter::AppendMicros(&s, clock.offset_err_ns);
    s += " us";
  } else {
    s += " (not measured)";
  }
  return s;
}

}  // namespace

// What RankEvents drives: a RankEventWriter for one output format.
class RankEventSink {
 public:
  virtual ~RankEventSink() = default;
  virtual void OnRecord(const trace::Record& r, int64_t t) = 0;
  virtual void CloseUnfinishedStep() = 0;
};

namespace {

// The mapping of records to events, once for both formats: `Out` is JsonRankOut or
// PerfettoRankOut, which take the same calls.
template <class Out>
class RankEventWriter : public RankEventSink {
 public:
  // `out_args`: Out's constructor's.
  template <class... OutArgs>
  RankEventWriter(const analyzers::RankInfo& info, const StepRange& steps, OutArgs... out_args)
      : info_(info), steps_(steps), out_(out_args...) {
    ProcessMetadata();
  }

  // `t`: the record's ts on rank 0's clock.
  void OnRecord(const trace::Record& r, int64_t t) override {
    const int type = r.type_id();
    if (type == rec_id::kClock) return;  // the caller's clock took it
    if (type == rec_id::kThread) {
      const auto name = records::ThreadView(r).name();
      NameThread(r.tid(), name ? *name : "thread " + std::to_string(r.tid()));
      return;
    }
    if (!MakesEvent(type) || !steps_.Contains(r.step())) return;
    if (type == rec_id::kStepBegin) {
      CloseUnfinishedStep();
      out_.StepBegin(StepName(r.step()).view(), r.step(), r.tid(), t);
      open_ = OpenStep{r.step(), t, r.tid()};
      last_end_ = t;
      return;
    }
    const int64_t dur = std::max<int64_t>(0, records::SpanDur(r).value_or(0));
    last_end_ = std::max(last_end_, t + dur);
    if (type == rec_id::kStep) {
      Step(r, t, dur);
    } else if (type == rec_id::kPhase) {
      const auto name = records::PhaseView(r).name();
      auto e = phases_.Span(&out_, name ? *name : "phase", r.tid(), t, dur);
      e.Args().Field("step", r.step());
      e.EndArgs();
    } else if (type == rec_id::kCollective) {
      Collective(r, t, dur);
    } else if (type == rec_id::kGradient) {
      if (auto norm = records::GradView(r).norm()) Counter(kGradNorm, t, *norm);
    } else if (type == rec_id::kScaler) {
      if (auto scale = records::ScalerView(r).scale()) Counter(kLossScale, t, *scale);
    } else {  // error, signal, mark, end
      Instant(r, t);
    }
  }

  // A step begun and never closed: the rank died, hung or was stopped in it.
  void CloseUnfinishedStep() override {
    if (!open_) return;
    auto e = out_.Step(StepName(open_->step, " (unfinished)").view(), open_->step, open_->tid,
                       open_->begin, std::max<int64_t>(0, last_end_ - open_->begin));
    e.Args().Field("step", open_->step).Field("unfinished", true);
    e.EndArgs();
    open_.reset();
  }

 private:
  struct OpenStep {
    int64_t step = 0;
    int64_t begin = 0;  // rank 0's clock, relative to the origin
    int64_t tid = 0;
  };

  void ProcessMetadata() {
    const trace::TraceHeader& h = info_.header;
    out_.Process("rank " + std::to_string(info_.rank) + " (" + h.host + ")", FormatOffset(h.clock));
    NameThread(0, "main");
  }

  void NameThread(int64_t tid, std::string_view name) {
    if (named_.insert(tid).second) out_.NameThread(tid, name);
  }

  void Step(const trace::Record& r, int64_t t, int64_t dur) {
    if (open_ && open_->step == r.step()) open_.reset();
    const records::StepView step(r);
    const auto loss = step.loss();
    const auto gloss = step.gloss();
    const auto lr = step.lr();
    const auto samples = step.samples();
    const CollectiveTotals coll = StepCollectives(r);
    const auto probe_ns = step.probe_ns();
    {
      auto e = out_.Step(StepName(r.step()).view(), r.step(), r.tid(), t, dur);
      auto& a = e.Args().Field("step", r.step());
      if (auto epoch = step.epoch()) a.Field("epoch", *epoch);
      if (loss) a.Field("loss", *loss);
      if (gloss) a.Field("gloss", *gloss);
      if (lr) a.Field("lr", *lr);
      if (samples) a.Field("samples", *samples);
      if (coll.n) a.Field("coll_n", *coll.n);
      if (coll.bytes) a.Field("coll_bytes", *coll.bytes);
      e.EndArgs();
    }
    // Time in collectives, and of it the time spent waiting for the others, per step: the
    // rank whose wait stays low while the others' climbs is the one they wait for.
    if (coll.dur_ns) MillisCounter(kCollectivesMs, t, *coll.dur_ns);
    if (coll.wait_ns) MillisCounter(kCollectiveWaitMs, t, *coll.wait_ns);
    // What the probes themselves took (periodic fingerprints show as spikes).
    if (probe_ns) out_.CounterMillis(CounterHead(kProbesMs), t, *probe_ns);
    if (loss) Counter(kLoss, t, *loss);
    if (gloss) Counter(kGloss, t, *gloss);
    if (lr) Counter(kLr, t, *lr);
    if (samples && dur > 0)
      Counter(kSamplesPerS, t, static_cast<double>(*samples) * 1e9 / static_cast<double>(dur));
  }

  // The step record's `coll` totals (trace-format.md); each part absent when not a number.
  struct CollectiveTotals {
    std::optional<int64_t> n, bytes;
    std::optional<trace::Record::NumberMember> dur_ns, wait_ns;
  };
  CollectiveTotals StepCollectives(const trace::Record& r) {
    CollectiveTotals totals;
    if (!records::StepView(r).coll(&coll_members_)) return totals;
    using K = records::StepCollKeys;
    for (const trace::Record::NumberMember& m : coll_members_) {
      if (!m.is_number) continue;
      const int64_t as_int = m.is_int64 ? m.int64 : static_cast<int64_t>(m.value);
      if (m.name == K::n.name()) totals.n = as_int;
      if (m.name == K::bytes.name()) totals.bytes = as_int;
      if (m.name == K::dur.name()) totals.dur_ns = m;
      if (m.name == K::wait.name()) totals.wait_ns = m;
    }
    return totals;
  }

  void Collective(const trace::Record& r, int64_t t, int64_t dur) {
    const records::CollView coll(r);
    const auto op = coll.op();
    const auto pg = coll.pg();
    const auto seq = coll.seq();
    auto e = collectives_.Span(&out_, op ? *op : "collective", Lane(t, t + dur), t, dur);
    auto& a = e.Args();
    if (pg) a.Field("pg", *pg);
    if (seq) a.Field("seq", *seq);
    if (op) a.Field("op", *op);
    if (auto tag = coll.tag()) a.Field("tag", *tag);
    if (auto dtype = coll.dtype()) a.Field("dtype", *dtype);
    if (auto n = coll.count()) a.Field("n", *n);
    if (auto bytes = coll.bytes()) a.Field("bytes", *bytes);
    a.Field("step", r.step());
    if (pg && seq) e.WaitOf(*pg, *seq);  // wait, last, ranks: known once every rank is read
    e.EndArgs();
  }

  // The first lane free at `start`; records come in completion order, so a lane is free
  // when everything on it ended by `start` — before it, where Out writes a collective's
  // end after the events that follow it (kCollectiveEndsLate).
  int64_t Lane(int64_t start, int64_t end) {
    auto busy = [&](int64_t lane_end) {
      return Out::kCollectiveEndsLate ? lane_end >= start : lane_end > start;
    };
    size_t lane = 0;
    while (lane < lane_ends_.size() && busy(lane_ends_[lane])) ++lane;
    if (lane == lane_ends_.size()) {
      if (lane_ends_.size() < kMaxLanes) {
        lane_ends_.push_back(start);
        const int64_t tid = kLaneTidBase + static_cast<int64_t>(lane);
        NameThread(tid, lane == 0 ? std::string("collectives")
                                  : "collectives " + std::to_string(lane + 1));
      } else {
        lane = static_cast<size_t>(std::min_element(lane_ends_.begin(), lane_ends_.end()) -
                                   lane_ends_.begin());
      }
    }
    lane_ends_[lane] = std::max(lane_ends_[lane], end);
    return kLaneTidBase + static_cast<int64_t>(lane);
  }

  void Counter(CounterTrack track, int64_t t, double value) {
    out_.Counter(CounterHead(track), t, value);
  }
  // Made at the track's first sample: a run that never has the counter pays nothing.
  typename Out::Head CounterHead(CounterTrack track) {
    std::optional<typename Out::Head>& head = counters_[track];
    if (!head) head = out_.CounterHead(kCounterNames[track]);
    return *head;
  }

  // A time in ns as ms: integers exactly, without formatting a double.
  void MillisCounter(CounterTrack track, int64_t t, const trace::Record::NumberMember& ns) {
    if (ns.is_int64) {
      out_.CounterMillis(CounterHead(track), t, ns.int64);
    } else {
      Counter(track, t, ns.value / 1e6);
    }
  }

  void Instant(const trace::Record& r, int64_t t) {
    const std::string_view type = r.type();
    std::string name(type);
    auto append = [&](const trace::FieldKey& key, std::string_view sep, std::string_view close) {
      if (auto v = r.Str(key)) name.append(sep).append(*v).append(close);
    };
    if (type == rec::kError) append(records::ErrorKeys::where, " (", ")");
    if (type == rec::kSignal) append(records::SignalKeys::signal, " ", "");
    if (type == rec::kMark) append(records::MarkKeys::name, ": ", "");
    if (type == rec::kEnd) append(records::EndKeys::reason, ": ", "");
    auto e = out_.Instant(name, type, r.tid(), t);
    auto& a = e.Args().Field("step", r.step());
    // The instant records' fields, whichever this one has (error, signal, mark, end).
    static constexpr trace::FieldKey kInstantFields[] = {
        records::ErrorKeys::where,   records::ErrorKeys::message, records::MarkKeys::name,
        records::SignalKeys::signal, records::SignalKeys::signo,  records::EndKeys::reason,
        records::EndKeys::status,    records::EndKeys::error};
    for (const trace::FieldKey& key : kInstantFields) {
      if (auto s = r.Str(key)) {
        a.Field(key.name(), *s);
      } else if (auto i = r.Int(key)) {
        a.Field(key.name(), *i);
      }
    }
    e.EndArgs();
  }

  const analyzers::RankInfo& info_;
  const StepRange& steps_;
  Out out_;
  std::set<int64_t> named_;         // tids with a thread_name
  std::vector<int64_t> lane_ends_;  // per collective lane, the latest end on it
  std::optional<OpenStep> open_;
  std::vector<trace::Record::NumberMember> coll_members_;  // reused from step to step
  std::optional<typename Out::Head> counters_[kCounterTracks];
  SpanHeads<Out> phases_{"phase"};
  SpanHeads<Out> collectives_{"coll"};
  int64_t last_end_ = 0;  // the latest event end since open_ began
};

}  // namespace

bool MakesEvent(int type_id) {
  switch (type_id) {
    case rec_id::kStepBegin:
    case rec_id::kStep:
    case rec_id::kPhase:
    case rec_id::kCollective:
    case rec_id::kGradient:
    case rec_id::kScaler:
    case rec_id::kError:
    case rec_id::kSignal:
    case rec_id::kMark:
    case rec_id::kEnd:
      return true;
    default:
      return false;
  }
}

RankEvents::RankEvents(const analyzers::RankInfo& rank, const StepRange& steps, RankSpool* out)
    : writer_(std::make_unique<RankEventWriter<JsonRankOut>>(rank, steps, out, rank.rank)) {}
RankEvents::RankEvents(const analyzers::RankInfo& rank, const StepRange& steps,
                       PerfettoTraceWriter* out)
    : writer_(std::make_unique<RankEventWriter<PerfettoRankOut>>(rank, steps, out, rank.rank)) {}
RankEvents::~RankEvents() = default;
RankEvents::RankEvents(RankEvents&&) noexcept = default;
void RankEvents::OnRecord(const trace::Record& r, int64_t t_rank0) {
  writer_->OnRecord(r, t_rank0);
}
void RankEvents::End() { writer_->CloseUnfinishedStep(); }

}  // namespace dsdiag::timeline
