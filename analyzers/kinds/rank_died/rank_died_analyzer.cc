// rank-died: ranks that did not finish the run the way dsdiag finishes it.
//
// Input: RunContext::missing_ranks, each rank's RankEnd, its `signal` records, the
// collective named by its `error` records, how a fatal signal came (its `end` record's
// origin, code, addr, pc), and its flight-recorder dump. A rank that exits
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
//   `end` reason signal, a fatal one  error   one per rank: the rank crashed (SIGSEGV, SIGBUS,
//   (SIGSEGV, SIGBUS, SIGABRT,                SIGFPE, SIGILL: a fault in native code; SIGABRT:
//   SIGFPE, SIGILL)                           abort() outside std::terminate), where (phase,
//                                             collective) and how (fatal_signal.cc); a stop
//                                             signal on another rank after it is a follow-on
//   `end` reason signal / error       error   one per rank, naming the signal or message
//                                             (one grouped finding for more than
//                                             kMaxPerRank ranks that ended alike);
//                                     info for SIGTERM/SIGINT/SIGHUP when another rank died
//                                             silently, or failed on an error of its own (the
//                                             launcher tearing the job down)
//   `end` reason peer-failure, or     info    when another rank's failure is found here,
//   error with a lost peer's          warning when none is (the cause left no trace)
//   message (trace/peer_loss.h)
//   `end` reason ok, status != 0      warning
//   `end` with another reason         warning (e.g. "destroyed": the session was torn down
//                                             without End(), an exception unwound the loop)
// Every failure finding carries `peers_max_step`, the furthest step any other rank began:
// a rank far behind it stopped first. Where a rank stopped: the trace's last step begun,
// and the phase from its flight dump's `where` when the dump was written after the rank's
// last step/phase/collective record (an older dump says where it was then, not where it
// stopped). The collective a rank was left waiting in (`waiting_in`): the oldest pending
// entry of such a dump, else the pg/seq of its first `error` record naming one. The hang
// follow-on pass (passes/hang_follow_on_pass.cc) matches `waiting_in` against a hang finding.
//
// This file gathers each rank's records and fate (rank_fate.h); the verdicts are in
// silent_deaths.cc, announced_ends.cc and fatal_signal.cc, over the DeathView of death_view.h.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/rank_died/death_view.h"
#include "analyzers/kinds/rank_died/rank_died_findings.h"
#include "analyzers/kinds/rank_died/rank_fate.h"
#include "trace/record_types.h"
#include "trace/records/signal_record.h"
#include "trace/records/span.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace rank_died {
namespace {

template <typename T>
std::unique_ptr<T> Boxed(std::optional<T> value) {
  return value ? std::make_unique<T>(std::move(*value)) : nullptr;
}

class RankDiedAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kRankDied; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kStepBegin, trace::rec::kStep,  trace::rec::kPhase, trace::rec::kCollective,
            trace::rec::kSignal,    trace::rec::kError, trace::rec::kEnd};
  }

  void Begin(const RunContext& run) override {
    int max_rank = -1;
    for (const RankInfo& r : run.ranks) max_rank = std::max(max_rank, r.rank);
    // One slot per rank, made once: the records of a rank gather in its slot and its
    // RankEnd lands beside them (at 131,072 ranks a separate list grown by push_back held
    // each rank twice, and 1.5 lists while it grew).
    ranks_.resize(static_cast<size_t>(max_rank + 1));
  }

  // Signals, errors, and how far the rank's progress records reach.
  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    RankRecords& t = ranks_[static_cast<size_t>(rank.rank)].records;
    const int type = r.type_id();
    if (IsProgress(type)) {
      const int64_t end = r.ts() + std::max<int64_t>(0, records::SpanDur(r).value_or(0));
      t.progress_end = std::max(t.progress_end.value_or(end), end);
    } else if (type == trace::rec_id::kSignal) {
      const std::string_view name = records::SignalView(r).signal().value_or("signal");
      if (!t.signal && EndsProcess(name))
        t.signal = Boxed(std::optional(RecordedSignal{std::string(name), r.step(), r.ts()}));
    } else if (type == trace::rec_id::kError && !t.error_collective) {
      t.error_collective = Boxed(NamedIn(r));
    } else if (type == trace::rec_id::kEnd) {
      t.fatal = Boxed(FatalSignalOf(r));
    }
  }

  void OnRankEnd(const RankInfo& rank, const RankEnd& end) override {
    if (static_cast<size_t>(rank.rank) >= ranks_.size()) ranks_.resize(rank.rank + size_t{1});
    RankState& s = ranks_[static_cast<size_t>(rank.rank)];
    s.rank = rank.rank;
    s.file_name = rank.file_name;
    s.host = rank.header.host;
    s.pid = rank.header.pid;
    s.end = end;
    s.end.issues.clear();
    s.fate = Classify(s.end, s.records);
    s.ended = true;
  }

  void Finish(const RunContext& run, std::vector<Finding>* out) override {
    // In rank order already: the slots of ranks that never ended (no trace) go.
    ranks_.erase(
        std::remove_if(ranks_.begin(), ranks_.end(), [](const RankState& s) { return !s.ended; }),
        ranks_.end());
    const DeathView view(run, std::move(ranks_));
    if (!run.missing_ranks.empty()) out->push_back(MissingRanks(run));
    ReportSilentDeaths(view, out);
    ReportCutShort(view, out);
    const std::vector<int> silently_dead = SilentlyDead(view);
    const std::vector<int> failed_on_error = FailedOnError(view);
    std::vector<Finding> announced;
    for (const auto& s : view.ranks()) {
      switch (s.fate) {
        case Fate::kKilledAfterSignal:
        case Fate::kSignal:
        case Fate::kFatalSignal:
        case Fate::kError:
          announced.push_back(Announced(view, s, silently_dead, failed_on_error));
          break;
        case Fate::kOkNonZero:
        case Fate::kOtherReason:
          out->push_back(OddEnd(view, s));
          break;
        default:
          break;
      }
    }
    GroupAlike(std::move(announced), out);
    ReportPeerFailures(view, out);
  }

 private:
  std::vector<RankState> ranks_;  // by rank
};

}  // namespace
}  // namespace rank_died

std::unique_ptr<Analyzer> CreateRankDiedAnalyzer() {
  return std::make_unique<rank_died::RankDiedAnalyzer>();
}

}  // namespace dsdiag::analyzers
