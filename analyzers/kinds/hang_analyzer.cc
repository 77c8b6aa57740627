// hang: the collective at which the run stopped making progress, the ranks that never
// entered it (the culprits) and what they were doing instead, and the ranks that waited in
// it and since when.
//
// Input, per rank:
//  - `coll` records: a collective is written when it completes, so the highest `seq` per
//    process group is how far the rank got;
//  - `error` records of the watchdog, the first sign of a hang:
//      {"type":"error","step":5,"where":"watchdog","message":"collective pg 0 seq 15
//       (allreduce, grad-bucket-0) pending for 61.0 s, past the 60.0 s timeout"}
//    (synth and future probes add "pg","seq","op","tag" fields; the message is parsed
//    when they are absent). Any error whose `where` is "watchdog" or whose message says
//    "timeout"/"timed out" counts, like an `end` with reason "error" saying so;
//  - the flight-recorder dump `flight-rank-<R>.json` (flight_dump.h): the entries the rank
//    had entered and not completed, with the monotonic time it entered them, and `where`
//    (step and phase) the main thread was at dump time;
//  - the rank's RankEnd: end reason, last step begun, last phase done, last record.
// A rank *waits* (is a hang witness) when it timed out (error or end record as above), its
// dump's reason is "timeout", or its dump holds an entry pending for longer than
// max(30 s, 3 x the longest step) — but a rank that ended with "peer-failure" saw another
// rank fail, not a hang: a crash is the rank-died analyzer's, and without any witness there
// is no hang finding.
// The stuck collective is the (pg, seq) most witnesses wait in (their oldest pending dump
// entry, else the collective their timeout names, else — flagged "inferred" — the one after
// the last they completed); ties go to the lowest (pg, seq). Ranks of that group that neither
// wait in it nor completed it are the culprits (pg 0 holds every rank; another pg the ranks
// seen using it). When every rank waits, there is no culprit: the transport or a device
// stalled, and the finding names the waiters. When no witness names or implies a collective,
// every other rank is a culprit and the subject is null. One error finding: ranks = the
// culprits, step = the stuck collective's step, subject "allreduce pg 0 seq 20
// (grad-bucket-0)". A culprit without an end record and without a dump stopped writing: the
// rank-died analyzer reports its death as well, the hang finding says where the others were
// left waiting. The waiters' own rank-died findings (their timeouts) are turned into info
// follow-ons of this finding by the hang follow-on pass (hang_follow_on_pass.cc), which
// matches their `waiting_in` against this finding's `pg`, `seq` and culprits.
// A cut link: when every rank waits (no culprit), the ranks that recorded that they could
// not reach the rendezvous store after their timeout (an `error` record with
// "store_unreachable": true, written by `dsdiag train` when publishing its error failed)
// while other ranks that failed reached it (an `end` reason "error" and no such record;
// waiters, or ranks that completed the collective and then waited in a later one) are the
// culprits: their host's link or network is cut, the others only lost them. Not
// when rank 0, the store's host, is among them. The finding's evidence then has `cut_off`
// {ranks, reached, store}; the follow-on pass makes the cut ranks' own timeouts follow-ons.
// Malformed or foreign dumps are left out by the run loader (trace-corrupt reports them).

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/collective_window.h"
#include "analyzers/kinds/common/watchdog_message.h"
#include "trace/rank_clock.h"
#include "trace/record_types.h"

namespace dsdiag::analyzers {
namespace {

using trace::JsonValue;

constexpr int64_t kSecond = 1000000000;
constexpr int64_t kMinStuckNs = 30 * kSecond;
constexpr int64_t kStuckSteps = 3;  // a pending entry older than this many longest steps
constexpr size_t kMaxRows = 8;      // culprits / waiters detailed in the evidence
constexpr size_t kMaxRanksListed = 32;
constexpr size_t kMaxOtherStuck = 4;
constexpr size_t kMaxMessage = 160;

bool Contains(std::string_view text, std::string_view word) {
  auto it = std::search(text.begin(), text.end(), word.begin(), word.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == b;
  });
  return it != text.end();
}

bool IsTimeoutText(std::string_view text) {
  return Contains(text, "timeout") || Contains(text, "timed out") || Contains(text, "time out");
}

std::string Clip(std::string s) {
  if (s.size() > kMaxMessage) s = s.substr(0, kMaxMessage - 3) + "...";
  return s;
}

std::string Seconds(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", ns / 1e9);
  return buf;
}

double SecondsValue(double ns) { return std::round(ns / 1e6) / 1e3; }

std::string OnRanks(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(ranks);
}

JsonValue RankList(const std::vector<int>& ranks) {
  JsonValue list = JsonValue::Array();
  for (size_t i = 0; i < ranks.size() && i < kMaxRanksListed; ++i) list.Push(ranks[i]);
  return list;
}

JsonValue OptInt(const std::optional<int64_t>& v) { return v ? JsonValue(*v) : JsonValue(); }

std::string Describe(const std::string& op, const CollectiveKey& k, const std::string& tag) {
  return (op.empty() ? "collective" : op) + " pg " + std::to_string(k.pg) + " seq " +
         std::to_string(k.seq) + (tag.empty() ? "" : " (" + tag + ")");
}

// A failing rank's `error` record saying it could not reach the rendezvous store.
struct StoreUnreachable {
  std::string store;  // "host:port"
  std::optional<int64_t> tried_ms;
  std::string error;
};

struct TimeoutSignal {
  int64_t ts = 0;
  int64_t step = 0;
  std::string where;
  std::string message;
  std::optional<CollectiveKey> key;
  std::string op;
  std::string tag;
};

struct RankState {
  bool traced = false;
  std::string file_name;
  trace::RankClock clock;
  std::map<int, int64_t> completed;  // per pg, the highest seq completed
  std::optional<CollectiveKey> last_coll;
  std::optional<TimeoutSignal> timeout;
  int64_t timeouts = 0;
  std::optional<StoreUnreachable> store_unreachable;
  bool ended = false;
  RankEnd end;
  const trace::FlightDump* dump = nullptr;  // RunContext::flight_dumps
  std::string dump_file_name;
};

// Why a rank counts as a witness of the hang, and where it waits.
struct Witness {
  int rank = 0;
  std::string signal;  // "watchdog error", "timeout dump", "end: error", "pending in dump"
  std::optional<CollectiveKey> key;
  bool inferred = false;
};

class HangAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kHang; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kCollective, trace::rec::kError, trace::rec::kStep, trace::rec::kClock};
  }

  void Begin(const RunContext& run) override {
    int max_rank = std::max(run.world_size - 1, -1);
    for (const RankInfo& r : run.ranks) max_rank = std::max(max_rank, r.rank);
    for (const RunFlightDump& d : run.flight_dumps) max_rank = std::max(max_rank, d.rank);
    ranks_.resize(static_cast<size_t>(max_rank + 1));
    for (const RankInfo& r : run.ranks) {
      RankState& s = ranks_[r.rank];
      s.traced = true;
      s.file_name = r.file_name;
      s.clock = trace::RankClock(r.header.clock);
      const int64_t start = s.clock.ToRank0(r.header.clock.mono_ns);
      run_start_ = run_start_ ? std::min(*run_start_, start) : start;
    }
    missing_ = run.missing_ranks;
    for (const RunFlightDump& d : run.flight_dumps) {
      ranks_[d.rank].dump = &d.dump;
      ranks_[d.rank].dump_file_name = d.file_name;
    }
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    RankState& s = ranks_[rank.rank];
    const int type = r.type_id();
    if (type == trace::rec_id::kCollective) {
      const auto pg = r.Int("pg");
      const auto seq = r.Int("seq");
      if (!pg || !seq) return;
      const CollectiveKey key{static_cast<int>(*pg), *seq};
      auto [it, fresh] = s.completed.try_emplace(key.pg, key.seq);
      if (!fresh) it->second = std::max(it->second, key.seq);
      s.last_coll = key;
    } else if (type == trace::rec_id::kError) {
      OnError(&s, r);
    } else if (type == trace::rec_id::kStep) {
      max_step_ns_ = std::max(max_step_ns_, r.Int("dur").value_or(0));
    } else if (type == trace::rec_id::kClock) {
      s.clock.Refine(r);
    }
  }

  void OnRankEnd(const RankInfo& rank, const RankEnd& end) override {
    RankState& s = ranks_[rank.rank];
    s.ended = true;
    s.end = end;
    s.end.issues.clear();
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    std::vector<Witness> witnesses;
    for (size_t r = 0; r < ranks_.size(); ++r)
      if (auto w = WitnessOf(static_cast<int>(r))) witnesses.push_back(std::move(*w));
    if (witnesses.empty()) return;
    findings->push_back(MakeFinding(witnesses));
  }

 private:
  static void OnError(RankState* s, const trace::Record& r) {
    if (r.Bool("store_unreachable").value_or(false)) {
      if (!s->store_unreachable) {
        s->store_unreachable =
            StoreUnreachable{std::string(r.Str("store").value_or("")), r.Int("tried_ms"),
                             std::string(r.Str("store_error").value_or(""))};
      }
      return;
    }
    const std::string where(r.Str("where").value_or(""));
    const std::string message(r.Str("message").value_or(""));
    if (where != "watchdog" && !IsTimeoutText(message)) return;
    if (s->timeouts++ > 0) return;
    TimeoutSignal t;
    t.ts = r.ts();
    t.step = r.step();
    t.where = where;
    t.message = message;
    const auto pg = r.Int("pg");
    const auto seq = r.Int("seq");
    const std::optional<NamedCollective> named = ParseNamedCollective(message);
    if (pg && seq) {
      t.key = CollectiveKey{static_cast<int>(*pg), *seq};
    } else if (named) {
      t.key = CollectiveKey{named->pg, named->seq};
    }
    if (named && t.key && *t.key == CollectiveKey{named->pg, named->seq}) {
      t.op = named->op;
      t.tag = named->tag;
    }
    if (auto op = r.Str("op")) t.op = std::string(*op);
    if (auto tag = r.Str("tag")) t.tag = std::string(*tag);
    s->timeout = std::move(t);
  }

  std::optional<Witness> WitnessOf(int rank) const {
    const RankState& s = ranks_[rank];
    const trace::FlightDumpEntry* pending = s.dump ? s.dump->OldestPending() : nullptr;
    Witness w;
    w.rank = rank;
    if (s.timeout) {
      w.signal = s.timeout->where == "watchdog" ? "watchdog error" : "timeout error";
    } else if (s.ended && s.end.end_seen && s.end.reason == "error" &&
               IsTimeoutText(s.end.detail)) {
      w.signal = "end: error (timeout)";
    } else if (s.dump && s.dump->reason == "timeout") {
      w.signal = "timeout dump";
    } else if (pending && PendingAge(*s.dump, *pending) >= StuckAfter() &&
               !(s.end.end_seen && s.end.reason == "peer-failure")) {
      w.signal = "pending in dump";
    } else {
      return std::nullopt;
    }
    if (pending) {
      w.key = CollectiveKey{pending->pg, pending->seq};
    } else if (s.timeout && s.timeout->key) {
      w.key = s.timeout->key;
    } else if (s.last_coll) {
      w.key = CollectiveKey{s.last_coll->pg, s.completed.at(s.last_coll->pg) + 1};
      w.inferred = true;
    }
    return w;
  }

  int64_t StuckAfter() const { return std::max(kMinStuckNs, kStuckSteps * max_step_ns_); }

  static int64_t PendingAge(const trace::FlightDump& d, const trace::FlightDumpEntry& e) {
    const auto since = e.issued ? e.issued : e.started;
    return since ? d.ts - *since : 0;
  }

  static const trace::FlightDumpEntry* DumpEntry(const RankState& s, const CollectiveKey& k) {
    if (!s.dump) return nullptr;
    for (const trace::FlightDumpEntry& e : s.dump->entries)
      if (e.pg == k.pg && e.seq == k.seq) return &e;
    return nullptr;
  }

  bool UsesPg(const RankState& s, int pg) const {
    if (pg == 0 || s.completed.count(pg)) return true;
    if (s.dump)
      for (const trace::FlightDumpEntry& e : s.dump->entries)
        if (e.pg == pg) return true;
    return false;
  }

  // A rank-local time on rank 0's clock: the trace's clock (refined by its clock records)
  // when there is a trace, else the dump's.
  std::optional<int64_t> ToRank0(const RankState& s, std::optional<int64_t> ts) const {
    if (!ts) return std::nullopt;
    if (s.traced) return s.clock.ToRank0(*ts);
    if (s.dump && s.dump->clock) return trace::RankClock(*s.dump->clock).ToRank0(*ts);
    return std::nullopt;
  }

  struct Stuck {
    CollectiveKey key;
    bool known = false;
    bool inferred = false;
    std::string op, tag;
    std::optional<int64_t> step;
  };

  static Stuck ChooseStuck(const std::vector<Witness>& witnesses) {
    std::map<CollectiveKey, std::pair<int, bool>> votes;  // count, all inferred
    for (const Witness& w : witnesses) {
      if (!w.key) continue;
      auto [it, fresh] = votes.try_emplace(*w.key, 0, true);
      ++it->second.first;
      it->second.second = it->second.second && w.inferred;
    }
    Stuck stuck;
    int best = 0;
    for (const auto& [key, v] : votes) {
      if (v.first > best) {  // map order: ties keep the lowest (pg, seq)
        best = v.first;
        stuck.key = key;
        stuck.known = true;
        stuck.inferred = v.second;
      }
    }
    return stuck;
  }

  // Fills op, tag and step from the first waiter that knows them.
  void FillDetails(Stuck* stuck, const std::vector<int>& waiters) const {
    for (int r : waiters) {
      const RankState& s = ranks_[r];
      if (const trace::FlightDumpEntry* e = DumpEntry(s, stuck->key)) {
        if (stuck->op.empty()) stuck->op = e->op;
        if (stuck->tag.empty()) stuck->tag = e->tag;
        if (!stuck->step) stuck->step = e->step;
      }
      if (s.timeout && s.timeout->key && *s.timeout->key == stuck->key) {
        if (stuck->op.empty()) stuck->op = s.timeout->op;
        if (stuck->tag.empty()) stuck->tag = s.timeout->tag;
        if (!stuck->step) stuck->step = s.timeout->step;
      }
    }
    for (int r : waiters)
      if (!stuck->step && ranks_[r].ended) stuck->step = ranks_[r].end.last_step_begun;
  }

  struct WaitTimes {
    std::optional<int64_t> since_local;  // rank-local monotonic ns
    std::optional<int64_t> since;        // rank 0's clock
    std::optional<int64_t> waited;       // ns, until it dumped / timed out / ended
  };

  WaitTimes WaitOf(const RankState& s, const Stuck& stuck) const {
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
  // `wait_from`: when the first waiter entered the stuck collective (rank 0's clock).
  std::string Doing(int rank, const Stuck& stuck, std::optional<int64_t> wait_from,
                    JsonValue* row) const {
    const RankState& s = ranks_[rank];
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
      b.Set("op", blocked->op);
      b.Set("tag", blocked->tag);
      b.Set("step", OptInt(blocked->step));
      row->Set("blocked_in", std::move(b));
      text = "it was blocked in " + Describe(blocked->op, other, blocked->tag);
    } else if (s.dump && s.dump->where_step) {
      text = "its flight dump shows it in " +
             (s.dump->where_phase.empty() ? std::string("no phase") : s.dump->where_phase) +
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
      if (!s.end.detail.empty()) row->Set("end_detail", Clip(s.end.detail));
      text += "; it ended with reason \"" + s.end.reason + "\"";
    } else if (stopped) {
      text += ", then it stopped writing (no end record)";
    }
    return text;
  }

  // The waiters cut off from the store's host: those that recorded the store unreachable,
  // when others that failed too (end reason "error") reached it and rank 0, the store's
  // host, is not among them. Empty otherwise; *reached gets the ones that reached it. The
  // others may have `passed` the stuck collective: a link cut mid-allreduce can leave one
  // side done with it and waiting in the next one, for a peer that will never come.
  std::vector<int> CutOff(const std::vector<int>& waiters, const std::vector<int>& passed,
                          std::vector<int>* reached) const {
    std::vector<int> cut, ok;
    auto failed_but_reached = [&](const RankState& s) {
      return !s.store_unreachable && s.ended && s.end.end_seen && s.end.reason == "error";
    };
    for (int r : waiters) {
      if (ranks_[r].store_unreachable) {
        cut.push_back(r);
      } else if (failed_but_reached(ranks_[r])) {
        ok.push_back(r);
      }
    }
    for (int r : passed)
      if (failed_but_reached(ranks_[r])) ok.push_back(r);
    std::sort(ok.begin(), ok.end());
    if (cut.empty() || ok.empty() || cut.front() == 0) return {};
    *reached = std::move(ok);
    return cut;
  }

  // A cut-off culprit's row and words: the store it could not reach, and for how long.
  static std::string CutOffRow(const RankState& s, JsonValue* row) {
    const StoreUnreachable& u = *s.store_unreachable;
    row->Set("store_unreachable", true);
    row->Set("store", u.store);
    row->Set("store_tried_s",
             u.tried_ms ? JsonValue(SecondsValue(double(*u.tried_ms) * 1e6)) : JsonValue());
    if (!u.error.empty()) row->Set("store_error", Clip(u.error));
    return "it could not reach the store at " + (u.store.empty() ? "rank 0" : u.store) +
           " after its timeout";
  }

  Finding MakeFinding(const std::vector<Witness>& witnesses) const {
    Stuck stuck = ChooseStuck(witnesses);
    std::vector<int> waiters, passed, culprits, no_trace;
    std::set<int> waiting;
    for (const Witness& w : witnesses)
      if (!stuck.known || (w.key && *w.key == stuck.key)) waiting.insert(w.rank);
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const int rank = static_cast<int>(r);
      const RankState& s = ranks_[r];
      if (!s.traced && !s.dump) {
        if (std::find(missing_.begin(), missing_.end(), rank) != missing_.end())
          no_trace.push_back(rank);
        continue;
      }
      if (!stuck.known) {
        (waiting.count(rank) ? waiters : culprits).push_back(rank);
        continue;
      }
      const trace::FlightDumpEntry* e = DumpEntry(s, stuck.key);
      const auto done = s.completed.find(stuck.key.pg);
      if (waiting.count(rank) || (e && e->pending())) {
        waiters.push_back(rank);
      } else if ((done != s.completed.end() && done->second >= stuck.key.seq) || e) {
        passed.push_back(rank);
      } else if (UsesPg(s, stuck.key.pg)) {
        culprits.push_back(rank);
      }
    }
    if (culprits.empty() && stuck.known && stuck.key.pg == 0) culprits = no_trace;
    std::vector<int> reached;
    if (culprits.empty() && stuck.known) culprits = CutOff(waiters, passed, &reached);
    const bool cut_off = !reached.empty();
    if (stuck.known) FillDetails(&stuck, waiters);

    Finding f;
    f.kind = std::string(kind::kHang);
    f.severity = Severity::kError;
    f.ranks = culprits.empty() ? waiters : culprits;
    f.step = stuck.step;
    const std::string subject = Describe(stuck.op, stuck.key, stuck.tag);
    if (stuck.known) f.subject = subject;

    // The waiters' times.
    std::optional<int64_t> since_min, waited_max, waited_min;
    JsonValue waiter_rows = JsonValue::Array();
    for (int r : waiters) {
      const WaitTimes t = WaitOf(ranks_[r], stuck);
      if (t.since && (!since_min || *t.since < *since_min)) {
        since_min = t.since;
        f.ts_ns = t.since_local;
        f.ts_rank = r;
      }
      if (t.waited) {
        waited_max = std::max(waited_max.value_or(*t.waited), *t.waited);
        waited_min = std::min(waited_min.value_or(*t.waited), *t.waited);
      }
      if (waiter_rows.elements().size() < kMaxRows) {
        JsonValue row = JsonValue::Object();
        row.Set("rank", r);
        auto w = std::find_if(witnesses.begin(), witnesses.end(),
                              [&](const Witness& x) { return x.rank == r; });
        row.Set("signal", w == witnesses.end() ? "pending in dump" : w->signal);
        row.Set("since_rank0_ns", OptInt(t.since));
        row.Set("waited_s", t.waited ? JsonValue(SecondsValue(double(*t.waited))) : JsonValue());
        const RankState& s = ranks_[r];
        if (s.timeout) row.Set("message", Clip(s.timeout->message));
        waiter_rows.Push(std::move(row));
      }
    }

    // The culprits.
    JsonValue culprit_rows = JsonValue::Array();
    std::string doing;
    for (int r : culprits) {
      JsonValue row = JsonValue::Object();
      std::string text = Doing(r, stuck, since_min, &row);
      if (cut_off) text = CutOffRow(ranks_[r], &row);
      if (doing.empty()) doing = text;
      if (culprit_rows.elements().size() < kMaxRows) culprit_rows.Push(std::move(row));
    }

    const std::string at =
        stuck.known ? subject + (stuck.step ? " in step " + std::to_string(*stuck.step) : "")
                    : "a collective the traces do not name";
    std::string wait_text = OnRanks(waiters) + " waited in it";
    if (waited_max) wait_text += " for up to " + Seconds(double(*waited_max));
    if (cut_off) {
      const bool one = culprits.size() == 1;
      f.summary = OnRanks(culprits) + (one ? " was" : " were") + " cut off from the others in " +
                  at + ": " + (one ? "" : "rank " + std::to_string(culprits.front()) + ": ") +
                  doing + " while " + OnRanks(reached) + " reached it: " + (one ? "its" : "their") +
                  " host's link or network is cut; " + wait_text;
    } else if (culprits.empty()) {
      f.summary = "every rank still running entered " + at + " and none completed it (" +
                  OnRanks(waiters) +
                  (waited_max ? " waited up to " + Seconds(double(*waited_max)) : "") + ")";
    } else {
      const bool one = culprits.size() == 1;
      f.summary = OnRanks(culprits) + " never entered " + at + ": " +
                  (one ? "" : "rank " + std::to_string(culprits.front()) + ": ") + doing + "; " +
                  wait_text;
    }
    if (stuck.inferred) f.summary += " (collective inferred from the last completed one)";

    JsonValue& e = f.evidence;
    e.Set("pg", stuck.known ? JsonValue(stuck.key.pg) : JsonValue());
    e.Set("seq", stuck.known ? JsonValue(stuck.key.seq) : JsonValue());
    e.Set("op", stuck.op.empty() ? JsonValue() : JsonValue(stuck.op));
    e.Set("tag", stuck.tag.empty() ? JsonValue() : JsonValue(stuck.tag));
    e.Set("step", OptInt(stuck.step));
    e.Set("inferred", stuck.inferred);
    e.Set("culprit_count", static_cast<int64_t>(culprits.size()));
    e.Set("culprits", std::move(culprit_rows));
    JsonValue w = JsonValue::Object();
    w.Set("count", static_cast<int64_t>(waiters.size()));
    w.Set("ranks", RankList(waiters));
    w.Set("since_rank0_ns", OptInt(since_min));
    w.Set("since_run_start_s", since_min && run_start_
                                   ? JsonValue(SecondsValue(double(*since_min - *run_start_)))
                                   : JsonValue());
    w.Set("waited_max_s", waited_max ? JsonValue(SecondsValue(double(*waited_max))) : JsonValue());
    w.Set("waited_min_s", waited_min ? JsonValue(SecondsValue(double(*waited_min))) : JsonValue());
    w.Set("detail", std::move(waiter_rows));
    e.Set("waiters", std::move(w));
    e.Set("completed_count", static_cast<int64_t>(passed.size()));
    if (!no_trace.empty()) e.Set("ranks_without_trace", RankList(no_trace));
    e.Set("other_stuck", OtherStuck(witnesses, stuck));
    if (cut_off) {
      JsonValue cut = JsonValue::Object();
      cut.Set("ranks", RankList(culprits));
      cut.Set("reached", RankList(reached));
      cut.Set("store", ranks_[culprits.front()].store_unreachable->store);
      e.Set("cut_off", std::move(cut));
    }

    f.hint = cut_off ? "Every rank entered the collective, but the culprits could not reach the "
                       "rendezvous store (on rank 0's host) after they timed out, while the other "
                       "ranks could: the link or network between the culprits' hosts and the rest "
                       "is cut (NIC, cable, switch port, firewall, routing). Check those hosts' "
                       "links (ip link, dmesg). With two hosts, a cut on the store host's side "
                       "looks the same from the traces: check both."
             : culprits.empty()
                 ? "Every rank reached the collective, so none of them is behind: the transport "
                   "or a device stalled (a dead NIC or link, a GPU fault, NCCL/Gloo "
                   "misconfiguration). Check the hosts' kernel logs and the backend's debug "
                   "output (NCCL_DEBUG=INFO, GLOO_DEBUG)."
                 : "Find out why the culprits never reached this collective: their stacks "
                   "(py-spy dump / gdb on the live process, or the flight dump's `where`), a "
                   "data-dependent branch or an exception that skipped the collective on those "
                   "ranks only, a dead data loader, or a rank that died (see rank-died). The "
                   "waiters are only victims.";
    return f;
  }

  JsonValue OtherStuck(const std::vector<Witness>& witnesses, const Stuck& stuck) const {
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

  std::vector<RankState> ranks_;  // by rank number: traced ranks, dumps, the world
  std::vector<int> missing_;
  std::optional<int64_t> run_start_;
  int64_t max_step_ns_ = 0;
};

}  // namespace

std::unique_ptr<Analyzer> CreateHangAnalyzer() { return std::make_unique<HangAnalyzer>(); }

}  // namespace dsdiag::analyzers
