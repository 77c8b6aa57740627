// rank-died verdicts for ranks that said nothing: missing traces, traces that stop without
// an end record (one finding per rank, or one for all), and traces cut short by a failed
// write (rank_died_analyzer.cc has the severity rules).
#include <algorithm>
#include <string>

#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/evidence_text.h"
#include "analyzers/kinds/rank_died/rank_died_findings.h"
#include "trace/run_files.h"

namespace dsdiag::analyzers::rank_died {
namespace {

using trace::JsonValue;

Finding SilentDeath(const DeathView& view, const RankState& s) {
  Finding f = view.Base(s, Severity::kError);
  const bool phase_known = !view.StoppedPhase(s).empty();
  f.summary =
      "rank " + std::to_string(s.rank) + " stopped " + view.WhereText(s) +
      " without an end record" +
      (s.end.last_phase.empty() || phase_known ? ""
                                               : " (last phase done: " + s.end.last_phase + ")");
  f.evidence.Set("truncated_tail", s.end.truncated_tail);
  f.evidence.Set("survivors", view.SurvivorsView(s.rank));
  f.hint =
      "The rank did not reach its exit path: it was SIGKILLed (OOM killer, scheduler), "
      "crashed (segfault, abort) or lost its node, or it hung and the job was cancelled. "
      "Look for an OOM kill of pid " +
      std::to_string(s.pid) + " on " + (s.host.empty() ? "its host" : s.host) +
      " (dmesg), its exit code in the launcher's log, and its flight-rank dump if any.";
  return f;
}

// Many ranks stopped silently: one finding, the ranks that stopped earliest listed first.
Finding SilentDeaths(std::vector<const RankState*> dead, bool everyone) {
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
    r.Set("last_step_begun", OptInt(dead[i]->end.last_step_begun));
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

Finding CutShort(const DeathView& view, const RankState& s) {
  Finding f = view.Base(s, Severity::kWarning);
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

}  // namespace

Finding MissingRanks(const RunContext& run) {
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

void ReportSilentDeaths(const DeathView& view, std::vector<Finding>* out) {
  std::vector<const RankState*> dead;
  for (const auto& s : view.ranks())
    if (s.fate == Fate::kNoEnd) dead.push_back(&s);
  if (dead.empty()) return;
  const bool everyone = dead.size() == view.ranks().size() && view.ranks().size() > 1;
  if (!everyone && dead.size() <= kMaxPerRank) {
    for (const RankState* s : dead) out->push_back(SilentDeath(view, *s));
    return;
  }
  out->push_back(SilentDeaths(dead, everyone));
}

// Traces cut short by a failed write: one warning per rank, one for all past kMaxPerRank.
void ReportCutShort(const DeathView& view, std::vector<Finding>* out) {
  std::vector<const RankState*> cut;
  for (const auto& s : view.ranks())
    if (s.fate == Fate::kCutShort) cut.push_back(&s);
  if (cut.size() <= kMaxPerRank) {
    for (const RankState* s : cut) out->push_back(CutShort(view, *s));
    return;
  }
  Finding f = CutShort(view, *cut.front());
  f.ranks.clear();
  JsonValue listed = JsonValue::Array();
  for (const RankState* s : cut) {
    f.ranks.push_back(s->rank);
    if (listed.elements().size() < kMaxListed) listed.Push(CutShort(view, *s).evidence);
  }
  f.summary = std::to_string(cut.size()) +
              " ranks' traces were cut short by a failed write (disk full or quota?): what "
              "the ranks did after that is unknown";
  f.evidence = JsonValue::Object();
  f.evidence.Set("count", static_cast<int64_t>(cut.size()));
  f.evidence.Set("first", std::move(listed));
  out->push_back(std::move(f));
}

}  // namespace dsdiag::analyzers::rank_died
