// rank-died verdicts for ranks that said why they stopped: an `end` record with a signal or
// an error (or a recorded signal before a kill), odd ends, ranks that stopped because a
// peer failed, and the grouping of many ranks that ended alike (rank_died_analyzer.cc has
// the severity rules).
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/evidence_text.h"
#include "analyzers/kinds/rank_died/known_errors.h"
#include "analyzers/kinds/rank_died/rank_died_findings.h"
#include "trace/flight_dump_keys.h"

namespace dsdiag::analyzers::rank_died {
namespace {

using trace::JsonValue;

bool IsStopSignal(const std::string& name) {
  return name == "SIGTERM" || name == "SIGINT" || name == "SIGHUP";
}

// The rank's last word was its terminate handler's (probes/terminate_recorder.h): a C++
// exception nobody caught, or std::terminate called outright, then SIGABRT.
bool DiedInTerminate(const DeathView& view, const RankState& s) {
  const trace::FlightDump* d = view.LastWord(s);
  return d != nullptr && d->reason == trace::flight_dump_reason::kTerminate;
}

// What a death by std::terminate says, following its message where there is one.
std::string TerminateHint(const std::string& message) {
  std::string hint =
      "The rank died in C++, not in Python: an exception nobody caught (std::terminate, then "
      "SIGABRT), usually thrown on a backend's own thread (Gloo's or NCCL's), where no "
      "try/except of the script can see it. ";
  if (message.empty() || message == "std::terminate without an active exception")
    return hint +
           "No exception was active: something called std::terminate itself (a thread "
           "destroyed while joinable, a noexcept function that threw).";
  if (message.find("enforce fail") != std::string::npos)
    return hint +
           "The message is a Gloo check (evidence.error): what it compares is what this rank "
           "expected against what a peer sent it. Look for a collective-mismatch finding, "
           "else compare the sizes this collective got on every rank.";
  return hint +
         "evidence.error is the exception's message; the flight dump (evidence."
         "flight_dump) holds the collective the rank was in when it was thrown.";
}

}  // namespace

// Ranks that stopped without a word (or left no trace): when one did, a polite stop
// signal on another rank is the launcher tearing the job down after it, not a cause.
std::vector<int> SilentlyDead(const DeathView& view) {
  const RunContext& run = view.run();
  std::vector<int> dead(run.missing_ranks.begin(), run.missing_ranks.end());
  for (const auto& s : view.ranks())
    if (s.fate == Fate::kNoEnd) dead.push_back(s.rank);
  NormalizeRanks(&dead);
  return dead;
}

std::vector<int> FailedOnError(const DeathView& view) {
  std::vector<int> failed;
  for (const auto& s : view.ranks())
    if (s.fate == Fate::kError || s.fate == Fate::kFatalSignal) failed.push_back(s.rank);
  return failed;
}

// A rank that said why it stopped: an `end` with a signal or an error, or a recorded
// signal before it was killed.
Finding Announced(const DeathView& view, const RankState& s, const std::vector<int>& silently_dead,
                  const std::vector<int>& failed_on_error) {
  const std::string signal = SignalOf(s);
  const bool signalled = s.fate == Fate::kSignal || s.fate == Fate::kKilledAfterSignal;
  const bool killed = s.fate == Fate::kKilledAfterSignal;
  // The causes it follows: ranks that died without a word, else ranks that failed on an
  // error (the launcher stops the rest once one rank exits non-zero).
  const bool after_deaths = !silently_dead.empty();
  std::vector<int> causes = silently_dead;
  if (!after_deaths) {
    // Only failures no later than this rank's stop (by step: the ranks' clocks aside).
    const int64_t stopped_at = s.end.last_step_begun.value_or(0);
    for (int r : failed_on_error) {
      const RankState* failed = view.Find(r);
      if (failed && failed->end.last_step_begun.value_or(0) <= stopped_at) causes.push_back(r);
    }
  }
  const bool follow_on = signalled && IsStopSignal(signal) && !causes.empty();
  Finding f = view.Base(s, follow_on ? Severity::kInfo : Severity::kError);
  if (s.end.end_seen) {
    f.evidence.Set("reason", s.end.reason);
    f.evidence.Set("status", OptInt(s.end.status));
  } else {
    f.evidence.Set("reason", JsonValue());
    f.evidence.Set("truncated_tail", s.end.truncated_tail);
  }
  const std::string rank = "rank " + std::to_string(s.rank);
  if (follow_on) {
    JsonValue dead = JsonValue::Array();
    for (int r : causes) dead.Push(r);
    f.evidence.Set("signal", signal);
    f.evidence.Set(after_deaths ? "after_deaths_of" : "after_failures_of", std::move(dead));
    f.summary = rank + " was stopped (" + signal +
                (killed ? ", then killed before its end record" : "") + ") " + view.WhereText(s) +
                " after " + (causes.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(causes) +
                (after_deaths ? " died" : " failed") + ": a follow-on, not a cause";
    f.hint =
        "The launcher (or the scheduler) stops the surviving ranks once one has died; "
        "look at the rank-died error of the rank that died first.";
  } else if (killed) {
    f.evidence.Set("signal", signal);
    f.summary = rank + " received " + signal + " and was killed " + view.WhereText(s) +
                " before writing its end record";
    f.hint = "Something sent " + signal +
             " to the rank (the scheduler, an operator, the launcher tearing the job down), "
             "and the rank did not get through its exit path before it was killed: after a "
             "grace period launchers send SIGKILL (dsdiag train: 5 s). What held it up is "
             "where it was (evidence.stopped_in, evidence.waiting_in): usually a collective "
             "waiting for a peer that is gone or stuck, or slow I/O.";
  } else if (s.fate == Fate::kFatalSignal) {
    DescribeFatalSignal(view, s, &f);
  } else if (s.fate == Fate::kSignal) {
    const std::string name = signal.empty() ? "a signal" : signal;
    f.evidence.Set("signal", signal);
    f.summary = rank + " stopped on " + name + " " + view.WhereText(s);
    f.hint = "Something sent " + name +
             " to the rank: usually the scheduler (time limit, "
             "preemption), an operator, or the launcher tearing the job down after another "
             "failure. Check the job's log for who sent it.";
  } else {
    f.evidence.Set("error", s.end.detail);
    f.summary = rank + " failed " + view.WhereText(s) + ": " +
                Clip(s.end.detail.empty() ? "(no message)" : s.end.detail, kMaxMessage);
    f.hint =
        "The rank stopped on an error it caught: the message is in evidence.error and "
        "the trace's `error` records say in which phase it was raised.";
    if (DiedInTerminate(view, s)) {
      f.evidence.Set("died_by", "std::terminate");
      f.hint = TerminateHint(s.end.detail);
    }
    if (auto known = RecogniseKnownError(s.end.detail)) {
      f.evidence.Set("known_cause", known->cause);
      f.hint = known->hint;
    }
  }
  return f;
}

Finding OddEnd(const DeathView& view, const RankState& s) {
  Finding f = view.Base(s, Severity::kWarning);
  f.evidence.Set("reason", s.end.reason);
  f.evidence.Set("status", OptInt(s.end.status));
  if (s.fate == Fate::kOkNonZero) {
    f.summary = "rank " + std::to_string(s.rank) + " ended \"ok\" with exit status " +
                std::to_string(s.end.status.value_or(0));
    f.hint =
        "The loop finished but the process reported failure on exit: look at what runs "
        "after training (checkpoint upload, evaluation, teardown).";
  } else {
    f.summary = "rank " + std::to_string(s.rank) + " ended with reason \"" + s.end.reason + "\" " +
                StepText(s.end.last_step_begun);
    f.hint =
        "The probes were torn down without a normal end (\"destroyed\": the training "
        "loop left through an exception or an early return). Check the rank's log.";
  }
  return f;
}

// Nobody failed, but some ranks ended cleanly before the step in which the others lost
// them: the ranks ran different numbers of steps (uneven inputs — per-rank datasets of
// other sizes, a sampler without drop_last, an early break on one rank). The ranks that
// finished early are named, as the hang analyzer names a rank that ended while others wait.
std::optional<Finding> FinishedEarly(const DeathView& view, const std::vector<int>& stopped,
                                     const std::optional<int64_t>& step) {
  if (!step) return std::nullopt;
  std::vector<int> early;
  int64_t last_step = -1;
  for (const auto& s : view.ranks())
    if (s.fate == Fate::kClean && s.end.last_step_begun && *s.end.last_step_begun < *step) {
      early.push_back(s.rank);
      last_step = std::max(last_step, *s.end.last_step_begun);
    }
  if (early.empty()) return std::nullopt;
  Finding f;
  f.kind = std::string(kind::kRankDied);
  f.severity = Severity::kError;
  f.ranks = early;
  f.step = step;
  const auto who = [](const std::vector<int>& r) {
    return std::string(r.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(r);
  };
  f.summary = who(early) + " finished cleanly after step " + std::to_string(last_step) + " while " +
              who(stopped) + " went on to step " + std::to_string(*step) + " and lost " +
              (early.size() == 1 ? "it" : "them") +
              ": the ranks ran different numbers of steps (uneven inputs)";
  JsonValue early_json = JsonValue::Array();
  for (int r : early) early_json.Push(r);
  JsonValue stopped_json = JsonValue::Array();
  for (int r : stopped) stopped_json.Push(r);
  f.evidence.Set("finished_early", std::move(early_json));
  f.evidence.Set("last_step_of_finished", last_step);
  f.evidence.Set("lost_peers", std::move(stopped_json));
  f.hint =
      "Every rank must run the same number of steps: give each rank as many batches "
      "(DistributedSampler with drop_last=True, or equal per-rank datasets), break out of the "
      "loop on every rank together, or wrap the loop in DDP's join() context manager for "
      "uneven inputs.";
  return f;
}

// Ranks that stopped because another failed: information when the failure is reported
// here, a warning when nothing in the run explains it.
void ReportPeerFailures(const DeathView& view, std::vector<Finding>* out) {
  const RunContext& run = view.run();
  std::vector<int> stopped;
  std::vector<int> failed = run.missing_ranks;
  std::optional<int64_t> step;
  for (const auto& s : view.ranks()) {
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
  if (failed.empty()) {
    if (auto uneven = FinishedEarly(view, stopped, step)) {
      out->push_back(std::move(*uneven));
      return;
    }
  }
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
  f.hint = failed.empty() ? "These ranks saw a peer fail, yet every trace here ends cleanly or on "
                            "purpose: the failing rank's trace may be in another directory or was "
                            "written by another job. Check the launcher's log."
                          : "Follow-on stops, not the cause: read the failed ranks' findings.";
  out->push_back(std::move(f));
}

// When many ranks ended alike (the survivors of a 1,024-rank hang all time out in the same
// collective), one finding says so instead of one per rank: the findings of a group share
// severity and summary once the rank is taken out.
void GroupAlike(std::vector<Finding> findings, std::vector<Finding>* out) {
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
    f.summary =
        std::to_string(f.ranks.size()) + " ranks (" + FormatRankRanges(f.ranks) + ") " + key.second;
    f.evidence = JsonValue::Object();
    f.evidence.Set("ranks_alike", static_cast<int64_t>(f.ranks.size()));
    if (shared_wait) f.evidence.Set("waiting_in", std::move(*shared_wait));
    f.evidence.Set("first", std::move(listed));
    out->push_back(std::move(f));
  }
}

}  // namespace dsdiag::analyzers::rank_died
