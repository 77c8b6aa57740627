// grad-desync: after the allreduce every rank must hold the same averaged gradient; this
// finds the steps where they do not, and names the rank that made them differ.
//
// Input: `fp` records of what "grad", one per step and rank at each of two points:
//   {"type":"fp","step":12,"what":"grad","why":"after-sync","gran":"bucket","h":["..",".."]}
//   {"type":"fp","step":12,"what":"grad","why":"pre-step","gran":"bucket","h":["..",".."]}
// "after-sync" at the allreduce's completion, "pre-step" just before the gradients are used
// (unscaled, clipped, stepped). At each step the ranks' hashes are compared index by index
// (bucket or parameter), at "pre-step" when the ranks recorded it (what the optimizer uses),
// else at "after-sync".
//
// Who is named, evidence first:
//   changed after the sync  every rank held the same hash at "after-sync" and some ranks'
//                           own "pre-step" hash differs from it: those ranks changed their
//                           gradient themselves (a hook, an in-place op), at any world size;
//   majority                otherwise the ranks outside the largest group (split_verdict.h);
//   no majority             a tie (two ranks, 2 against 2): every rank of the split, and the
//                           finding says nothing tells which side is right.
// A rank whose hash is 0 where the others have one took none: its optimizer did not step
// those parameters in that step (replica-divergence reports it), so it is not compared.
// A desync at one step is enough to make the replicas drift (replica-divergence follows, as
// a follow-on of this finding), so every occurrence is an error. Indices with the same named
// ranks and first step are one finding.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/evidence_text.h"
#include "analyzers/kinds/common/fingerprints.h"
#include "analyzers/kinds/common/split_verdict.h"
#include "trace/record_types.h"
#include "trace/records/fp_record.h"
#include "trace/records/params_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace {

using trace::JsonValue;

// One step's gradient fingerprints of every rank, at the two points.
struct StepFingerprints {
  RankFingerprints after_sync;
  RankFingerprints pre_step;
};

enum class Basis { kChangedAfterSync, kMajority, kNoMajority };

const char* BasisName(Basis b) {
  switch (b) {
    case Basis::kChangedAfterSync:
      return "changed after the sync";
    case Basis::kMajority:
      return "majority";
    case Basis::kNoMajority:
      return "no majority";
  }
  return "majority";
}

struct Desync {
  int64_t first_step = -1;
  int64_t steps = 0;
  std::vector<int> named;  // at the first step
  Basis basis = Basis::kMajority;
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
      if (!table_) table_ = records::ParamTable::Read(r);
      return;
    }
    if (r.type_id() != trace::rec_id::kFingerprint ||
        records::FpView(r).what() != records::fp_what::kGrad)
      return;
    auto fp = ReadFingerprint(r);
    if (!fp) return;
    StepFingerprints& step = pending_[r.step()];
    (fp->why == records::fp_why::kPreStep ? step.pre_step : step.after_sync)
        .Set(rank.rank, std::move(*fp));
  }

  void OnStepDone(int64_t step) override {
    auto it = pending_.find(step);
    if (it == pending_.end()) return;
    Compare(step, it->second);
    pending_.erase(it);
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    for (auto& [step, fps] : pending_) Compare(step, fps);
    pending_.clear();
    std::map<std::pair<std::vector<int>, int64_t>, std::vector<int>> groups;
    for (const auto& [index, d] : desyncs_) groups[{d.named, d.first_step}].push_back(index);
    for (const auto& [key, indices] : groups) findings->push_back(MakeFinding(indices));
  }

 private:
  void Compare(int64_t step, const StepFingerprints& fps) {
    const bool pre = fps.pre_step.size() >= 2;
    const RankFingerprints& used = pre ? fps.pre_step : fps.after_sync;
    for (IndexDivergence& div : DiffByIndex(used)) {
      // A rank with no hash (0) did not step these parameters' optimizer in this step: not
      // a gradient that differs (replica-divergence names the skipped update).
      if (std::any_of(div.groups.begin(), div.groups.end(),
                      [](const RankGroup<uint64_t>& g) { return g.value == 0; }))
        continue;
      Desync& d = desyncs_[div.index];
      if (d.first_step < 0) {
        d.first_step = step;
        d.per_param = used.begin()->second.per_param;
        Judge(fps, pre, div, &d);
        d.first_groups = std::move(div.groups);
      }
      ++d.steps;
    }
  }

  // Evidence first: the ranks whose gradient changed after a sync where all agreed.
  static void Judge(const StepFingerprints& fps, bool pre, const IndexDivergence& div, Desync* d) {
    if (pre) {
      const std::vector<int> changed = ChangedRanks(fps.after_sync, fps.pre_step, div.index);
      bool sync_agreed = fps.after_sync.size() >= 2;
      for (const IndexDivergence& at_sync : DiffByIndex(fps.after_sync))
        if (at_sync.index == div.index) sync_agreed = false;
      if (sync_agreed && !changed.empty() && changed.size() < fps.pre_step.size()) {
        d->named = changed;
        d->basis = Basis::kChangedAfterSync;
        return;
      }
    }
    const SplitVerdict v = JudgeSplit(div.groups);
    d->named = v.named;
    d->basis = v.majority ? Basis::kMajority : Basis::kNoMajority;
  }

  std::string Describe(const Desync& d, int index) const {
    if (table_) return table_->Describe(d.per_param, index);
    return (d.per_param ? "param #" : "bucket ") + std::to_string(index);
  }

  std::string Summary(const Desync& d, const std::string& what) const {
    const std::string who = OnRanks(d.named);
    const std::string at = " at step " + std::to_string(d.first_step);
    const bool one = d.named.size() == 1;
    switch (d.basis) {
      case Basis::kChangedAfterSync:
        return who + (one ? " changed its" : " changed their") + " gradient for " + what +
               " after the gradient sync" + at + ": at the allreduce's completion " +
               (one ? "it" : "they") + " held the same gradient as every other rank, before " +
               "the optimizer step a different one";
      case Basis::kMajority:
        return "after the gradient sync" + at + ", " + who + (one ? " holds" : " hold") +
               " a different gradient for " + what + " than the others";
      case Basis::kNoMajority:
        return "after the gradient sync" + at + ", " + who + " hold different gradients for " +
               what + NoMajorityText(d.first_groups, JudgeSplit(d.first_groups));
    }
    return "";
  }

  Finding MakeFinding(const std::vector<int>& indices) const {
    const Desync& d = desyncs_.at(indices.front());
    Finding f;
    f.kind = std::string(kind::kGradDesync);
    f.severity = Severity::kError;
    f.ranks = d.named;
    f.step = d.first_step;
    f.subject = Describe(d, indices.front());
    const std::string more =
        indices.size() > 1 ? " (+" + std::to_string(indices.size() - 1) + " more)" : "";
    f.summary = Summary(d, *f.subject + more);
    JsonValue tensors = JsonValue::Array();
    for (int i : indices) tensors.Push(Describe(d, i));
    f.evidence.Set("granularity", d.per_param ? "param" : "bucket");
    f.evidence.Set("tensors", std::move(tensors));
    f.evidence.Set("first_step", d.first_step);
    f.evidence.Set("steps_affected", d.steps);
    f.evidence.Set("basis", BasisName(d.basis));
    f.evidence.Set("majority", d.basis != Basis::kNoMajority);
    f.evidence.Set("groups", GroupsJson(d.first_groups));
    f.hint = d.basis == Basis::kChangedAfterSync
                 ? "The gradients were identical on every rank when the allreduce completed and "
                   "changed on these ranks before the optimizer used them: look for a gradient "
                   "hook, a rank-dependent clip or scale, or an in-place edit of .grad on "
                   "those ranks between backward and optimizer.step(). Replicas drift apart "
                   "from here."
                 : "Gradients differ right after the allreduce: something touched them after "
                   "the sync (a hook, a rank-dependent clip or scale, an in-place edit), or the "
                   "ranks reduced different buckets. Replicas will drift apart from here; rerun "
                   "with --probes full to hash every parameter's gradient.";
    return f;
  }

  std::optional<records::ParamTable> table_;
  std::map<int64_t, StepFingerprints> pending_;  // step -> both points' fingerprints
  std::map<int, Desync> desyncs_;                // index -> desync
};

}  // namespace

std::unique_ptr<Analyzer> CreateGradDesyncAnalyzer() {
  return std::make_unique<GradDesyncAnalyzer>();
}

}  // namespace dsdiag::analyzers
