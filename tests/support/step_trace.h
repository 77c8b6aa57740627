// The one way tests write a step, in the shape the probes give it (Session::BeginStep ...
// Session::EndStep): `step_begin` at the step's start; what happened in it, in the order the
// probes write it (a `phase` span when its phase ends, a `coll` record when its collective
// completes); then the `step` record at the start, with each phase's total. Each suite
// describes its own step with it (tests/report/, tests/timeline/, tests/analyzers/) and
// writes it through a RankTrace (rank_trace.h) or a TraceWriter of its own.
//
//   test_support::StepTrace s(/*step=*/3, /*start=*/t);
//   s.Phase(trace::phase::kData, t, 1000).Coll(allreduce, t + 1000).Total(trace::phase::kSync,
//   300); s.record().loss = 2.0; s.Write(trace.writer());
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/records/coll_record.h"
#include "trace/records/phase_record.h"
#include "trace/records/step_begin_record.h"
#include "trace/records/step_record.h"
#include "trace/trace_writer.h"

namespace dsdiag::test_support {

class StepTrace {
 public:
  // The time a record is written at, from the time the test planned for it: the identity,
  // a rank's clock (planned on a true time), or the writer's clock now (TraceWriter::Begin).
  using Clock = std::function<int64_t(int64_t planned)>;

  StepTrace(int64_t step, int64_t start) : step_(step), start_(start) {}

  // A phase span: a `phase` record at `ts` (full mode) and its total in the step record.
  StepTrace& Phase(std::string_view name, int64_t ts, int64_t dur) {
    events_.push_back({Event::kPhase, ts, name, dur, {}, {}});
    return Total(name, dur);
  }
  // A phase's total alone (light mode writes no `phase` records); listed in the step record
  // in the order added, a 0 left out.
  StepTrace& Total(std::string_view name, int64_t dur) {
    totals_.push_back({name, dur});
    return *this;
  }
  // A collective entered at `ts` (its strings copied; `counts`, when set, must outlive Write).
  StepTrace& Coll(const trace::records::CollRecord& c, int64_t ts) {
    events_.push_back({Event::kColl,
                       ts,
                       {},
                       0,
                       c,
                       {std::string(c.op), std::string(c.dtype), std::string(c.tag)}});
    return *this;
  }
  // The step record's other fields; its `dur`, unless set, is the sum of the totals.
  trace::records::StepRecord& record() { return record_; }

  // The whole step, its `step` record last.
  void Write(trace::TraceWriter* w, const Clock& clock = {}) const {
    WriteBegun(w, clock);
    auto at = [&](int64_t planned) { return clock ? clock(planned) : planned; };
    trace::records::StepRecord r = record_;
    if (r.dur == 0)
      for (const trace::records::PhaseTime& t : totals_) r.dur += t.ns;
    if (!totals_.empty()) {
      r.phases = totals_.data();
      r.phase_count = totals_.size();
    }
    AppendFields(r, &w->BeginAt(r.kType, at(start_)).line());
  }

  // What a rank that never finished the step left: all of it but the `step` record.
  void WriteBegun(trace::TraceWriter* w, const Clock& clock = {}) const {
    auto at = [&](int64_t planned) { return clock ? clock(planned) : planned; };
    w->SetStep(step_);
    AppendFields(trace::records::StepBeginRecord{},
                 &w->BeginAt(trace::records::StepBeginRecord::kType, at(start_)).line());
    for (const Event& e : events_) {
      if (e.kind == Event::kColl) {
        trace::records::CollRecord c = e.coll;
        c.op = e.text[0];
        c.dtype = e.text[1];
        c.tag = e.text[2];
        AppendFields(c, &w->BeginAt(c.kType, at(e.ts)).line());
        continue;
      }
      trace::records::PhaseRecord p;
      p.name = e.name;
      p.dur = e.dur;
      AppendFields(p, &w->BeginAt(p.kType, at(e.ts)).line());
    }
  }

 private:
  struct Event {
    enum Kind { kPhase, kColl } kind;
    int64_t ts;
    std::string_view name;            // kPhase
    int64_t dur;                      // kPhase
    trace::records::CollRecord coll;  // kColl, its strings in `text`
    std::array<std::string, 3> text;  // op, dtype, tag
  };

  int64_t step_;
  int64_t start_;
  std::vector<Event> events_;
  std::vector<trace::records::PhaseTime> totals_;
  trace::records::StepRecord record_;
};

}  // namespace dsdiag::test_support
