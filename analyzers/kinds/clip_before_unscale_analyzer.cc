// clip-before-unscale: gradients were clipped while still multiplied by the loss scale.
//
// Input: `clip` records ({"unscaled":false,"norm":43529.4,"max":1}) and the `scaler` record
// of the same rank and step, written after the optimizer step, which gives the scale. With
// fp16 the gradients hold loss_scale x the true gradient until unscale_(); clipping them
// first measures a norm ~scale times too large, so a max_norm meant for true gradients clips
// every step by a factor of about the scale, and the update is then divided by the scale
// once more: training silently crawls. A clip record with `unscaled` false while a scaler
// with scale != 1 is active:
//  - error when the clip triggered (norm > max) on some step: the updates were shrunk;
//  - warning when it never did (the threshold is meaningless, but nothing was shrunk yet).
// One finding for the run, at the first such step, naming every rank it happened on.
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "trace/record_types.h"
#include "trace/records/clip_record.h"
#include "trace/records/scaler_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace {

using trace::JsonValue;

struct ClipObs {
  bool unscaled = true;
  double norm = 0;
  double max = 0;
};

// The first scaled clip seen, as evidence.
struct FirstScaledClip {
  int64_t step = 0;
  int rank = 0;
  ClipObs clip;
  double scale = 1;
};

class ClipBeforeUnscaleAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kClipBeforeUnscale; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kClip, trace::rec::kScaler};
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type_id() == trace::rec_id::kClip) {
      ClipObs c;
      const records::ClipView clip(r);
      c.unscaled = clip.unscaled().value_or(true);
      c.norm = clip.norm().value_or(0);
      c.max = clip.max().value_or(0);
      if (!c.unscaled) pending_[{r.step(), rank.rank}] = c;
      return;
    }
    if (r.type_id() != trace::rec_id::kScaler) return;
    const double scale = records::ScalerView(r).scale().value_or(1);
    scale_[rank.rank] = scale;
    auto it = pending_.find({r.step(), rank.rank});
    if (it != pending_.end()) {
      Judge(r.step(), rank.rank, it->second, scale);
      pending_.erase(it);
    }
  }

  void OnStepDone(int64_t step) override {
    // A scaled clip whose step had no scaler record: the rank's latest scale stands in.
    while (!pending_.empty() && pending_.begin()->first.first <= step) {
      const auto& [key, clip] = *pending_.begin();
      auto s = scale_.find(key.second);
      if (s != scale_.end()) Judge(key.first, key.second, clip, s->second);
      pending_.erase(pending_.begin());
    }
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    OnStepDone(INT64_MAX);
    if (first_) findings->push_back(MakeFinding());
  }

 private:
  void Judge(int64_t step, int rank, const ClipObs& clip, double scale) {
    if (scale == 1) return;  // nothing to unscale: the order does not matter
    ++steps_;
    if (clip.norm > clip.max) ++clipped_;
    ranks_.insert(rank);
    if (!first_ || step < first_->step) first_ = FirstScaledClip{step, rank, clip, scale};
  }

  Finding MakeFinding() const {
    const FirstScaledClip& c = *first_;
    Finding f;
    f.kind = std::string(kind::kClipBeforeUnscale);
    f.severity = clipped_ > 0 ? Severity::kError : Severity::kWarning;
    f.ranks.assign(ranks_.begin(), ranks_.end());
    f.step = c.step;
    f.subject = "clip_grad_norm";
    const double true_norm = c.clip.norm / c.scale;
    f.summary = "gradients were clipped before unscaling: at step " + std::to_string(c.step) +
                " the clip saw norm " + Num(c.clip.norm) + " against max " + Num(c.clip.max) +
                " with loss scale " + Num(c.scale) + " (true norm ~" + Num(true_norm) + ")";
    if (clipped_ > 0)
      f.summary += "; the updates were shrunk by up to " + Num(c.clip.norm / c.clip.max) + "x";
    f.hint =
        "Unscale before clipping: scaler.unscale_(optimizer), then clip_grad_norm_, then "
        "scaler.step(optimizer) (with a manual scaler: divide the gradients by the scale first). "
        "Clipping scaled gradients compares a norm inflated by the loss scale with a threshold "
        "meant for true gradients.";
    f.evidence.Set("norm", c.clip.norm);
    f.evidence.Set("max", c.clip.max);
    f.evidence.Set("scale", c.scale);
    f.evidence.Set("unscaled_norm", true_norm);
    f.evidence.Set("steps_affected", steps_);
    f.evidence.Set("steps_clipped", clipped_);
    return f;
  }

  static std::string Num(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", x);
    return buf;
  }

  std::map<std::pair<int64_t, int>, ClipObs> pending_;  // (step, rank) -> scaled clip
  std::map<int, double> scale_;                         // rank -> latest scale
  std::optional<FirstScaledClip> first_;
  std::set<int> ranks_;
  int64_t steps_ = 0;    // (step, rank) pairs with a scaled clip
  int64_t clipped_ = 0;  // of which the clip triggered
};

}  // namespace

std::unique_ptr<Analyzer> CreateClipBeforeUnscaleAnalyzer() {
  return std::make_unique<ClipBeforeUnscaleAnalyzer>();
}

}  // namespace dsdiag::analyzers
