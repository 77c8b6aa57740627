#include "analyzers/torch_fr/fr_groups.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace dsdiag::analyzers::torch_fr {
namespace {

using trace::TorchFrEntry;
using trace::TorchFrState;

bool DoneByItsDump(const trace::TorchFrDump& dump, const TorchFrEntry& e, int64_t seq) {
  if (e.state == TorchFrState::kCompleted) return true;
  if (e.retired.value_or(false)) return true;
  if (e.is_p2p.value_or(false)) return false;  // pg_status counts collectives only
  const trace::TorchFrGroupStatus* status = dump.FindStatus(e.pg_id);
  return status && status->last_completed && *status->last_completed >= seq;
}

// The group an entry belongs to, job-wide: its name, and whether it is the p2p sequence.
using GroupKey = std::tuple<std::string, bool>;

bool IsDefault(const TorchFrEntry& e) { return e.pg_desc == "default_pg" || e.pg_name == "0"; }

// A collective completed on one member completed on all: mark it done everywhere.
void ShareCompletion(FrGroup* g) {
  if (g->p2p) return;  // a send completes without the receiver having waited in anything
  std::set<int64_t> completed;
  for (const FrRankOps& r : g->ranks)
    for (const FrOp& op : r.ops)
      if (op.done) completed.insert(op.seq);
  for (FrRankOps& r : g->ranks)
    for (FrOp& op : r.ops)
      if (completed.count(op.seq)) op.done = true;
}

}  // namespace

const FrOp* FrRankOps::LastDone() const {
  for (auto it = ops.rbegin(); it != ops.rend(); ++it)
    if (it->done) return &*it;
  return nullptr;
}

const FrOp* FrRankOps::At(int64_t seq) const {
  for (const FrOp& op : ops)
    if (op.seq == seq) return &op;
  return nullptr;
}

const FrOp* FrRankOps::Waiting() const {
  const FrOp* last = Last();
  return last && !last->done ? last : nullptr;
}

const FrRankOps* FrGroup::Of(int rank) const {
  for (const FrRankOps& r : ranks)
    if (r.rank == rank) return &r;
  return nullptr;
}

int64_t FrGroup::MaxSeq() const {
  int64_t most = 0;
  for (const FrRankOps& r : ranks)
    if (const FrOp* last = r.Last()) most = std::max(most, last->seq);
  return most;
}

std::string FrGroup::Label() const {
  std::string label = "group " + (name.empty() ? std::string("?") : name);
  if (!desc.empty() && desc != "undefined") label += " (" + desc + ")";
  if (p2p) label += " p2p";
  return label;
}

std::vector<FrGroup> BuildGroups(const FrRun& run) {
  std::map<GroupKey, FrGroup> groups;
  for (const FrRankDump& d : run.dumps) {
    std::map<GroupKey, FrRankOps> mine;
    for (const TorchFrEntry& e : d.dump.entries) {
      if (e.is_coalesced_marker()) continue;
      const bool p2p = e.is_p2p.value_or(false);
      const int64_t seq = p2p ? e.p2p_seq_id.value_or(0) : e.collective_seq_id;
      const GroupKey key{e.pg_name, p2p};
      FrGroup& g = groups[key];
      g.name = e.pg_name;
      if (g.desc.empty()) g.desc = e.pg_desc;
      g.p2p = p2p;
      g.is_default = g.is_default || IsDefault(e);
      FrRankOps& ops = mine[key];
      ops.rank = d.rank;
      ops.dump = &d;
      ops.ops.push_back(FrOp{seq, &e, DoneByItsDump(d.dump, e, seq)});
    }
    for (auto& [key, ops] : mine) {
      // The ring buffer is oldest first; a seq recorded twice keeps its newest entry.
      std::stable_sort(ops.ops.begin(), ops.ops.end(),
                       [](const FrOp& a, const FrOp& b) { return a.seq < b.seq; });
      groups[key].ranks.push_back(std::move(ops));
    }
  }
  std::vector<FrGroup> out;
  for (auto& [key, g] : groups) {
    std::sort(g.ranks.begin(), g.ranks.end(),
              [](const FrRankOps& a, const FrRankOps& b) { return a.rank < b.rank; });
    ShareCompletion(&g);
    out.push_back(std::move(g));
  }
  // The default group first, then by name: the order findings are made in.
  std::stable_sort(out.begin(), out.end(),
                   [](const FrGroup& a, const FrGroup& b) { return a.is_default > b.is_default; });
  return out;
}

std::string WhereIssued(const TorchFrEntry& entry, bool full) {
  if (entry.frames.empty()) return "";
  const trace::TorchFrFrame* chosen = &entry.frames.front();
  for (const trace::TorchFrFrame& f : entry.frames) {
    if (f.filename.find("/torch/") == std::string::npos) {
      chosen = &f;
      break;
    }
  }
  std::string file = chosen->filename;
  const size_t slash = file.rfind('/');
  if (!full && slash != std::string::npos) file = file.substr(slash + 1);
  return file + ":" + std::to_string(chosen->line) + " in " + chosen->name;
}

std::string OpName(const TorchFrEntry& entry) {
  const std::string_view op = entry.op();
  return op.empty() ? entry.profiling_name : std::string(op);
}

}  // namespace dsdiag::analyzers::torch_fr
