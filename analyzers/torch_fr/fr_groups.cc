#include "analyzers/torch_fr/fr_groups.h"

#include <algorithm>
#include <unordered_set>

#include "trace/torch_fr/torch_fr_keys.h"

namespace dsdiag::analyzers::torch_fr {
namespace {

// A collective completed on one member completed on all: mark it done everywhere.
void ShareCompletion(FrGroup* g) {
  if (g->p2p()) return;  // a send completes without the receiver having waited in anything
  std::unordered_set<int64_t> completed;
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
  const auto it = std::lower_bound(ops.begin(), ops.end(), seq,
                                   [](const FrOp& op, int64_t s) { return op.seq < s; });
  return it != ops.end() && it->seq == seq ? &*it : nullptr;
}

const FrOp* FrRankOps::FirstPending() const {
  const FrOp* last_done = LastDone();
  for (const FrOp& op : ops)
    if (!op.done && (last_done == nullptr || op.seq > last_done->seq)) return &op;
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
  std::string label = "group " + (name().empty() ? std::string("?") : name());
  if (!desc().empty() && desc() != trace::torch_fr_desc::kUndefined) label += " (" + desc() + ")";
  if (p2p()) label += " p2p";
  return label;
}

std::vector<FrGroup> BuildGroups(const FrRun& run) {
  std::vector<FrGroup> groups(run.groups.size());
  for (size_t i = 0; i < groups.size(); ++i) groups[i].id = &run.groups[i];
  for (const FrRankDump& d : run.dumps) {
    std::vector<FrRankOps*> mine(groups.size(), nullptr);
    for (const FrEntry& e : d.entries) {
      FrRankOps*& ops = mine[e.group];
      if (ops == nullptr) {
        groups[e.group].ranks.push_back(FrRankOps{d.rank, &d, {}});
        ops = &groups[e.group].ranks.back();
      }
      ops->ops.push_back(FrOp{e.seq, &e, e.done_by_dump});
    }
    for (FrRankOps* ops : mine)
      if (ops)  // the ring buffer is oldest first; sort by seq, stable for repeats
        std::stable_sort(ops->ops.begin(), ops->ops.end(),
                         [](const FrOp& a, const FrOp& b) { return a.seq < b.seq; });
  }
  for (FrGroup& g : groups) ShareCompletion(&g);
  std::stable_sort(groups.begin(), groups.end(), [](const FrGroup& a, const FrGroup& b) {
    return a.is_default() > b.is_default();
  });
  return groups;
}

}  // namespace dsdiag::analyzers::torch_fr
