// rank-died: ranks that did not finish the run the way dsdiag finishes it.
//
// Input: RunContext::missing_ranks, each rank's RankEnd, its `signal` records, the
// collective named by its `error` records, and its flight-recorder dump. A rank that exits
// through a path dsdiag controls writes a last record
//   {"type":"end","ts":98765,"step":50,"reason":"ok","status":0}
// with reason ok | signal (+ "signal": name) | error (+ "error": message) | peer-failure.
// Fates and severities:
//   no trace file at all              error   one finding for all missing ranks
//   trace stops without `end`, in a   warning one per rank (grouped past kMaxPerRank): the
//   partial last line ending at a             writer's write(2) came up short (disk full,
//   block boundary (file size a               quota, I/O error). The writer writes whole
//   multiple of kBlockBytes), no              lines in one write(2), so a killed process
//   `signal` record                           leaves whole lines, and a file system refuses
//                                             a write a block at a time; this rank's fate
//                                             after the failed write is unknown, not a
//                                             death. A partial line elsewhere is a rank
//                                             killed mid-record (below)
//   trace stops without `end`         error   one per rank (killed, crashed, lost node);
//                                             one grouped finding when every rank stopped
//                                             so (the job was killed from outside) or when
//                                             more than kMaxPerRank ranks did
//   a `signal` record, then no `end`  error   the rank was told to stop and was killed
//                                             before its exit path ended (the launcher's
//                                             SIGKILL after the grace period); like a
//                                             signal end below otherwise
//   `end` reason signal / error       error   one per rank, naming the signal or message
//                                             (one grouped finding for more than
//                                             kMaxPerRank ranks that ended alike);
//                                     info for SIGTERM/SIGINT/SIGHUP when another rank died
//                                             silently (the launcher tearing the job down)
//   `end` reason peer-failure         info    when another rank's failure is found here,
//                                     warning when none is (the cause left no trace)
//   `end` reason ok, status != 0      warning
//   `end` with another reason         warning (e.g. "destroyed": the session was torn down
//                                             without End(), an exception unwound the loop)
// Every failure finding carries `peers_max_step`, the furthest step any other rank began:
// a rank far behind it stopped first. Where a rank stopped: the trace's last step begun,
// and the phase from its flight dump's `where` when the dump was written after the rank's
// last step/phase/collective record (an older dump says where it was then, not where it
// stopped). The collective a rank was left waiting in (`waiting_in`): the oldest pending
// entry of such a dump, else the pg/seq of its first `error` record naming one. The hang
// follow-on pass (findings_pass.h) matches `waiting_in` against a hang finding.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/collective_window.h"
#include "analyzers/kinds/common/watchdog_message.h"
#include "trace/record_types.h"
#include "trace/run_files.h"

namespace dsdiag::analyzers {
namespace {

using trace::JsonValue;

constexpr size_t kMaxPerRank = 8;    // silent deaths reported one by one up to this many
constexpr size_t kMaxListed = 8;     // ranks detailed in a grouped finding
constexpr size_t kMaxMessage = 160;  // error message length in a summary
// A write refused for space or quota stops at a block the file system could not allocate.
constexpr int64_t kBlockBytes = 4096;

// kKilledAfterSignal: a `signal` record, then no `end` (killed while stopping).
enum class Fate {
  kClean,
  kNoEnd,
  kCutShort,  // no `end`, a partial last line: a failed write, not a death
  kKilledAfterSignal,
  kSignal,
  kError,
  kPeerFailure,
  kOkNonZero,
  kOtherReason
};

// The first `signal` record of a rank.
struct RecordedSignal {
  std::string name;
  int64_t step = 0;
  int64_t ts = 0;
};

// A collective a rank was left waiting in.
struct WaitingIn {
  CollectiveKey key;
  std::string op;
  std::string tag;
  std::optional<int64_t> step;
  std::string from;  // "flight dump", "error record"
};

// What OnRecord gathers of one rank, before its RankEnd.
struct RankRecords {
  std::optional<RecordedSignal> signal;
  std::optional<WaitingIn> error_collective;
  // The latest end (ts + dur) of a step, phase or collective record: a flight dump written
  // after it is the rank's last word on where it was.
  std::optional<int64_t> progress_end;
};

// What Finish needs of one analysed rank; RankEnd's issue list is not kept.
struct RankState {
  int rank = 0;
  std::string file_name;
  std::string host;
  int64_t pid = 0;
  RankEnd end;
  RankRecords records;
  Fate fate = Fate::kClean;
};

Fate Classify(const RankEnd& end, const RankRecords& records) {
  if (!end.end_seen) {
    if (records.signal) return Fate::kKilledAfterSignal;
    const bool at_block = end.bytes_read > 0 && end.bytes_read % kBlockBytes == 0;
    return end.truncated_tail && at_block ? Fate::kCutShort : Fate::kNoEnd;
  }
  if (end.reason == "ok") return end.status.value_or(0) == 0 ? Fate::kClean : Fate::kOkNonZero;
  if (end.reason == "signal") return Fate::kSignal;
  if (end.reason == "error") return Fate::kError;
  if (end.reason == "peer-failure") return Fate::kPeerFailure;
  return Fate::kOtherReason;
}

bool IsFailure(Fate fate) {
  return fate == Fate::kNoEnd || fate == Fate::kKilledAfterSignal || fate == Fate::kSignal ||
         fate == Fate::kError;
}

// SIGUSR1 asks the flight recorder for a dump; it stops nothing.
bool EndsProcess(std::string_view signal) { return signal != "SIGUSR1"; }

bool IsProgress(int type) {
  return type == trace::rec_id::kStepBegin || type == trace::rec_id::kStep ||
         type == trace::rec_id::kPhase || type == trace::rec_id::kCollective;
}

// The collective an `error` record names: its pg/seq fields (synth, future probes), else
// the watchdog's message ("collective pg 0 seq 15 (allreduce, grad-bucket-0) pending ...").
std::optional<WaitingIn> NamedIn(const trace::Record& r) {
  const auto pg = r.Int("pg");
  const auto seq = r.Int("seq");
  if (pg && seq && *pg >= 0 && *pg <= INT32_MAX) {
    return WaitingIn{{static_cast<int>(*pg), *seq},
                     std::string(r.Str("op").value_or("")),
                     std::string(r.Str("tag").value_or("")),
                     r.step(),
                     "error record"};
  }
  const auto named = ParseNamedCollective(r.Str("message").value_or(""));
  if (!named) return std::nullopt;
  return WaitingIn{{named->pg, named->seq}, named->op, named->tag, r.step(), "error record"};
}

JsonValue WaitingJson(const WaitingIn& w) {
  JsonValue v = JsonValue::Object();
  v.Set("pg", w.key.pg);
  v.Set("seq", w.key.seq);
  v.Set("op", w.op.empty() ? JsonValue() : JsonValue(w.op));
  v.Set("tag", w.tag.empty() ? JsonValue() : JsonValue(w.tag));
  v.Set("step", w.step ? JsonValue(*w.step) : JsonValue());
  v.Set("from", w.from);
  return v;
}

JsonValue OptionalInt(const std::optional<int64_t>& v) { return v ? JsonValue(*v) : JsonValue(); }

std::string StepText(const std::optional<int64_t>& step) {
  return step ? "during step " + std::to_string(*step) : "before its first step";
}

std::string Clip(std::string s, size_t n) {
  if (s.size() > n) s = s.substr(0, n - 3) + "...";
  return s;
}

class RankDiedAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kRankDied; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kStepBegin,  trace::rec::kStep,   trace::rec::kPhase,
            trace::rec::kCollective, trace::rec::kSignal, trace::rec::kError};
  }

  void Begin(const RunContext& run) override {
    run_ = &run;
    int max_rank = -1;
    for (const RankInfo& r : run.ranks) max_rank = std::max(max_rank, r.rank);
    records_.resize(static_cast<size_t>(max_rank + 1));
  }

  // Signals, errors, and how far the rank's progress records reach.
  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    RankRecords& t = records_[static_cast<size_t>(rank.rank)];
    const int type = r.type_id();
    if (IsProgress(type)) {
      const int64_t end = r.ts() + std::max<int64_t>(0, r.Int("dur").value_or(0));
      t.progress_end = std::max(t.progress_end.value_or(end), end);
    } else if (type == trace::rec_id::kSignal) {
      const std::string_view name = r.Str("signal").value_or("signal");
      if (!t.signal && EndsProcess(name))
        t.signal = RecordedSignal{std::string(name), r.step(), r.ts()};
    } else if (type == trace::rec_id::kError && !t.error_collective) {
      t.error_collective = NamedIn(r);
    }
  }

  void OnRankEnd(const RankInfo& rank, const RankEnd& end) override {
    RankState s{rank.rank, rank.file_name, rank.header.host, rank.header.pid, end,
                {},        Fate::kClean};
    s.end.issues.clear();
    if (static_cast<size_t>(rank.rank) < records_.size())
      s.records = std::move(records_[static_cast<size_t>(rank.rank)]);
    s.fate = Classify(s.end, s.records);
    ranks_.push_back(std::move(s));
  }

  void Finish(const RunContext& run, std::vector<Finding>* out) override {
    std::sort(ranks_.begin(), ranks_.end(),
              [](const RankState& a, const RankState& b) { return a.rank < b.rank; });
    if (!run.missing_ranks.empty()) out->push_back(Missing(run));
    ReportSilentDeaths(out);
    ReportCutShort(out);
    const std::vector<int> silently_dead = SilentlyDead(run);
    std::vector<Finding> announced;
    for (const auto& s : ranks_) {
      switch (s.fate) {
        case Fate::kKilledAfterSignal:
        case Fate::kSignal:
        case Fate::kError:
          announced.push_back(Announced(s, silently_dead));
          break;
        case Fate::kOkNonZero:
        case Fate::kOtherReason:
          out->push_back(OddEnd(s));
          break;
        default:
          break;
      }
    }
    GroupAlike(std::move(announced), out);
    ReportPeerFailures(run, out);
  }

  // When many ranks ended alike (the survivors of a 1,024-rank hang all time out in the same
  // collective), one finding says so instead of one per rank: the findings of a group share
  // severity and summary once the rank is taken out.
  static void GroupAlike(std::vector<Finding> findings, std::vector<Finding>* out) {
    std::map<std::pair<Severity, std::string>, std::vector<Finding>> groups;
    for (Finding& f : findings) {
      std::string key = f.summary;
      const std::string rank = "rank " + std::to_string(f.ranks.front()) + " ";
      if (key.rfind(rank, 0) == 0) key = key.substr(rank.size());
      groups[{f.severity, key}].push_back(std::move(f));
    }
    for (auto& [key, group] : groups) {
      if (group.size() <= kMaxPerRank) {
        for (Finding& f : group) out->push_back(std::move(f));
        continue;
      }
      JsonValue listed = JsonValue::Array();
      std::vector<int> ranks;
      std::optional<int64_t> step;
      // The collective they all waited in, when they agree (what the hang pass matches).
      const JsonValue* waiting = group.front().evidence.Find("waiting_in");
      std::optional<JsonValue> shared_wait;
      if (waiting) shared_wait = *waiting;
      for (const Finding& g : group) {
        ranks.push_back(g.ranks.front());
        if (g.step && (!step || *g.step < *step)) step = g.step;
        const JsonValue* w = g.evidence.Find("waiting_in");
        if (shared_wait && (!w || *w != *shared_wait)) shared_wait.reset();
        if (listed.elements().size() < kMaxListed) listed.Push(g.evidence);
      }
      Finding f = std::move(group.front());
      f.ranks = std::move(ranks);
      f.step = step;
      NormalizeRanks(&f.ranks);
      f.summary = std::to_string(f.ranks.size()) + " ranks (" + FormatRankRanges(f.ranks) + ") " +
                  key.second;
      f.evidence = JsonValue::Object();
      f.evidence.Set("ranks_alike", static_cast<int64_t>(f.ranks.size()));
      if (shared_wait) f.evidence.Set("waiting_in", std::move(*shared_wait));
      f.evidence.Set("first", std::move(listed));
      out->push_back(std::move(f));
    }
  }

 private:
  // The rank's flight dump, when the run loader found a usable one.
  const trace::FlightDump* Dump(int rank) const {
    const RunFlightDump* d = run_->FlightDumpOf(rank);
    return d ? &d->dump : nullptr;
  }

  std::string DumpFileName(int rank) const {
    const RunFlightDump* d = run_->FlightDumpOf(rank);
    return d ? d->file_name : std::string();
  }

  // The dump when it was written after the rank's last step, phase or collective record:
  // it then says where the rank stopped. An older one (a SIGUSR1 request mid-run) does not.
  const trace::FlightDump* LastWord(const RankState& s) const {
    const trace::FlightDump* d = Dump(s.rank);
    if (!d || (s.records.progress_end && d->ts < *s.records.progress_end)) return nullptr;
    return d;
  }

  // The phase the rank stopped in, when its last-word dump names one of the step it was in.
  std::string StoppedPhase(const RankState& s) const {
    const trace::FlightDump* d = LastWord(s);
    if (!d || d->where_phase.empty() || d->where_phase == "none") return {};
    if (d->where_step && s.end.last_step_begun && *d->where_step != *s.end.last_step_begun)
      return {};
    return d->where_phase;
  }

  // "in sync of step 3" when the phase is known, else "during step 3".
  std::string WhereText(const RankState& s) const {
    const std::string phase = StoppedPhase(s);
    if (phase.empty() || !s.end.last_step_begun) return StepText(s.end.last_step_begun);
    return "in " + phase + " of step " + std::to_string(*s.end.last_step_begun);
  }

  std::optional<WaitingIn> Waiting(const RankState& s) const {
    if (const trace::FlightDump* d = LastWord(s)) {
      if (const trace::FlightDumpEntry* e = d->OldestPending())
        return WaitingIn{{e->pg, e->seq}, e->op, e->tag, e->step, "flight dump"};
    }
    return s.records.error_collective;
  }

  // The signal that stopped the rank: its `end` record's, else the one it recorded.
  static std::string SignalOf(const RankState& s) {
    if (s.fate == Fate::kSignal) return s.end.detail;
    return s.records.signal ? s.records.signal->name : std::string();
  }

  // The furthest step any rank other than `rank` began.
  std::optional<int64_t> PeersMaxStep(int rank) const {
    std::optional<int64_t> best;
    for (const auto& s : ranks_)
      if (s.rank != rank && s.end.last_step_begun)
        best = std::max(best.value_or(*s.end.last_step_begun), *s.end.last_step_begun);
    return best;
  }

  Finding Base(const RankState& s, Severity severity) const {
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
    e.Set("last_step_begun", OptionalInt(s.end.last_step_begun));
    e.Set("last_step_done", OptionalInt(s.end.last_step_done));
    e.Set("last_phase_done", s.end.last_phase.empty() ? JsonValue() : JsonValue(s.end.last_phase));
    e.Set("last_record_line", s.end.last_line);
    e.Set("last_record_ts", OptionalInt(s.end.last_ts));
    e.Set("peers_max_step", OptionalInt(PeersMaxStep(s.rank)));
    if (const RunFlightDump* dump = run_->FlightDumpOf(s.rank))
      e.Set("flight_dump", dump->file_name);
    const std::string phase = StoppedPhase(s);
    if (!phase.empty()) {
      const trace::FlightDump* d = LastWord(s);
      JsonValue in = JsonValue::Object();
      in.Set("step", OptionalInt(s.end.last_step_begun));
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

  Finding Missing(const RunContext& run) const {
    Finding f;
    f.kind = std::string(kind::kRankDied);
    f.severity = Severity::kError;
    f.ranks = run.missing_ranks;
    const bool one = run.missing_ranks.size() == 1;
    f.summary = std::string(one ? "rank " : "ranks ") + FormatRankRanges(run.missing_ranks) +
                (one ? " has" : " have") + " no trace in the run directory (world size " +
                std::to_string(run.world_size) + ")";
    JsonValue files = JsonValue::Array();
    for (size_t i = 0; i < run.missing_ranks.size() && i < kMaxListed; ++i)
      files.Push(trace::RankTraceFileName(run.missing_ranks[i]));
    f.evidence.Set("missing", static_cast<int64_t>(run.missing_ranks.size()));
    f.evidence.Set("expected_files", std::move(files));
    f.evidence.Set("world_size", run.world_size);
    f.evidence.Set("ranks_found", static_cast<int64_t>(run.ranks_found.size()));
    f.hint = std::string(one ? "That rank" : "Those ranks") +
             " never started or never opened a trace here: check the launcher's log (failed to "
             "start, wrong --out, node down) and, with several nodes, that RUN_DIR is on a "
             "filesystem every node writes to.";
    return f;
  }

  void ReportSilentDeaths(std::vector<Finding>* out) const {
    std::vector<const RankState*> dead;
    for (const auto& s : ranks_)
      if (s.fate == Fate::kNoEnd) dead.push_back(&s);
    if (dead.empty()) return;
    const bool everyone = dead.size() == ranks_.size() && ranks_.size() > 1;
    if (!everyone && dead.size() <= kMaxPerRank) {
      for (const RankState* s : dead) out->push_back(SilentDeath(*s));
      return;
    }
    out->push_back(SilentDeaths(dead, everyone));
  }

  // Traces cut short by a failed write: one warning per rank, one for all past kMaxPerRank.
  void ReportCutShort(std::vector<Finding>* out) const {
    std::vector<const RankState*> cut;
    for (const auto& s : ranks_)
      if (s.fate == Fate::kCutShort) cut.push_back(&s);
    if (cut.size() <= kMaxPerRank) {
      for (const RankState* s : cut) out->push_back(CutShort(*s));
      return;
    }
    Finding f = CutShort(*cut.front());
    f.ranks.clear();
    JsonValue listed = JsonValue::Array();
    for (const RankState* s : cut) {
      f.ranks.push_back(s->rank);
      if (listed.elements().size() < kMaxListed) listed.Push(CutShort(*s).evidence);
    }
    f.summary = std::to_string(cut.size()) +
                " ranks' traces were cut short by a failed write (disk full or quota?): what "
                "the ranks did after that is unknown";
    f.evidence = JsonValue::Object();
    f.evidence.Set("count", static_cast<int64_t>(cut.size()));
    f.evidence.Set("first", std::move(listed));
    out->push_back(std::move(f));
  }

  Finding CutShort(const RankState& s) const {
    Finding f = Base(s, Severity::kWarning);
    f.evidence.Set("truncated_tail", true);
    f.evidence.Set("bytes", s.end.bytes_read);
    f.summary = "rank " + std::to_string(s.rank) +
                "'s trace was cut short by a failed write at byte " +
                std::to_string(s.end.bytes_read) +
                (s.end.last_step_done ? ", after step " + std::to_string(*s.end.last_step_done)
                                      : ", before its first step ended") +
                " (disk full or quota?): what the rank did after that is unknown";
    f.hint =
        "The trace ends in a partial line and has no end record: the trace writer writes whole "
        "lines with one write(2), so a kill leaves whole lines, and a partial one means a write "
        "came up short (no space left, quota exceeded, an I/O error). Check free space and "
        "quota on the trace directory (df, quota); dsdiag train says so once on stderr "
        "(\"cannot write trace ...\"). The rank went on without its trace: its exit status is "
        "in the launcher's log.";
    return f;
  }

  // What the other ranks then saw: how each one ended, and with what message (a peer's
  // "connection closed", a collective timeout, the launcher's SIGTERM). Up to kMaxListed.
  JsonValue SurvivorsView(int dead_rank) const {
    JsonValue out = JsonValue::Array();
    for (const auto& s : ranks_) {
      if (s.rank == dead_rank || out.elements().size() >= kMaxListed) continue;
      JsonValue v = JsonValue::Object();
      v.Set("rank", s.rank);
      v.Set("ended", s.end.end_seen ? JsonValue(s.end.reason) : JsonValue("no end record"));
      if (!s.end.detail.empty()) v.Set("detail", Clip(s.end.detail, kMaxMessage));
      v.Set("last_step_begun", OptionalInt(s.end.last_step_begun));
      if (const auto waiting = Waiting(s)) v.Set("waiting_in", WaitingJson(*waiting));
      out.Push(std::move(v));
    }
    return out;
  }

  Finding SilentDeath(const RankState& s) const {
    Finding f = Base(s, Severity::kError);
    const bool phase_known = !StoppedPhase(s).empty();
    f.summary =
        "rank " + std::to_string(s.rank) + " stopped " + WhereText(s) + " without an end record" +
        (s.end.last_phase.empty() || phase_known ? ""
                                                 : " (last phase done: " + s.end.last_phase + ")");
    f.evidence.Set("truncated_tail", s.end.truncated_tail);
    f.evidence.Set("survivors", SurvivorsView(s.rank));
    f.hint =
        "The rank did not reach its exit path: it was SIGKILLed (OOM killer, scheduler), "
        "crashed (segfault, abort) or lost its node, or it hung and the job was cancelled. "
        "Look for an OOM kill of pid " +
        std::to_string(s.pid) + " on " + (s.host.empty() ? "its host" : s.host) +
        " (dmesg), its exit code in the launcher's log, and its flight-rank dump if any.";
    return f;
  }

  // Many ranks stopped silently: one finding, the ranks that stopped earliest listed first.
  Finding SilentDeaths(std::vector<const RankState*> dead, bool everyone) const {
    std::stable_sort(dead.begin(), dead.end(), [](const RankState* a, const RankState* b) {
      return a->end.last_step_begun.value_or(-1) < b->end.last_step_begun.value_or(-1);
    });
    Finding f;
    f.kind = std::string(kind::kRankDied);
    f.severity = Severity::kError;
    for (const RankState* s : dead) f.ranks.push_back(s->rank);
    NormalizeRanks(&f.ranks);
    f.step = dead.front()->end.last_step_begun;
    f.ts_ns = dead.front()->end.last_ts;
    f.ts_rank = dead.front()->rank;
    const std::optional<int64_t> last = dead.back()->end.last_step_begun;
    f.summary = (everyone ? "all " : "") + std::to_string(dead.size()) +
                " ranks stopped without an end record (last step begun: " +
                (f.step ? std::to_string(*f.step) : "none") +
                (last != f.step && last ? " to " + std::to_string(*last) : "") + ")";
    JsonValue listed = JsonValue::Array();
    for (size_t i = 0; i < dead.size() && i < kMaxListed; ++i) {
      JsonValue r = JsonValue::Object();
      r.Set("rank", dead[i]->rank);
      r.Set("file", dead[i]->file_name);
      r.Set("last_step_begun", OptionalInt(dead[i]->end.last_step_begun));
      r.Set("last_phase_done", dead[i]->end.last_phase);
      listed.Push(std::move(r));
    }
    f.evidence.Set("count", static_cast<int64_t>(dead.size()));
    f.evidence.Set("earliest", std::move(listed));
    f.hint = everyone ? "No rank reached its exit path: the job was killed from outside (scheduler "
                        "time limit, preemption, lost nodes) or every rank hung and was then "
                        "killed. The ranks listed first stopped earliest; see any hang finding."
                      : "These ranks did not reach their exit path: check the launcher's log and "
                        "dmesg of their hosts (OOM kills, lost nodes).";
    return f;
  }

  // Ranks that stopped without a word (or left no trace): when one did, a polite stop
  // signal on another rank is the launcher tearing the job down after it, not a cause.
  std::vector<int> SilentlyDead(const RunContext& run) const {
    std::vector<int> dead(run.missing_ranks.begin(), run.missing_ranks.end());
    for (const auto& s : ranks_)
      if (s.fate == Fate::kNoEnd) dead.push_back(s.rank);
    NormalizeRanks(&dead);
    return dead;
  }

  static bool IsStopSignal(const std::string& name) {
    return name == "SIGTERM" || name == "SIGINT" || name == "SIGHUP";
  }

  // A rank that said why it stopped: an `end` with a signal or an error, or a recorded
  // signal before it was killed.
  Finding Announced(const RankState& s, const std::vector<int>& silently_dead) const {
    const std::string signal = SignalOf(s);
    const bool signalled = s.fate == Fate::kSignal || s.fate == Fate::kKilledAfterSignal;
    const bool killed = s.fate == Fate::kKilledAfterSignal;
    const bool follow_on = signalled && IsStopSignal(signal) && !silently_dead.empty();
    Finding f = Base(s, follow_on ? Severity::kInfo : Severity::kError);
    if (s.end.end_seen) {
      f.evidence.Set("reason", s.end.reason);
      f.evidence.Set("status", OptionalInt(s.end.status));
    } else {
      f.evidence.Set("reason", JsonValue());
      f.evidence.Set("truncated_tail", s.end.truncated_tail);
    }
    const std::string rank = "rank " + std::to_string(s.rank);
    if (follow_on) {
      JsonValue dead = JsonValue::Array();
      for (int r : silently_dead) dead.Push(r);
      f.evidence.Set("signal", signal);
      f.evidence.Set("after_deaths_of", std::move(dead));
      f.summary = rank + " was stopped (" + signal +
                  (killed ? ", then killed before its end record" : "") + ") " + WhereText(s) +
                  " after " + (silently_dead.size() == 1 ? "rank " : "ranks ") +
                  FormatRankRanges(silently_dead) + " died: a follow-on, not a cause";
      f.hint =
          "The launcher (or the scheduler) stops the surviving ranks once one has died; "
          "look at the rank-died error of the rank that died first.";
    } else if (killed) {
      f.evidence.Set("signal", signal);
      f.summary = rank + " received " + signal + " and was killed " + WhereText(s) +
                  " before writing its end record";
      f.hint = "Something sent " + signal +
               " to the rank (the scheduler, an operator, the launcher tearing the job down), "
               "and the rank did not get through its exit path before it was killed: after a "
               "grace period launchers send SIGKILL (dsdiag train: 5 s). What held it up is "
               "where it was (evidence.stopped_in, evidence.waiting_in): usually a collective "
               "waiting for a peer that is gone or stuck, or slow I/O.";
    } else if (s.fate == Fate::kSignal) {
      const std::string name = signal.empty() ? "a signal" : signal;
      f.evidence.Set("signal", signal);
      f.summary = rank + " stopped on " + name + " " + WhereText(s);
      f.hint = "Something sent " + name +
               " to the rank: usually the scheduler (time limit, "
               "preemption), an operator, or the launcher tearing the job down after another "
               "failure. Check the job's log for who sent it.";
    } else {
      f.evidence.Set("error", s.end.detail);
      f.summary = rank + " failed " + WhereText(s) + ": " +
                  Clip(s.end.detail.empty() ? "(no message)" : s.end.detail, kMaxMessage);
      f.hint =
          "The rank stopped on an error it caught: the message is in evidence.error and "
          "the trace's `error` records say in which phase it was raised.";
    }
    return f;
  }

  Finding OddEnd(const RankState& s) const {
    Finding f = Base(s, Severity::kWarning);
    f.evidence.Set("reason", s.end.reason);
    f.evidence.Set("status", OptionalInt(s.end.status));
    if (s.fate == Fate::kOkNonZero) {
      f.summary = "rank " + std::to_string(s.rank) + " ended \"ok\" with exit status " +
                  std::to_string(s.end.status.value_or(0));
      f.hint =
          "The loop finished but the process reported failure on exit: look at what runs "
          "after training (checkpoint upload, evaluation, teardown).";
    } else {
      f.summary = "rank " + std::to_string(s.rank) + " ended with reason \"" + s.end.reason +
                  "\" " + StepText(s.end.last_step_begun);
      f.hint =
          "The probes were torn down without a normal end (\"destroyed\": the training "
          "loop left through an exception or an early return). Check the rank's log.";
    }
    return f;
  }

  // Ranks that stopped because another failed: information when the failure is reported
  // here, a warning when nothing in the run explains it.
  void ReportPeerFailures(const RunContext& run, std::vector<Finding>* out) const {
    std::vector<int> stopped;
    std::vector<int> failed = run.missing_ranks;
    std::optional<int64_t> step;
    for (const auto& s : ranks_) {
      if (s.fate == Fate::kPeerFailure) {
        stopped.push_back(s.rank);
        if (s.end.last_step_begun)
          step = std::min(step.value_or(*s.end.last_step_begun), *s.end.last_step_begun);
      } else if (IsFailure(s.fate)) {
        failed.push_back(s.rank);
      }
    }
    for (const auto& e : run.excluded) failed.push_back(e.rank);
    if (stopped.empty()) return;
    NormalizeRanks(&failed);
    Finding f;
    f.kind = std::string(kind::kRankDied);
    f.severity = failed.empty() ? Severity::kWarning : Severity::kInfo;
    f.ranks = stopped;
    f.step = step;
    const bool one = stopped.size() == 1;
    f.summary = std::string(one ? "rank " : "ranks ") + FormatRankRanges(stopped) +
                " stopped on purpose after a peer failed" +
                (failed.empty() ? ", but no rank's failure is recorded"
                                : " (failed: " + FormatRankRanges(failed) + ")");
    JsonValue failed_json = JsonValue::Array();
    for (int r : failed) failed_json.Push(r);
    f.evidence.Set("count", static_cast<int64_t>(stopped.size()));
    f.evidence.Set("failed_ranks", std::move(failed_json));
    f.hint = failed.empty()
                 ? "These ranks saw a peer fail, yet every trace here ends cleanly or on "
                   "purpose: the failing rank's trace may be in another directory or was "
                   "written by another job. Check the launcher's log."
                 : "Follow-on stops, not the cause: read the failed ranks' findings.";
    out->push_back(std::move(f));
  }

  const RunContext* run_ = nullptr;   // from Begin: the dumps the run loader read
  std::vector<RankRecords> records_;  // by rank, until its RankEnd
  std::vector<RankState> ranks_;
};

}  // namespace

std::unique_ptr<Analyzer> CreateRankDiedAnalyzer() { return std::make_unique<RankDiedAnalyzer>(); }

}  // namespace dsdiag::analyzers
