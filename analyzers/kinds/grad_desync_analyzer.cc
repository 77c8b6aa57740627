// grad-desync: after the allreduce every rank must hold the same averaged gradient; this
// finds the steps where they do not.
//
// Input: `fp` records with what "grad", why "after-sync" (one per step and rank), e.g.
//   {"type":"fp","step":12,"what":"grad","why":"after-sync","gran":"bucket","h":["..",".."]}
// At each step the ranks' hashes are compared index by index (bucket or parameter); the
// ranks outside the largest group are the odd ones. A desync at one step is enough to make
// the replicas drift (replica-divergence follows), so every occurrence is an error.
// Indices with the same odd ranks and first step are one finding.
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/fingerprints.h"
#include "analyzers/kinds/common/param_table.h"
#include "trace/record_types.h"

namespace dsdiag::analyzers {
namespace {

using trace::JsonValue;

struct Desync {
  int64_t first_step = -1;
  int64_t steps = 0;
  std::vector<int> odd_ranks;  // at the first step
  std::vector<RankGroup<uint64_t>> first_groups;
  bool per_param = false;
};

class GradDesyncAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kGradDesync; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kParams, trace::rec::kFingerprint};
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type_id() == trace::rec_id::kParams) {
      if (!table_) table_ = ParamTable::FromRecord(r);
      return;
    }
    if (r.type_id() != trace::rec_id::kFingerprint || r.Str("what") != "grad") return;
    if (auto fp = ReadFingerprint(r)) pending_[r.step()][rank.rank] = std::move(*fp);
  }

  void OnStepDone(int64_t step) override {
    auto it = pending_.find(step);
    if (it == pending_.end()) return;
    Compare(step, it->second);
    pending_.erase(it);
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    for (auto& [step, by_rank] : pending_) Compare(step, by_rank);
    pending_.clear();
    std::map<std::pair<std::vector<int>, int64_t>, std::vector<int>> groups;
    for (const auto& [index, d] : desyncs_) groups[{d.odd_ranks, d.first_step}].push_back(index);
    for (const auto& [key, indices] : groups) findings->push_back(MakeFinding(indices));
  }

 private:
  void Compare(int64_t step, const std::map<int, FingerprintRecord>& by_rank) {
    for (IndexDivergence& div : DiffByIndex(by_rank)) {
      Desync& d = desyncs_[div.index];
      if (d.first_step < 0) {
        d.first_step = step;
        d.odd_ranks = OddRanks(div.groups);
        d.first_groups = std::move(div.groups);
        d.per_param = by_rank.begin()->second.per_param;
      }
      ++d.steps;
    }
  }

  std::string Describe(const Desync& d, int index) const {
    if (table_) return table_->Describe(d.per_param, index);
    return (d.per_param ? "param #" : "bucket ") + std::to_string(index);
  }

  Finding MakeFinding(const std::vector<int>& indices) const {
    const Desync& d = desyncs_.at(indices.front());
    Finding f;
    f.kind = std::string(kind::kGradDesync);
    f.severity = Severity::kError;
    f.ranks = d.odd_ranks;
    f.step = d.first_step;
    f.subject = Describe(d, indices.front());
    const std::string more =
        indices.size() > 1 ? " (+" + std::to_string(indices.size() - 1) + " more)" : "";
    f.summary = "after the gradient sync at step " + std::to_string(d.first_step) + ", " +
                (f.ranks.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(f.ranks) +
                (f.ranks.size() == 1 ? " holds" : " hold") + " a different gradient for " +
                *f.subject + more + " than the others";
    JsonValue tensors = JsonValue::Array();
    for (int i : indices) tensors.Push(Describe(d, i));
    f.evidence.Set("granularity", d.per_param ? "param" : "bucket");
    f.evidence.Set("tensors", std::move(tensors));
    f.evidence.Set("first_step", d.first_step);
    f.evidence.Set("steps_affected", d.steps);
    f.evidence.Set("groups", GroupsJson(d.first_groups));
    f.hint =
        "Gradients differ right after the allreduce: something touched them after the sync on "
        "those ranks (a hook, a rank-dependent clip or scale, an in-place edit), or the ranks "
        "reduced different buckets. Replicas will drift apart from here; rerun with "
        "--probes full to hash every parameter's gradient.";
    return f;
  }

  std::optional<ParamTable> table_;
  std::map<int64_t, std::map<int, FingerprintRecord>> pending_;  // step -> rank -> fp
  std::map<int, Desync> desyncs_;                                // index -> desync
};

}  // namespace

std::unique_ptr<Analyzer> CreateGradDesyncAnalyzer() {
  return std::make_unique<GradDesyncAnalyzer>();
}

}  // namespace dsdiag::analyzers
