#include "analyzers/torch_fr/fr_hang.h"

#include <algorithm>
#include <map>
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
  // Dumps written after the failure: nothing is pending, the streams end at different seqs.
  bool after = false;
  std::vector<int> waiting;      // after: the ranks whose streams reach the group's last seq
  std::vector<int> free_absent;  // dump, nothing pending: culprits
  std::vector<int> held_absent;  // waiting in another group's op
  std::vector<int> missing;      // no dump at all
};

// Every rank in the group's last op: the oldest op none of them completed is the one that
// holds them (the later ones queued behind it on a stream, as NCCL queues a DDP step's
// buckets), so that is the one to name.
void NameOldestPending(const FrGroup& g, GroupHang* h) {
  int64_t oldest = h->seq;
  for (const FrRankOps& r : g.ranks)
    if (const FrOp* p = r.FirstPending()) oldest = std::min(oldest, p->seq);
  for (const FrRankOps& r : g.ranks)
    if (const FrOp* op = r.At(oldest)) {
      h->seq = oldest;
      h->op = op;
      return;
    }
}

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
  if (g.p2p()) return std::nullopt;
  const bool none_pending = h.waiting.empty();
  if (none_pending) {
    // Dumps written after the failure (an except or SIGTERM handler, the job's end): Gloo
    // retires a collective that timed out or failed as one that completed, so nothing is
    // pending; the ranks that reached the group's last seq waited in it, the others never
    // issued it.
    h.after = true;
    for (const FrRankOps& r : g.ranks)
      if (r.Last() && r.Last()->seq == h.seq) {
        h.waiting.push_back(r.rank);
        // Pending in its own dump: a collective may complete on some members (Gloo's
        // algorithms) while a rank that never joined it holds the others.
        h.after = h.after && r.Last()->entry->done_by_dump;
      }
    if (h.waiting.size() == g.ranks.size()) return std::nullopt;  // the streams end together
    h.op = g.Of(h.waiting.front())->Last();
  }
  for (const FrRankOps& r : g.ranks) {
    if (std::find(h.waiting.begin(), h.waiting.end(), r.rank) != h.waiting.end()) continue;
    if (r.Last() && r.Last()->seq >= h.seq) continue;  // joined it (and finished)
    const std::optional<Held> held = HeldIn(groups, r.rank);
    (held ? h.held_absent : h.free_absent).push_back(r.rank);
  }
  // A rank of the job with no dump is a member of the default group we cannot see. Of a
  // sub-group too, when every member we see waits in the same op: a member must be missing
  // (Gloo's pg_config does not say which ranks are), and the ranks with no dump are the only
  // candidates left.
  const bool every_seen_waits = h.free_absent.empty() && h.held_absent.empty();
  if (g.is_default() || every_seen_waits) h.missing = run.missing_ranks;
  // The collective they never joined is the first after the last they issued (the others
  // may have queued more behind it): that is the one to name.
  int64_t first_missed = h.seq;
  for (int r : h.free_absent)
    if (const FrOp* last = g.Of(r)->Last()) first_missed = std::min(first_missed, last->seq + 1);
  for (int r : h.held_absent)
    if (const FrOp* last = g.Of(r)->Last()) first_missed = std::min(first_missed, last->seq + 1);
  for (const FrRankOps& r : g.ranks)
    if (const FrOp* op = r.At(first_missed); op && (!op->done || none_pending)) {
      h.seq = first_missed;
      h.op = op;
      break;
    }
  if (!none_pending && every_seen_waits && h.missing.empty()) NameOldestPending(g, &h);
  return h;
}

std::string Where(const FrRun& run, const FrOp* op) {
  const std::string where = op ? ShortWhere(run.Str(op->entry->where)) : "";
  return where.empty() ? "" : " (" + where + ")";
}

// What the ranks at the end of a group's streams were in: the summary's "waits in", or, in
// dumps written after the failure, the collective they last issued.
std::string WaitText(const GroupHang& h) {
  const bool many = h.waiting.size() > 1;
  if (!h.after) return many ? " wait in" : " waits in";
  return " last issued";
}

// Dumps written after the failure: what the culprits' own dumps say of them.
std::string AfterNote(const std::vector<FrGroup>& groups, const GroupHang& h) {
  std::string note =
      " — the dumps were written after it failed or timed out (Gloo counts such a "
      "collective completed, as one that succeeded)";
  std::vector<int> outside;
  for (int r : h.free_absent)
    if (!HeldIn(groups, r)) outside.push_back(r);
  if (!outside.empty())
    note +=
        "; rank" + std::string(outside.size() > 1 ? "s " : " ") + FormatRankRanges(outside) +
        (outside.size() > 1 ? " were" : " was") +
        " outside any recorded collective when dumped: " + (outside.size() > 1 ? "their" : "its") +
        " last collective had completed";
  return note;
}

Finding HangFinding(const FrRun& run, const std::vector<FrGroup>& groups, const GroupHang& h,
                    bool mismatched, bool parted) {
  const FrGroup& g = *h.group;
  Finding f;
  f.kind = std::string(kind::kHang);
  std::vector<int> culprits = h.free_absent;
  culprits.insert(culprits.end(), h.missing.begin(), h.missing.end());
  const bool follow_on = culprits.empty() && !h.held_absent.empty();
  const bool all_in = culprits.empty() && h.held_absent.empty();
  // Every rank in a collective the ranks disagree on, or streams that parted earlier: the
  // collective-mismatch is the cause.
  const bool follows_mismatch = (all_in && mismatched) || (parted && !all_in);
  f.severity = follows_mismatch ? Severity::kInfo
               : follow_on      ? Severity::kWarning
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
                "network, the backend, or a device that never reached it)";
  } else if (follow_on) {
    f.summary = waiting + WaitText(h) + " " + what + Where(run, h.op) + "; rank" +
                (h.held_absent.size() > 1 ? "s " : " ") + FormatRankRanges(h.held_absent) +
                " never joined it, held in another group's collective";
  } else {
    f.summary = "rank" + std::string(culprits.size() > 1 ? "s " : " ") +
                FormatRankRanges(culprits) + (h.after ? " never issued " : " never joined ") +
                what + " that " + waiting + WaitText(h) + Where(run, h.op);
    if (!h.missing.empty())
      f.summary += "; rank" + std::string(h.missing.size() > 1 ? "s " : " ") +
                   FormatRankRanges(h.missing) + " left no dump";
    if (h.after) f.summary += AfterNote(groups, h);
  }
  if (parted && !all_in)
    f.summary = "a follow-on of where the streams of " + g.Label() +
                " parted (collective-mismatch): " + f.summary;
  JsonValue ev = JsonValue::Object();
  ev.Set("source", "torch-flight-recorder");
  ev.Set("group", g.name());
  ev.Set("group_desc", g.desc());
  ev.Set("seq", h.seq);
  ev.Set("op", run.Str(h.op->entry->op));
  ev.Set("dumps", h.after ? "after the failure" : "in flight");
  JsonValue rows = JsonValue::Array();
  const std::string ended = h.after ? "ended in it" : "waiting";
  for (int r : h.waiting) rows.Push(RankRow(run, groups, g, r, ended));
  for (int r : h.free_absent) rows.Push(RankRow(run, groups, g, r, "never joined"));
  for (int r : h.held_absent) rows.Push(RankRow(run, groups, g, r, "held elsewhere"));
  for (int r : h.missing) rows.Push(RankRow(run, groups, g, r, "no dump"));
  ev.Set("ranks", std::move(rows));
  if (follows_mismatch) ev.Set("follows_from", std::string(kind::kCollectiveMismatch));
  f.evidence = std::move(ev);
  f.hint = follows_mismatch ? "fix the collective-mismatch: this hang follows from it"
           : all_in         ? "look for a collective-mismatch finding at this seq, else at the "
                              "backend (NCCL_DEBUG=INFO) and the network between these ranks"
           : follow_on
               ? "see the hang of the group these ranks wait in: this one follows from it"
               : "the ranks named never reached this collective: look at what they ran after "
                 "their last op (the line in the evidence) — a branch that skips the "
                 "collective on some ranks, an early exit, or a blocking call in Python";
  return f;
}

// Where the dumped ranks of a group ended: its last seq and the ranks whose streams reach it.
struct GroupEnd {
  const FrGroup* group = nullptr;
  const FrOp* op = nullptr;
  std::vector<int> ranks;
};

std::optional<GroupEnd> EndOf(const FrGroup& g) {
  GroupEnd end{&g, nullptr, {}};
  const int64_t top = g.MaxSeq();
  for (const FrRankOps& r : g.ranks)
    if (r.Last() && r.Last()->seq == top) {
      end.ranks.push_back(r.rank);
      if (!end.op) end.op = r.Last();
    }
  if (!end.op) return std::nullopt;
  return end;
}

bool IssuedLater(const GroupEnd& a, const GroupEnd& b) {
  const int64_t ta = a.op->entry->created_ns, tb = b.op->entry->created_ns;
  if (ta == FrEntry::kNoTime || tb == FrEntry::kNoTime) return false;
  return ta > tb;
}

Finding DiedFinding(const FrRun& run, int rank, const std::optional<GroupEnd>& peers,
                    bool in_mismatch) {
  Finding f;
  f.kind = std::string(kind::kRankDied);
  // A rank missing beside a collective-mismatch it was in: Gloo aborts a rank that receives
  // more bytes than it posted.
  f.severity = in_mismatch ? Severity::kInfo : Severity::kError;
  f.ranks = {rank};
  f.subject = run.prefix + std::to_string(rank);
  f.summary = "rank " + std::to_string(rank) + " left no Flight Recorder dump (" + run.prefix +
              std::to_string(rank) + "): it died, was killed, or its dump was never written";
  if (peers) {
    const bool many = peers->ranks.size() > 1;
    const bool pending = !peers->op->done;
    f.summary += "; rank" + std::string(many ? "s " : " ") + FormatRankRanges(peers->ranks) +
                 (pending ? (many ? " wait in " : " waits in ") : " last issued ") +
                 OpText(run, *peers->group, *peers->op) + Where(run, peers->op);
  }
  if (in_mismatch)
    f.summary +=
        ": the collective-mismatch there, in which Gloo aborts a rank that receives "
        "more bytes than it posted — a follow-on";
  JsonValue ev = JsonValue::Object();
  ev.Set("source", "torch-flight-recorder");
  ev.Set("expected_file", run.prefix + std::to_string(rank));
  ev.Set("world_size", run.world_size);
  ev.Set("world_size_from", run.world_size_source);
  if (peers) {
    JsonValue w = OpJson(run, peers->op);
    w.Set("group", peers->group->name());
    JsonValue ranks = JsonValue::Array();
    for (int r : peers->ranks) ranks.Push(r);
    w.Set("ranks", std::move(ranks));
    ev.Set("peers_wait_in", std::move(w));
  }
  if (in_mismatch) ev.Set("follows_from", std::string(kind::kCollectiveMismatch));
  f.evidence = std::move(ev);
  f.hint = in_mismatch
               ? "fix the collective-mismatch: this rank died in it"
               : "look for that rank's end in the job's logs (an OOM kill, a segfault, a Python "
                 "exception) and make every rank dump (TORCH_FR_DUMP_TEMP_FILE on shared "
                 "storage)";
  return f;
}

}  // namespace

void FindHangs(const FrRun& run, const std::vector<FrGroup>& groups,
               const std::set<std::pair<std::string, int64_t>>& mismatched,
               const std::set<std::string>& parted, std::vector<Finding>* findings) {
  std::optional<GroupEnd> default_end;
  std::map<int, GroupEnd> left_in;  // a dump-less rank -> the sub-group hang it is missing from
  for (const FrGroup& g : groups) {
    // Where the dumped ranks ended: the group whose last collective was issued last (a job
    // whose loop runs in a sub-group ends there, not in the world's first collective).
    if (!g.p2p())
      if (std::optional<GroupEnd> end = EndOf(g);
          end && (!default_end || IssuedLater(*end, *default_end)))
        default_end = end;
    std::optional<GroupHang> h = HangOf(run, groups, g);
    if (!h) continue;
    if (g.is_default() && !g.p2p()) default_end = GroupEnd{h->group, h->op, h->waiting};
    if (!g.is_default())
      for (int r : h->missing) left_in.emplace(r, GroupEnd{h->group, h->op, h->waiting});
    findings->push_back(HangFinding(run, groups, *h, mismatched.count({g.name(), h->seq}) > 0,
                                    parted.count(g.name()) > 0));
  }
  const bool in_mismatch =
      default_end && mismatched.count({default_end->group->name(), default_end->op->seq}) > 0;
  for (int rank : run.missing_ranks) {
    const auto sub = left_in.find(rank);
    findings->push_back(sub != left_in.end() ? DiedFinding(run, rank, sub->second, false)
                                             : DiedFinding(run, rank, default_end, in_mismatch));
  }
}

}  // namespace dsdiag::analyzers::torch_fr
