#include "analyzers/kinds/hang/hang_finding.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/evidence_text.h"
#include "trace/records/phase_record.h"

namespace dsdiag::analyzers::hang {
namespace {

// Frames of a Python stack shown in evidence, innermost last.
constexpr size_t kStackFramesShown = 8;

// The dump's "MainThread" stack, else its first.
const trace::ThreadStack* MainThreadStack(const trace::FlightDump& dump) {
  for (const trace::ThreadStack& t : dump.stacks)
    if (t.thread == "MainThread") return &t;
  return dump.stacks.empty() ? nullptr : &dump.stacks.front();
}

using trace::JsonValue;

constexpr size_t kMaxRows = 8;  // culprits / waiters detailed in the evidence
constexpr size_t kMaxOtherStuck = 4;
constexpr size_t kMaxMessage = 160;

struct WaitTimes {
  std::optional<int64_t> since_local;  // rank-local monotonic ns
  std::optional<int64_t> since;        // rank 0's clock
  std::optional<int64_t> waited;       // ns, until it dumped / timed out / ended
};

WaitTimes WaitOf(const HangRankState& s, const Stuck& stuck) {
  WaitTimes t;
  if (const trace::FlightDumpEntry* e = DumpEntry(s, stuck.key))
    t.since_local = e->issued ? e->issued : e->started;
  t.since = ToRank0(s, t.since_local);
  std::optional<int64_t> until;
  if (s.dump) {
    until = s.dump->ts;
  } else if (s.timeout) {
    until = s.timeout->ts;
  } else if (s.ended && s.end.end_seen) {
    until = s.end.last_ts;
  }
  if (t.since_local && until) t.waited = std::max<int64_t>(0, *until - *t.since_local);
  return t;
}

// What a culprit was doing instead, in words, and as evidence.
std::string Doing(const HangRun& run, int rank, const Stuck& stuck,
                  std::optional<int64_t> wait_from, JsonValue* row) {
  const HangRankState& s = run.ranks[rank];
  std::string text;
  row->Set("rank", rank);
  row->Set("file", s.traced ? JsonValue(s.file_name) : JsonValue());
  if (!s.traced && !s.dump) {
    row->Set("status", "no trace");
    return "it left no trace in the run directory";
  }
  const trace::FlightDumpEntry* blocked = s.dump ? s.dump->OldestPending() : nullptr;
  if (blocked && !(blocked->pg == stuck.key.pg && blocked->seq == stuck.key.seq)) {
    const CollectiveKey other{blocked->pg, blocked->seq};
    JsonValue b = JsonValue::Object();
    b.Set("pg", blocked->pg);
    b.Set("seq", blocked->seq);
    b.Set("op", blocked->what.op);
    b.Set("tag", blocked->what.tag);
    b.Set("step", OptInt(blocked->step));
    row->Set("blocked_in", std::move(b));
    text = "it was blocked in " + DescribeCollective(blocked->what.op, other, blocked->what.tag);
  } else if (const trace::FlightDumpEntry* m = WaitedMessage(s)) {
    JsonValue b = JsonValue::Object();
    b.Set("op", m->what.op);
    b.Set("peer", OptInt(m->peer));
    b.Set("pg", m->pg);
    b.Set("pair_seq", m->seq);
    b.Set("tag", m->what.tag);
    b.Set("step", OptInt(m->step));
    row->Set("waiting_in_message", std::move(b));
    text = "it waited in " + DescribeMessage(*m);
  } else if (s.dump && s.dump->where_step) {
    // A dump taken outside every phase names phase::kNone: said as such, not as a phase.
    const bool in_phase =
        !s.dump->where_phase.empty() && s.dump->where_phase != trace::phase::kNone;
    text = "its flight dump shows it " +
           (in_phase ? "in " + s.dump->where_phase : std::string("outside any phase")) +
           " of step " + std::to_string(*s.dump->where_step);
  } else if (s.ended && s.end.last_step_begun) {
    text = "its last record is from step " + std::to_string(*s.end.last_step_begun) +
           (s.end.last_phase.empty() ? "" : " (last phase done: " + s.end.last_phase + ")");
  } else {
    text = "it had not begun a step";
  }
  if (s.dump) {
    row->Set("flight_dump", s.dump_file_name);
    row->Set("dump_reason", s.dump->reason);
    row->Set("where_step", OptInt(s.dump->where_step));
    row->Set("where_phase", s.dump->where_phase);
    // A Python job's dump holds its threads' stacks: the main thread's innermost frame is
    // where the culprit was instead of in the collective.
    if (const trace::ThreadStack* main = MainThreadStack(*s.dump); main && !main->frames.empty()) {
      row->Set("python_where", main->frames.back());
      JsonValue frames = JsonValue::Array();
      const size_t first =
          main->frames.size() > kStackFramesShown ? main->frames.size() - kStackFramesShown : 0;
      for (size_t i = first; i < main->frames.size(); ++i) frames.Push(main->frames[i]);
      row->Set("python_stack", std::move(frames));
      text += " (Python: " + main->frames.back() + ")";
    }
  }
  const auto completed = s.completed.find(stuck.key.pg);
  row->Set("last_completed_seq",
           completed == s.completed.end() ? JsonValue() : JsonValue(completed->second));
  if (s.ended) {
    row->Set("last_step_begun", OptInt(s.end.last_step_begun));
    row->Set("last_phase_done",
             s.end.last_phase.empty() ? JsonValue() : JsonValue(s.end.last_phase));
    const std::optional<int64_t> last = ToRank0(s, s.end.last_ts);
    row->Set("last_record_rank0_ns", OptInt(last));
    // How long before the others began to wait the rank went quiet (negative: after).
    if (last && wait_from)
      row->Set("last_record_before_wait_s", SecondsValue(double(*wait_from - *last)));
  }
  const bool stopped = s.traced && s.ended && !s.end.end_seen && !s.dump;
  row->Set("stopped_writing", stopped);
  if (s.ended && s.end.end_seen) {
    row->Set("end_reason", s.end.reason);
    if (!s.end.detail.empty()) row->Set("end_detail", Clip(s.end.detail, kMaxMessage));
    text += "; it ended with reason \"" + s.end.reason + "\"";
  } else if (stopped) {
    text += ", then it stopped writing (no end record)";
  }
  return text;
}

// A cut-off culprit's row and words: the store it could not reach, and for how long.
std::string CutOffRow(const HangRankState& s, JsonValue* row) {
  const StoreUnreachable& u = *s.store_unreachable;
  row->Set("store_unreachable", true);
  row->Set("store", u.store);
  row->Set("store_tried_s",
           u.tried_ms ? JsonValue(SecondsValue(double(*u.tried_ms) * 1e6)) : JsonValue());
  if (!u.error.empty()) row->Set("store_error", Clip(u.error, kMaxMessage));
  return "it could not reach the store at " + (u.store.empty() ? "rank 0" : u.store) +
         " after its timeout";
}

// Collectives other witnesses waited in (a second stuck group, or stragglers behind).
JsonValue OtherStuck(const std::vector<Witness>& witnesses, const Stuck& stuck) {
  std::map<CollectiveKey, std::vector<int>> others;
  for (const Witness& w : witnesses)
    if (w.key && !(stuck.known && *w.key == stuck.key)) others[*w.key].push_back(w.rank);
  JsonValue list = JsonValue::Array();
  for (const auto& [key, ranks] : others) {
    if (list.elements().size() >= kMaxOtherStuck) break;
    JsonValue o = JsonValue::Object();
    o.Set("pg", key.pg);
    o.Set("seq", key.seq);
    o.Set("ranks", RankList(ranks));
    list.Push(std::move(o));
  }
  return list;
}

// The waiters' rows, and when they began to wait / how long they waited at most and least.
struct Waiting {
  JsonValue rows = JsonValue::Array();
  std::optional<int64_t> since_min, waited_max, waited_min;
  std::optional<int64_t> since_local;  // the earliest waiter's own clock, and its rank
  int since_rank = 0;
};

Waiting WaitersOf(const HangRun& run, const std::vector<Witness>& witnesses, const HangVerdict& v) {
  Waiting out;
  for (int r : v.waiters) {
    const WaitTimes t = WaitOf(run.ranks[r], v.stuck);
    if (t.since && (!out.since_min || *t.since < *out.since_min)) {
      out.since_min = t.since;
      out.since_local = t.since_local;
      out.since_rank = r;
    }
    if (t.waited) {
      out.waited_max = std::max(out.waited_max.value_or(*t.waited), *t.waited);
      out.waited_min = std::min(out.waited_min.value_or(*t.waited), *t.waited);
    }
    if (out.rows.elements().size() >= kMaxRows) continue;
    JsonValue row = JsonValue::Object();
    row.Set("rank", r);
    auto w = std::find_if(witnesses.begin(), witnesses.end(),
                          [&](const Witness& x) { return x.rank == r; });
    row.Set("signal", w == witnesses.end() ? "pending in dump" : w->signal);
    row.Set("since_rank0_ns", OptInt(t.since));
    row.Set("waited_s", t.waited ? JsonValue(SecondsValue(double(*t.waited))) : JsonValue());
    const HangRankState& s = run.ranks[r];
    if (s.timeout) row.Set("message", Clip(s.timeout->message, kMaxMessage));
    out.rows.Push(std::move(row));
  }
  return out;
}

// The culprits' rows, and what the first of them was doing, in words.
std::string CulpritsOf(const HangRun& run, const HangVerdict& v, std::optional<int64_t> wait_from,
                       JsonValue* rows) {
  std::string doing;
  for (int r : v.culprits) {
    JsonValue row = JsonValue::Object();
    std::string text = Doing(run, r, v.stuck, wait_from, &row);
    if (v.cut_off) text = CutOffRow(run.ranks[r], &row);
    if (doing.empty()) doing = text;
    if (rows->elements().size() < kMaxRows) rows->Push(std::move(row));
  }
  return doing;
}

std::string Summary(const HangVerdict& v, const std::string& subject, const std::string& doing,
                    const Waiting& w) {
  const Stuck& stuck = v.stuck;
  const std::string at =
      stuck.known ? subject + (stuck.step ? " in step " + std::to_string(*stuck.step) : "")
                  : "a collective the traces do not name";
  std::string wait_text = OnRanks(v.waiters) + " waited in it";
  if (w.waited_max) wait_text += " for up to " + Seconds(double(*w.waited_max));
  std::string summary;
  const bool one = v.culprits.size() == 1;
  if (v.cut_off) {
    summary = OnRanks(v.culprits) + (one ? " was" : " were") + " cut off from the others in " + at +
              ": " + (one ? "" : "rank " + std::to_string(v.culprits.front()) + ": ") + doing +
              " while " + OnRanks(v.reached) + " reached it: " + (one ? "its" : "their") +
              " host's link or network is cut; " + wait_text;
  } else if (v.culprits.empty()) {
    summary = "every rank still running entered " + at + " and none completed it (" +
              OnRanks(v.waiters) +
              (w.waited_max ? " waited up to " + Seconds(double(*w.waited_max)) : "") + ")";
  } else {
    summary = OnRanks(v.culprits) + " never entered " + at + ": " +
              (one ? "" : "rank " + std::to_string(v.culprits.front()) + ": ") + doing + "; " +
              wait_text;
  }
  if (stuck.inferred) summary += " (collective inferred from the last completed one)";
  return summary;
}

JsonValue WaitersEvidence(const HangRun& run, const HangVerdict& v, Waiting w) {
  JsonValue out = JsonValue::Object();
  out.Set("count", static_cast<int64_t>(v.waiters.size()));
  out.Set("ranks", RankList(v.waiters));
  out.Set("since_rank0_ns", OptInt(w.since_min));
  out.Set("since_run_start_s", w.since_min && run.run_start
                                   ? JsonValue(SecondsValue(double(*w.since_min - *run.run_start)))
                                   : JsonValue());
  out.Set("waited_max_s",
          w.waited_max ? JsonValue(SecondsValue(double(*w.waited_max))) : JsonValue());
  out.Set("waited_min_s",
          w.waited_min ? JsonValue(SecondsValue(double(*w.waited_min))) : JsonValue());
  out.Set("detail", std::move(w.rows));
  return out;
}

std::string Hint(const HangVerdict& v) {
  if (v.cut_off)
    return "Every rank entered the collective, but the culprits could not reach the "
           "rendezvous store (on rank 0's host) after they timed out, while the other "
           "ranks could: the link or network between the culprits' hosts and the rest "
           "is cut (NIC, cable, switch port, firewall, routing). Check those hosts' "
           "links (ip link, dmesg). With two hosts, a cut on the store host's side "
           "looks the same from the traces: check both.";
  if (v.culprits.empty())
    return "Every rank reached the collective, so none of them is behind: the transport "
           "or a device stalled (a dead NIC or link, a GPU fault, NCCL/Gloo "
           "misconfiguration). Check the hosts' kernel logs and the backend's debug "
           "output (NCCL_DEBUG=INFO, GLOO_DEBUG).";
  return "Find out why the culprits never reached this collective: their stacks "
         "(py-spy dump / gdb on the live process, or the flight dump's `where`), a "
         "data-dependent branch or an exception that skipped the collective on those "
         "ranks only, a dead data loader, or a rank that died (see rank-died). The "
         "waiters are only victims.";
}

}  // namespace

Finding MakeHangFinding(const HangRun& run, const std::vector<Witness>& witnesses,
                        const HangVerdict& v) {
  const Stuck& stuck = v.stuck;
  Finding f;
  f.kind = std::string(kind::kHang);
  f.severity = Severity::kError;
  f.ranks = v.culprits.empty() ? v.waiters : v.culprits;
  f.step = stuck.step;
  const std::string subject = DescribeCollective(stuck.op, stuck.key, stuck.tag);
  if (stuck.known) f.subject = subject;

  Waiting waiting = WaitersOf(run, witnesses, v);
  if (waiting.since_local) {
    f.ts_ns = waiting.since_local;
    f.ts_rank = waiting.since_rank;
  }
  JsonValue culprit_rows = JsonValue::Array();
  const std::string doing = CulpritsOf(run, v, waiting.since_min, &culprit_rows);
  f.summary = Summary(v, subject, doing, waiting);

  JsonValue& e = f.evidence;
  e.Set("pg", stuck.known ? JsonValue(stuck.key.pg) : JsonValue());
  e.Set("seq", stuck.known ? JsonValue(stuck.key.seq) : JsonValue());
  e.Set("op", stuck.op.empty() ? JsonValue() : JsonValue(stuck.op));
  e.Set("tag", stuck.tag.empty() ? JsonValue() : JsonValue(stuck.tag));
  e.Set("step", OptInt(stuck.step));
  e.Set("inferred", stuck.inferred);
  e.Set("culprit_count", static_cast<int64_t>(v.culprits.size()));
  e.Set("culprits", std::move(culprit_rows));
  e.Set("waiters", WaitersEvidence(run, v, std::move(waiting)));
  e.Set("completed_count", static_cast<int64_t>(v.passed.size()));
  if (!v.no_trace.empty()) e.Set("ranks_without_trace", RankList(v.no_trace));
  e.Set("other_stuck", OtherStuck(witnesses, stuck));
  if (v.cut_off) {
    JsonValue cut = JsonValue::Object();
    cut.Set("ranks", RankList(v.culprits));
    cut.Set("reached", RankList(v.reached));
    cut.Set("store", run.ranks[v.culprits.front()].store_unreachable->store);
    e.Set("cut_off", std::move(cut));
  }
  f.hint = Hint(v);
  return f;
}

}  // namespace dsdiag::analyzers::hang
