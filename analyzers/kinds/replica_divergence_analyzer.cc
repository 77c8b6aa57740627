// init-divergence and replica-divergence: do all ranks hold the same parameters?
//
// Input: `fp` records with what "param":
//   {"type":"fp","step":0,"what":"param","why":"init","gran":"bucket","h":["..",".."]}
// written after the initial broadcast (why "init"), every N steps ("periodic"), at the end
// ("final") and after a resume ("resume"). Data parallelism is only correct while every
// replica is bit-identical, so
//  - init-divergence: the `init` fingerprints differ (a forgotten broadcast, seeds that
//    differ per rank before model construction). Replicas never were equal.
//  - replica-divergence: equal at init, different later: the first fingerprint at which
//    they differ, the tensors that differ, and which ranks agree with which.
// Fingerprints after a resume are left to checkpoint-mismatch; a divergence first seen
// there is not reported again here.
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

constexpr size_t kMaxTensorsListed = 10;

// Within one step fingerprints are taken in this order: after the broadcast or the load,
// then after the optimizer step.
int WhyOrder(const std::string& why) {
  if (why == "init") return 0;
  if (why == "resume") return 1;
  if (why == "periodic") return 2;
  return 3;  // "final" and anything newer
}

class ReplicaDivergenceAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kReplicaDivergence; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kParams, trace::rec::kFingerprint};
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type_id() == trace::rec_id::kParams) {
      if (!table_) table_ = ParamTable::FromRecord(r);
      return;
    }
    if (r.type_id() != trace::rec_id::kFingerprint || r.Str("what") != "param") return;
    auto fp = ReadFingerprint(r);
    if (!fp) return;
    const int order = WhyOrder(fp->why);
    pending_[{r.step(), order}][rank.rank] = std::move(*fp);
  }

  void OnStepDone(int64_t step) override {
    while (!pending_.empty() && pending_.begin()->first.first <= step) {
      Compare(pending_.begin()->first.first, pending_.begin()->second);
      pending_.erase(pending_.begin());
    }
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    OnStepDone(INT64_MAX);
    if (finding_) findings->push_back(std::move(*finding_));
  }

 private:
  void Compare(int64_t step, const std::map<int, FingerprintRecord>& by_rank) {
    if (done_ || by_rank.size() < 2) return;
    const std::string& why = by_rank.begin()->second.why;
    const auto diffs = DiffByIndex(by_rank);
    if (diffs.empty()) {
      if (why != "resume") last_equal_step_ = step;
      return;
    }
    done_ = true;  // the first divergence is the one that matters
    if (why == "resume") return;
    const bool at_init = why == "init";
    finding_ = MakeFinding(step, why, by_rank, diffs, at_init);
  }

  std::string Describe(bool per_param, int index) const {
    if (table_) return table_->Describe(per_param, index);
    return (per_param ? "param #" : "bucket ") + std::to_string(index);
  }

  Finding MakeFinding(int64_t step, const std::string& why,
                      const std::map<int, FingerprintRecord>& by_rank,
                      const std::vector<IndexDivergence>& diffs, bool at_init) const {
    const bool per_param = by_rank.begin()->second.per_param;
    const auto groups = GroupByVector(by_rank);
    Finding f;
    f.kind = std::string(at_init ? kind::kInitDivergence : kind::kReplicaDivergence);
    f.severity = Severity::kError;
    f.ranks = OddRanks(groups);
    f.step = step;
    f.subject = Describe(per_param, diffs.front().index);
    const std::string n = std::to_string(diffs.size()) + " of " +
                          std::to_string(by_rank.begin()->second.hashes.size()) +
                          (per_param ? " parameters" : " buckets");
    if (at_init) {
      f.summary = "parameters differ across ranks before the first update: " + n +
                  " differ, first " + *f.subject + "; " + std::to_string(groups.size()) +
                  " distinct replicas";
      f.hint =
          "Replicas must start identical: broadcast parameters and buffers from rank 0 after "
          "building the model (DDP does this in its constructor), and seed the model-init RNG "
          "with the same seed on every rank (per-rank seeds only for dropout and data).";
    } else {
      f.summary = "replicas diverged by step " + std::to_string(step) + ": " + n +
                  " differ, first " + *f.subject + "; " + std::to_string(groups.size()) +
                  " distinct replicas";
      f.hint =
          "Replicas were equal and drifted apart: look for a grad-desync finding at or before "
          "this step, a rank-dependent optimizer or scaler decision (scaler-desync), or "
          "non-deterministic ops that differ per rank. Fingerprint more often (--probes full) "
          "to find the exact step.";
    }
    JsonValue tensors = JsonValue::Array();
    for (size_t i = 0; i < diffs.size() && i < kMaxTensorsListed; ++i)
      tensors.Push(Describe(per_param, diffs[i].index));
    f.evidence.Set("fingerprint", why);
    f.evidence.Set("granularity", per_param ? "param" : "bucket");
    f.evidence.Set("tensors_differing", static_cast<int64_t>(diffs.size()));
    f.evidence.Set("tensors", std::move(tensors));
    if (!at_init && last_equal_step_ >= 0) f.evidence.Set("last_equal_step", last_equal_step_);
    f.evidence.Set("groups", GroupsJson(groups));
    return f;
  }

  std::optional<ParamTable> table_;
  // (step, order of `why` within a step) -> rank -> fingerprint, in the order taken.
  std::map<std::pair<int64_t, int>, std::map<int, FingerprintRecord>> pending_;
  int64_t last_equal_step_ = -1;
  bool done_ = false;
  std::optional<Finding> finding_;
};

}  // namespace

std::unique_ptr<Analyzer> CreateReplicaDivergenceAnalyzer() {
  return std::make_unique<ReplicaDivergenceAnalyzer>();
}

}  // namespace dsdiag::analyzers
