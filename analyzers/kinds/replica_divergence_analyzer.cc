// replica-divergence: replicas that were equal drift apart during training.
//
// Input: `fp` records with what "param" (and "buffer", from the Python package):
//   {"type":"fp","step":10,"what":"param","why":"periodic","gran":"bucket","h":["..",".."]}
//   {"type":"fp","step":11,"what":"param","why":"pre-step","gran":"bucket","h":["..",".."]}
// "periodic" after an optimizer step every N steps (and "final"); "pre-step" at the next
// step, just before the optimizer uses the gradients; buffers "forward", where DDP has just
// broadcast rank 0's (so they are equal unless broadcast_buffers=False). Data parallelism is only
// correct while every replica is bit-identical: the first fingerprint at which the ranks differ is
// the finding (its step, the tensors that differ, which ranks agree with which).
//
// Who is named, evidence first:
//   changed outside the optimizer  a rank whose "pre-step" parameters differ from its own
//                                  "periodic" ones of the step before changed them between
//                                  two optimizer steps (a manual decay, a rank-conditional
//                                  load), at any world size; so does a rank whose probe saw
//                                  parameters written in place between two optimizer steps
//                                  (a `params-changed-outside-optimizer` mark, from their
//                                  version counters: every step, where fingerprints are
//                                  taken every N) since the replicas were last equal;
//   majority / no majority         otherwise the split verdict (split_verdict.h).
// An optimizer step skipped on some ranks (a GAN's discriminator step left out on one rank)
// shows before any parameter fingerprint does: the step's gradient `pre-step` hashes are
// taken just before each optimizer steps, so a rank whose optimizer did not step holds none
// (0) for those parameters where the others hold one. The first such step is the finding's
// step when it is not after the first parameter divergence, naming those ranks (basis
// "optimizer step skipped").
// A divergence that follows a grad-desync (the gradient differed, so the update did) is a
// follow-on of that finding: the follow-on pass ranks it info, with the cause in its
// evidence. Replicas that differ at "init" never were equal: that is init-divergence, and
// no replica-divergence follows it; fingerprints after a resume are left to
// checkpoint-mismatch.
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
#include "trace/records/mark_record.h"
#include "trace/records/params_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace {

using trace::JsonValue;

constexpr size_t kMaxTensorsListed = 10;
// The Python model probe's mark: parameters written in place between two optimizer steps.
constexpr std::string_view kWrittenOutsideMark = "params-changed-outside-optimizer";

struct WrittenOutside {
  int64_t step;  // the step before whose optimizer step the writes were seen
  int rank;
};

// Within one step fingerprints are taken in this order: after the broadcast or the load,
// before the optimizer step, then after it.
int WhyOrder(const std::string& why) {
  if (why == records::fp_why::kInit) return 0;
  if (why == records::fp_why::kResume) return 1;
  if (why == records::fp_why::kForward)
    return 2;  // buffers, as the module's forward begins (Python)
  if (why == records::fp_why::kPreStep) return 3;
  if (why == records::fp_why::kPeriodic) return 4;
  return 5;  // "final" and anything newer
}

class ReplicaDivergenceAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kReplicaDivergence; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kParams, trace::rec::kFingerprint, trace::rec::kMark};
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type_id() == trace::rec_id::kMark) {
      if (records::MarkView(r).name() == kWrittenOutsideMark)
        written_outside_.push_back({r.step(), rank.rank});
      return;
    }
    if (r.type_id() == trace::rec_id::kParams) {
      if (!table_) table_ = records::ParamTable::Read(r);
      return;
    }
    if (r.type_id() != trace::rec_id::kFingerprint) return;
    const records::FpView view(r);
    const auto what = view.what();
    const bool grad = what == records::fp_what::kGrad;
    if (what != records::fp_what::kParam && what != records::fp_what::kBuffer && !grad) return;
    // Only pre-step gradients count here: the others' hashes are not decoded at all (they
    // are most of a light trace's fingerprints, and grad-desync decodes them already).
    if (grad && view.why() != records::fp_why::kPreStep) return;
    auto fp = ReadFingerprint(r);
    if (!fp) return;
    pending_[{r.step(), WhyOrder(fp->why), fp->what}].Set(rank.rank, std::move(*fp));
  }

  void OnStepDone(int64_t step) override {
    while (!pending_.empty() && std::get<0>(pending_.begin()->first) <= step) {
      Compare(std::get<0>(pending_.begin()->first), pending_.begin()->second);
      pending_.erase(pending_.begin());
    }
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    OnStepDone(INT64_MAX);
    if (skipped_ && (!finding_ || *finding_->step >= skipped_->first_step)) {
      findings->push_back(MakeSkippedFinding());
    } else if (finding_) {
      findings->push_back(std::move(*finding_));
    }
  }

 private:
  // The first step where some ranks took no gradient hash for parameters the others'
  // optimizers stepped.
  struct Skipped {
    int64_t first_step = -1;
    std::vector<int> ranks;
    std::vector<int> indices;
    bool per_param = true;
  };

  void NoteSkipped(int64_t step, const RankFingerprints& by_rank) {
    if (skipped_ || done_ || by_rank.size() < 2) return;
    Skipped s;
    for (const IndexDivergence& div : DiffByIndex(by_rank)) {
      std::vector<int> zero;
      for (const auto& g : div.groups)
        if (g.value == 0) zero = g.ranks;
      if (zero.empty()) continue;
      if (s.ranks.empty()) s.ranks = zero;
      if (zero == s.ranks) s.indices.push_back(div.index);
    }
    if (s.indices.empty()) return;
    s.first_step = step;
    s.per_param = by_rank.begin()->second.per_param;
    skipped_ = std::move(s);
  }

  Finding MakeSkippedFinding() const {
    const Skipped& s = *skipped_;
    Finding f;
    f.kind = std::string(kind::kReplicaDivergence);
    f.severity = Severity::kError;
    f.ranks = s.ranks;
    f.step = s.first_step;
    FingerprintRecord as_param;
    as_param.what = records::fp_what::kParam;
    as_param.per_param = s.per_param;
    f.subject = Describe(as_param, s.indices.front());
    const bool one = s.ranks.size() == 1;
    const std::string more =
        s.indices.size() > 1 ? " (+" + std::to_string(s.indices.size() - 1) + " more)" : "";
    f.summary = OnRanks(s.ranks) + " did not step the optimizer of " + *f.subject + more +
                " at step " + std::to_string(s.first_step) + " while the other ranks did: " +
                (one ? "its replica differs" : "their replicas differ") +
                " from theirs from then on";
    JsonValue tensors = JsonValue::Array();
    for (size_t i = 0; i < s.indices.size() && i < kMaxTensorsListed; ++i)
      tensors.Push(Describe(as_param, s.indices[i]));
    f.evidence.Set("fingerprint", records::fp_why::kPreStep);
    f.evidence.Set("what", records::fp_what::kGrad);
    f.evidence.Set("tensors_differing", static_cast<int64_t>(s.indices.size()));
    f.evidence.Set("tensors", std::move(tensors));
    f.evidence.Set("basis", "optimizer step skipped");
    f.evidence.Set("majority", true);
    if (finding_) f.evidence.Set("parameters_differ_from_step", *finding_->step);
    f.hint =
        "These ranks left out an optimizer step the others took (a condition on the rank, a "
        "step skipped after a local check, an exception swallowed around optimizer.step()): "
        "every rank must step every optimizer, or none. With GradScaler, let scaler.step() "
        "decide for all ranks alike.";
    return f;
  }

  void Compare(int64_t step, const RankFingerprints& by_rank) {
    const FingerprintRecord& any = by_rank.begin()->second;
    if (any.what == records::fp_what::kGrad) return NoteSkipped(step, by_rank);
    // A rank's own parameters between two optimizer steps (evidence at any world size).
    std::vector<int> changed;
    if (any.why == records::fp_why::kPreStep && any.what == records::fp_what::kParam) {
      changed = ChangedRanks(last_periodic_, by_rank);
      if (changed.size() == by_rank.size()) changed.clear();  // every rank: no odd one
    } else if (any.why == records::fp_why::kPeriodic && any.what == records::fp_what::kParam) {
      last_periodic_ = by_rank;
    }
    if (done_ || by_rank.size() < 2) return;
    const auto diffs = DiffByIndex(by_rank);
    if (diffs.empty()) {
      if (any.why != records::fp_why::kResume) last_equal_step_ = step;
      return;
    }
    done_ = true;  // the first divergence is the one that matters
    // Never equal (init-divergence's), or after a resume (checkpoint-mismatch's).
    if (any.why == records::fp_why::kInit || any.why == records::fp_why::kResume) return;
    int64_t written_at = step;  // the optimizer step the writes came before
    if (changed.empty() && any.what == records::fp_what::kParam)
      changed = WrittenSinceEqual(step, by_rank.size(), &written_at);
    finding_ = MakeFinding(step, by_rank, diffs, changed, written_at);
  }

  // The ranks that wrote their parameters outside the optimizer after the replicas were
  // last seen equal and by `step` (marks), and in *first the earliest such step; none when
  // every compared rank did (no odd one).
  std::vector<int> WrittenSinceEqual(int64_t step, size_t compared, int64_t* first) const {
    std::vector<int> ranks;
    for (const WrittenOutside& w : written_outside_) {
      if (w.step <= last_equal_step_ || w.step > step) continue;
      if (ranks.empty() || w.step < *first) *first = w.step;
      ranks.push_back(w.rank);
    }
    NormalizeRanks(&ranks);
    if (ranks.size() >= compared) ranks.clear();
    return ranks;
  }

  std::string Describe(const FingerprintRecord& fp, int index) const {
    if (fp.what == records::fp_what::kParam && table_) return table_->Describe(fp.per_param, index);
    if (fp.what == records::fp_what::kBuffer && table_) return table_->BufferName(index);
    return (fp.what == records::fp_what::kBuffer ? "buffer #"
            : fp.per_param                       ? "param #"
                                                 : "bucket ") +
           std::to_string(index);
  }

  Finding MakeFinding(int64_t step, const RankFingerprints& by_rank,
                      const std::vector<IndexDivergence>& diffs, const std::vector<int>& changed,
                      int64_t written_at) const {
    const FingerprintRecord& any = by_rank.begin()->second;
    const auto groups = GroupByVector(by_rank);
    const SplitVerdict split = JudgeSplit(groups);
    const bool evidence = !changed.empty();
    Finding f;
    f.kind = std::string(kind::kReplicaDivergence);
    f.severity = Severity::kError;
    f.ranks = evidence ? changed : split.named;
    f.step = step;
    f.subject = Describe(any, diffs.front().index);
    const std::string n = std::to_string(diffs.size()) + " of " +
                          std::to_string(any.hashes.size()) +
                          (any.what == records::fp_what::kBuffer ? " buffers"
                           : any.per_param                       ? " parameters"
                                                                 : " buckets");
    f.summary = "replicas diverged by step " + std::to_string(step) + ": " + n + " differ, first " +
                *f.subject + "; " + std::to_string(groups.size()) + " distinct replicas";
    if (evidence) {
      f.summary += "; " + OnRanks(changed) +
                   (changed.size() == 1 ? " changed its" : " changed their") +
                   " parameters outside the optimizer (between the optimizer steps of step " +
                   std::to_string(written_at - 1) + " and " + std::to_string(written_at) + ")";
    } else {
      f.summary += NoMajorityText(groups, split);
    }
    f.hint = any.what == records::fp_what::kBuffer && !evidence
                 ? "The module's buffers differ across ranks where DDP broadcasts rank 0's at "
                   "the start of each forward: the model was wrapped with "
                   "broadcast_buffers=False (BatchNorm running statistics then follow each "
                   "rank's own batches), or a buffer is written on some ranks only. Keep "
                   "broadcast_buffers=True, use SyncBatchNorm, or sync the buffers yourself "
                   "before evaluating or saving."
             : evidence
                 ? "The parameters changed on these ranks between two optimizer steps, where "
                   "nothing should touch them: look for a manual update (weight decay, a "
                   "projection, an EMA written back) or a load that runs on some ranks only."
                 : "Replicas were equal and drifted apart: look for a grad-desync finding at or "
                   "before this step, a rank-dependent optimizer or scaler decision "
                   "(scaler-desync), buffers left unsynced (BatchNorm with "
                   "broadcast_buffers=False), or non-deterministic ops that differ per rank. "
                   "Fingerprint more often (--probes full) to find the exact step.";
    JsonValue tensors = JsonValue::Array();
    for (size_t i = 0; i < diffs.size() && i < kMaxTensorsListed; ++i)
      tensors.Push(Describe(any, diffs[i].index));
    f.evidence.Set("fingerprint", any.why);
    f.evidence.Set("what", any.what);
    f.evidence.Set("granularity", any.per_param ? "param" : "bucket");
    f.evidence.Set("tensors_differing", static_cast<int64_t>(diffs.size()));
    f.evidence.Set("tensors", std::move(tensors));
    if (last_equal_step_ >= 0) f.evidence.Set("last_equal_step", last_equal_step_);
    f.evidence.Set("basis", evidence         ? "changed outside the optimizer"
                            : split.majority ? "majority"
                                             : "no majority");
    if (evidence) f.evidence.Set("changed_before_step", written_at);
    f.evidence.Set("majority", evidence || split.majority);
    f.evidence.Set("groups", GroupsJson(groups));
    return f;
  }

  std::optional<records::ParamTable> table_;
  // (step, order of `why` within a step, what) -> rank -> fingerprint, in the order taken.
  std::map<std::tuple<int64_t, int, std::string>, RankFingerprints> pending_;
  RankFingerprints last_periodic_;               // the latest "periodic" param fingerprints
  std::vector<WrittenOutside> written_outside_;  // the marks, in the order read
  int64_t last_equal_step_ = -1;
  bool done_ = false;
  std::optional<Finding> finding_;
  std::optional<Skipped> skipped_;
};

}  // namespace

std::unique_ptr<Analyzer> CreateReplicaDivergenceAnalyzer() {
  return std::make_unique<ReplicaDivergenceAnalyzer>();
}

}  // namespace dsdiag::analyzers
