#include "analyzers/kinds/rank_died/death_view.h"

#include <algorithm>

#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/evidence_text.h"
#include "trace/records/phase_record.h"

namespace dsdiag::analyzers::rank_died {

using trace::JsonValue;

// The rank's flight dump, when the run loader found a usable one.
const trace::FlightDump* DeathView::Dump(int rank) const {
  const RunFlightDump* d = run_->FlightDumpOf(rank);
  return d ? &d->dump : nullptr;
}

std::string DeathView::DumpFileName(int rank) const {
  const RunFlightDump* d = run_->FlightDumpOf(rank);
  return d ? d->file_name : std::string();
}

// The dump when it was written after the rank's last step, phase or collective record:
// it then says where the rank stopped. An older one (a SIGUSR1 request mid-run) does not.
const trace::FlightDump* DeathView::LastWord(const RankState& s) const {
  const trace::FlightDump* d = Dump(s.rank);
  if (!d || (s.records.progress_end && d->ts < *s.records.progress_end)) return nullptr;
  return d;
}

// The phase the rank stopped in, when its last-word dump names one of the step it was in.
std::string DeathView::StoppedPhase(const RankState& s) const {
  const trace::FlightDump* d = LastWord(s);
  if (!d || d->where_phase.empty() || d->where_phase == trace::phase::kNone) return {};
  if (d->where_step && s.end.last_step_begun && *d->where_step != *s.end.last_step_begun) return {};
  return d->where_phase;
}

// "in sync of step 3" when the phase is known, else "during step 3".
std::string DeathView::WhereText(const RankState& s) const {
  const std::string phase = StoppedPhase(s);
  if (phase.empty() || !s.end.last_step_begun) return StepText(s.end.last_step_begun);
  return "in " + phase + " of step " + std::to_string(*s.end.last_step_begun);
}

std::optional<WaitingIn> DeathView::Waiting(const RankState& s) const {
  if (const trace::FlightDump* d = LastWord(s)) {
    if (const trace::FlightDumpEntry* e = d->OldestPending())
      return WaitingIn{{e->pg, e->seq}, e->what.op, e->what.tag, e->step, "flight dump"};
  }
  if (s.records.error_collective) return *s.records.error_collective;
  return std::nullopt;
}

// The furthest step any rank other than `rank` began.
std::optional<int64_t> DeathView::PeersMaxStep(int rank) const {
  std::optional<int64_t> best;
  for (const auto& s : ranks_)
    if (s.rank != rank && s.end.last_step_begun)
      best = std::max(best.value_or(*s.end.last_step_begun), *s.end.last_step_begun);
  return best;
}

Finding DeathView::Base(const RankState& s, Severity severity) const {
  Finding f;
  f.kind = std::string(kind::kRankDied);
  f.severity = severity;
  f.ranks = {s.rank};
  f.step = s.end.last_step_begun;
  f.ts_ns = s.end.last_ts;
  f.ts_rank = s.rank;
  JsonValue& e = f.evidence;
  e.Set("file", s.file_name);
  e.Set("host", s.host);
  e.Set("pid", s.pid);
  e.Set("last_step_begun", OptInt(s.end.last_step_begun));
  e.Set("last_step_done", OptInt(s.end.last_step_done));
  e.Set("last_phase_done", s.end.last_phase.empty() ? JsonValue() : JsonValue(s.end.last_phase));
  e.Set("last_record_line", s.end.last_line);
  e.Set("last_record_ts", OptInt(s.end.last_ts));
  e.Set("peers_max_step", OptInt(PeersMaxStep(s.rank)));
  if (const RunFlightDump* dump = run_->FlightDumpOf(s.rank)) e.Set("flight_dump", dump->file_name);
  const std::string phase = StoppedPhase(s);
  if (!phase.empty()) {
    const trace::FlightDump* d = LastWord(s);
    JsonValue in = JsonValue::Object();
    in.Set("step", OptInt(s.end.last_step_begun));
    in.Set("phase", phase);
    in.Set("from", DumpFileName(s.rank));
    in.Set("dump_reason", d->reason);
    e.Set("stopped_in", std::move(in));
  }
  if (const auto& sig = s.records.signal) {
    JsonValue v = JsonValue::Object();
    v.Set("signal", sig->name);
    v.Set("step", sig->step);
    v.Set("ts", sig->ts);
    e.Set("signal_recorded", std::move(v));
  }
  if (const auto waiting = Waiting(s)) e.Set("waiting_in", WaitingJson(*waiting));
  return f;
}

// What the other ranks then saw: how each one ended, and with what message (a peer's
// "connection closed", a collective timeout, the launcher's SIGTERM). Up to kMaxListed.
JsonValue DeathView::SurvivorsView(int dead_rank) const {
  JsonValue out = JsonValue::Array();
  for (const auto& s : ranks_) {
    if (s.rank == dead_rank || out.elements().size() >= kMaxListed) continue;
    JsonValue v = JsonValue::Object();
    v.Set("rank", s.rank);
    v.Set("ended", s.end.end_seen ? JsonValue(s.end.reason) : JsonValue("no end record"));
    if (!s.end.detail.empty()) v.Set("detail", Clip(s.end.detail, kMaxMessage));
    v.Set("last_step_begun", OptInt(s.end.last_step_begun));
    if (const auto waiting = Waiting(s)) v.Set("waiting_in", WaitingJson(*waiting));
    out.Push(std::move(v));
  }
  return out;
}

}  // namespace dsdiag::analyzers::rank_died
