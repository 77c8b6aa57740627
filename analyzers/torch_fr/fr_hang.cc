#include "analyzers/torch_fr/fr_hang.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "analyzers/framework/finding_kinds.h"

namespace dsdiag::analyzers::torch_fr {
namespace {

using trace::JsonValue;

// Where a rank is held, if anywhere: a pending op in some group.
struct Held {
  const FrGroup* group = nullptr;
  const FrOp* op = nullptr;
};

std::optional<Held> HeldIn(const std::vector<FrGroup>& groups, int rank) {
  for (const FrGroup& g : groups)
    if (const FrRankOps* r = g.Of(rank))
      if (const FrOp* w = r->Waiting()) return Held{&g, w};
  return std::nullopt;
}

std::string OpText(const FrRun& run, const FrGroup& g, const FrOp& op) {
  return run.Str(op.entry->op) + " " + g.Label() + " seq " + std::to_string(op.seq);
}

JsonValue OpJson(const FrRun& run, const FrOp* op) {
  if (op == nullptr) return JsonValue();
  JsonValue o = JsonValue::Object();
  o.Set("seq", op->seq);
  o.Set("op", run.Str(op->entry->op));
  o.Set("done", op->done);
  o.Set("torch_state", trace::TorchFrStateName(op->entry->state));
  o.Set("python_where", run.Str(op->entry->where));
  return o;
}

// The latest op of the rank in the group that its dump shows started (or done).
const FrOp* LastStarted(const FrRankOps& r) {
  for (auto it = r.ops.rbegin(); it != r.ops.rend(); ++it)
    if (it->done || it->entry->state != trace::TorchFrState::kScheduled) return &*it;
  return nullptr;
}

JsonValue RankRow(const FrRun& run, const std::vector<FrGroup>& groups, const FrGroup& g, int rank,
                  const std::string& role) {
  JsonValue row = JsonValue::Object();
  row.Set("rank", rank);
  row.Set("role", role);
  const FrRankDump* dump = run.DumpOf(rank);
  row.Set("file", dump ? JsonValue(dump->file_name) : JsonValue());
  if (dump == nullptr) {
    row.Set("status", "no dump");
    return row;
  }
  if (const FrRankOps* r = g.Of(rank)) {
    row.Set("last_completed", OpJson(run, r->LastDone()));
    row.Set("last_started", OpJson(run, LastStarted(*r)));
    row.Set("last_scheduled", OpJson(run, r->Last()));
  } else {
    row.Set("last_scheduled", JsonValue());
  }
  if (std::optional<Held> held = HeldIn(groups, rank)) {
    JsonValue w = OpJson(run, held->op);
    w.Set("group", held->group->name());
    row.Set("waiting_in", std::move(w));
  }
  return row;
}

struct GroupHang {
  const FrGroup* group = nullptr;
  int64_t seq = 0;
  const FrOp* op = nullptr;  // a waiting rank's entry: what the collective is
  std::vector<int> waiting;
  std::vector<int> free_absent;  // dump, nothing pending: culprits
  std::vector<int> held_absent;  // waiting in another group's op
  std::vector<int> missing;      // no dump at all
};

std::optional<GroupHang> HangOf(const FrRun& run, const std::vector<FrGroup>& groups,
                                const FrGroup& g) {
  GroupHang h;
  h.group = &g;
  h.seq = g.MaxSeq();
  for (const FrRankOps& r : g.ranks) {
    const FrOp* w = r.Waiting();
    if (w && w->seq == h.seq) {
      h.waiting.push_back(r.rank);
      if (!h.op) h.op = w;
    }
  }
  if (h.waiting.empty() || g.p2p()) return std::nullopt;
  for (const FrRankOps& r : g.ranks) {
    if (std::find(h.waiting.begin(), h.waiting.end(), r.rank) != h.waiting.end()) continue;
    if (r.Last() && r.Last()->seq >= h.seq) continue;  // joined it (and finished)
    const std::optional<Held> held = HeldIn(groups, r.rank);
    (held ? h.held_absent : h.free_absent).push_back(r.rank);
  }
  // A rank of the job with no dump is a member of the default group we cannot see.
  if (g.is_default()) h.missing = run.missing_ranks;
  // The collective they never joined is the first after the last they issued (the others
  // may have queued more behind it): that is the one to name.
  int64_t first_missed = h.seq;
  for (int r : h.free_absent)
    if (const FrOp* last = g.Of(r)->Last()) first_missed = std::min(first_missed, last->seq + 1);
  for (int r : h.held_absent)
    if (const FrOp* last = g.Of(r)->Last()) first_missed = std::min(first_missed, last->seq + 1);
  for (const FrRankOps& r : g.ranks)
    if (const FrOp* op = r.At(first_missed); op && !op->done) {
      h.seq = first_missed;
      h.op = op;
      break;
    }
  return h;
}

std::string Where(const FrRun& run, const FrOp* op) {
  const std::string where = op ? ShortWhere(run.Str(op->entry->where)) : "";
  return where.empty() ? "" : " (" + where + ")";
}

Finding HangFinding(const FrRun& run, const std::vector<FrGroup>& groups, const GroupHang& h,
                    bool mismatched) {
  const FrGroup& g = *h.group;
  Finding f;
  f.kind = std::string(kind::kHang);
  std::vector<int> culprits = h.free_absent;
  culprits.insert(culprits.end(), h.missing.begin(), h.missing.end());
  const bool follow_on = culprits.empty() && !h.held_absent.empty();
  const bool all_in = culprits.empty() && h.held_absent.empty();
  // Every rank in a collective the ranks disagree on: the mismatch is the cause.
  f.severity = all_in && mismatched ? Severity::kInfo
               : follow_on          ? Severity::kWarning
                                    : Severity::kError;
  f.ranks = all_in ? h.waiting : follow_on ? h.held_absent : culprits;
  const std::string what = OpText(run, g, *h.op);
  f.subject = what;
  const std::string waiting =
      "rank" + std::string(h.waiting.size() > 1 ? "s " : " ") + FormatRankRanges(h.waiting);
  if (all_in && mismatched) {
    f.summary = "every rank of " + g.Label() + " waits in " + what + Where(run, h.op) +
                ": the collective-mismatch at that seq, which cannot complete";
  } else if (all_in) {
    f.summary = "every rank of " + g.Label() + " waits in " + what + Where(run, h.op) +
                " and none completed it: no rank is missing from it (a mismatch, the "
                "network or the backend)";
  } else if (follow_on) {
    f.summary = waiting + " wait in " + what + Where(run, h.op) + "; rank" +
                (h.held_absent.size() > 1 ? "s " : " ") + FormatRankRanges(h.held_absent) +
                " never joined it, held in another group's collective";
  } else {
    f.summary = "rank" + std::string(culprits.size() > 1 ? "s " : " ") +
                FormatRankRanges(culprits) + " never joined " + what + " that " + waiting +
                (h.waiting.size() > 1 ? " wait in" : " waits in") + Where(run, h.op);
    if (!h.missing.empty())
      f.summary += "; rank" + std::string(h.missing.size() > 1 ? "s " : " ") +
                   FormatRankRanges(h.missing) + " left no dump";
  }
  JsonValue ev = JsonValue::Object();
  ev.Set("source", "torch-flight-recorder");
  ev.Set("group", g.name());
  ev.Set("group_desc", g.desc());
  ev.Set("seq", h.seq);
  ev.Set("op", run.Str(h.op->entry->op));
  JsonValue rows = JsonValue::Array();
  for (int r : h.waiting) rows.Push(RankRow(run, groups, g, r, "waiting"));
  for (int r : h.free_absent) rows.Push(RankRow(run, groups, g, r, "never joined"));
  for (int r : h.held_absent) rows.Push(RankRow(run, groups, g, r, "held elsewhere"));
  for (int r : h.missing) rows.Push(RankRow(run, groups, g, r, "no dump"));
  ev.Set("ranks", std::move(rows));
  f.evidence = std::move(ev);
  if (mismatched) ev.Set("follows_from", std::string(kind::kCollectiveMismatch));
  f.hint = all_in && mismatched ? "fix the collective-mismatch: this hang follows from it"
           : all_in             ? "look for a collective-mismatch finding at this seq, else at the "
                                  "backend (NCCL_DEBUG=INFO) and the network between these ranks"
           : follow_on
               ? "see the hang of the group these ranks wait in: this one follows from it"
               : "the ranks named never reached this collective: look at what they ran after "
                 "their last op (the line in the evidence) — a branch that skips the "
                 "collective on some ranks, an early exit, or a blocking call in Python";
  return f;
}

Finding DiedFinding(const FrRun& run, int rank, const std::optional<GroupHang>& hang) {
  Finding f;
  f.kind = std::string(kind::kRankDied);
  f.severity = Severity::kError;
  f.ranks = {rank};
  f.subject = run.prefix + std::to_string(rank);
  f.summary = "rank " + std::to_string(rank) + " left no Flight Recorder dump (" + run.prefix +
              std::to_string(rank) + "): it died, was killed, or its dump was never written";
  if (hang && hang->op)
    f.summary += "; rank" + std::string(hang->waiting.size() > 1 ? "s " : " ") +
                 FormatRankRanges(hang->waiting) +
                 (hang->waiting.size() > 1 ? " wait in " : " waits in ") +
                 OpText(run, *hang->group, *hang->op);
  JsonValue ev = JsonValue::Object();
  ev.Set("source", "torch-flight-recorder");
  ev.Set("expected_file", run.prefix + std::to_string(rank));
  ev.Set("world_size", run.world_size);
  ev.Set("world_size_from", run.world_size_source);
  if (hang && hang->op) {
    JsonValue w = OpJson(run, hang->op);
    w.Set("group", hang->group->name());
    w.Set("ranks", JsonValue::Array());
    JsonValue ranks = JsonValue::Array();
    for (int r : hang->waiting) ranks.Push(r);
    w.Set("ranks", std::move(ranks));
    ev.Set("peers_wait_in", std::move(w));
  }
  f.evidence = std::move(ev);
  f.hint =
      "look for that rank's end in the job's logs (an OOM kill, a segfault, a Python "
      "exception) and make every rank dump (TORCH_FR_DUMP_TEMP_FILE on shared storage)";
  return f;
}

}  // namespace

void FindHangs(const FrRun& run, const std::vector<FrGroup>& groups,
               const std::set<std::pair<std::string, int64_t>>& mismatched,
               std::vector<Finding>* findings) {
  std::optional<GroupHang> default_hang;
  for (const FrGroup& g : groups) {
    std::optional<GroupHang> h = HangOf(run, groups, g);
    if (!h) continue;
    if (g.is_default() && !default_hang) default_hang = h;
    findings->push_back(HangFinding(run, groups, *h, mismatched.count({g.name(), h->seq}) > 0));
  }
  for (int rank : run.missing_ranks) findings->push_back(DiedFinding(run, rank, default_hang));
}

}  // namespace dsdiag::analyzers::torch_fr
