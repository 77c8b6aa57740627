#include "analyzers/kinds/common/identical_batches.h"

#include <algorithm>
#include <set>
#include <string>

namespace dsdiag::analyzers {

void IdenticalBatches::Add(int rank, int64_t step, uint64_t batch) {
  pending_[step].emplace(rank, batch);  // the step's first: the training loader's batch
}

void IdenticalBatches::StepDone(int64_t step) {
  for (auto it = pending_.begin(); it != pending_.end() && it->first <= step;) {
    // A step some rank never delivers (it died, its loader ended early) is compared among
    // those that did once kLateSteps have passed: the state stays a window, not the run.
    if (it->second.size() < ranks_expected_ && it->first + kLateSteps > step) {
      ++it;
      continue;
    }
    Compare(it->first, it->second);
    it = pending_.erase(it);
  }
}

void IdenticalBatches::Compare(int64_t step, const std::map<int, uint64_t>& batches) {
  if (batches.size() < 2) return;
  ++compared_;
  std::map<uint64_t, std::set<int>> holders;  // batch -> the data replicas holding it
  for (const auto& [rank, batch] : batches)
    holders[batch].insert(replica_of_ ? replica_of_(rank) : rank);
  for (const auto& [rank, batch] : batches) {
    RankStats& s = ranks_[rank];
    if (s.last != 0 && s.last != batch) s.varies = true;
    s.last = batch;
    if (holders[batch].size() < 2) continue;
    ++s.shared;
    if (s.first_shared < 0) s.first_shared = step;
  }
}

std::optional<IdenticalBatchesVerdict> IdenticalBatches::Finish() {
  for (const auto& [step, batches] : pending_) Compare(step, batches);
  pending_.clear();
  if (compared_ < kMinSharedSteps) return std::nullopt;
  IdenticalBatchesVerdict v;
  v.compared_steps = compared_;
  v.first_step = -1;
  trace::JsonValue per_rank = trace::JsonValue::Object();
  for (const auto& [rank, s] : ranks_) {
    per_rank.Set(std::to_string(rank), s.shared);
    if (!s.varies || s.shared < kMinSharedSteps || 2 * s.shared < compared_) continue;
    v.ranks.push_back(rank);
    v.shared_steps = std::max(v.shared_steps, s.shared);
    if (v.first_step < 0 || s.first_shared < v.first_step) v.first_step = s.first_shared;
  }
  if (v.ranks.size() < 2) return std::nullopt;
  v.evidence.Set("steps_compared", compared_);
  v.evidence.Set("steps_identical", v.shared_steps);
  v.evidence.Set("identical_per_rank", std::move(per_rank));
  return v;
}

}  // namespace dsdiag::analyzers
