// scaler-overflow: the fp16 loss scaler found non-finite gradients and skipped steps.
//
// Input: one `scaler` record per rank and optimizer step (fp16 only):
//   {"type":"scaler","step":7,"scale":65536,"inf_local":true,"inf_global":true,
//    "skipped":true,"event":"backoff","norm_scaled":null,"norm":null}
// The ranks' records of a step are merged (scaler-desync reports when they disagree): a step
// is skipped when any rank skipped it, the ranks with `inf_local` are where the overflow came
// from, and the lowest scale counts. Consecutive skipped steps form one streak. Dynamic loss
// scaling skips steps on purpose, so not every skip is a problem:
//  - info: skips among the first kCalibrationSteps steps (a fresh scaler starts at 2^16 and
//    backs off until the gradients fit), and a single skip right after a `growth` (the scaler
//    probing a larger scale, then backing off).
//  - warning: any other skip (one skipped step mid-training is already a lost update and the
//    sign of a gradient spike).
//  - error: the scale collapsed: it fell below kScaleFloor, or kCollapseStreak or more steps in a
//    row were skipped outside calibration. Training makes no progress then.
// Each class is one finding at its first step, with every affected step counted in evidence.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "trace/record_types.h"
#include "trace/records/scaler_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace {

using trace::JsonValue;

constexpr int64_t kCalibrationSteps = 20;
constexpr double kScaleFloor = 1.0;
constexpr int64_t kCollapseStreak = 5;
constexpr size_t kMaxStepsListed = 20;

// One rank's scaler record.
struct ScalerObs {
  double scale = 1;
  bool inf_local = false;
  bool skipped = false;
  bool growth = false;
};

// The ranks' records of one step, merged.
struct StepObs {
  int64_t step = 0;
  double scale = 1;  // the lowest
  bool skipped = false;
  bool growth = false;
  std::vector<int> origin;    // ranks with inf_local
  std::vector<int> skippers;  // ranks that skipped
};

// What one class of skips (info, warning, error) gathered.
struct SkipClass {
  std::optional<int64_t> first_step;
  std::vector<int64_t> steps;  // the first kMaxStepsListed
  int64_t count = 0;
  int64_t longest_streak = 0;
  std::vector<int> origin;                // ranks whose gradients overflowed
  std::vector<int> skippers;              // ranks that skipped
  std::optional<double> last_good_scale;  // before the first skip of the class
  double scale_at_first = 0;
  double lowest_scale = 0;
};

JsonValue IntArray(const std::vector<int>& v) {
  JsonValue a = JsonValue::Array();
  for (int x : v) a.Push(x);
  return a;
}

std::string StepsText(int64_t n) { return std::to_string(n) + (n == 1 ? " step" : " steps"); }

class ScalerOverflowAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kScalerOverflow; }
  std::vector<std::string_view> record_types() const override { return {trace::rec::kScaler}; }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type_id() != trace::rec_id::kScaler) return;
    ScalerObs obs;
    const records::ScalerView scaler(r);
    obs.scale = scaler.scale().value_or(1);
    obs.inf_local = scaler.inf_local().value_or(false);
    obs.skipped = scaler.skipped().value_or(false);
    obs.growth = scaler.event() == std::optional<std::string_view>("growth");
    pending_[r.step()][rank.rank] = obs;
  }

  void OnStepDone(int64_t step) override {
    while (!pending_.empty() && pending_.begin()->first <= step) {
      Merge(pending_.begin()->first, pending_.begin()->second);
      pending_.erase(pending_.begin());
    }
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    OnStepDone(INT64_MAX);
    CloseStreak();
    if (error_.first_step) findings->push_back(MakeFinding(error_, Severity::kError));
    if (warning_.first_step) findings->push_back(MakeFinding(warning_, Severity::kWarning));
    if (info_.first_step) findings->push_back(MakeFinding(info_, Severity::kInfo));
  }

 private:
  void Merge(int64_t step, const std::map<int, ScalerObs>& by_rank) {
    StepObs s;
    s.step = step;
    s.scale = INFINITY;
    for (const auto& [rank, obs] : by_rank) {
      s.scale = std::min(s.scale, obs.scale);
      s.skipped = s.skipped || obs.skipped;
      s.growth = s.growth || obs.growth;
      if (obs.inf_local) s.origin.push_back(rank);
      if (obs.skipped) s.skippers.push_back(rank);
    }
    if (s.skipped) {
      if (!streak_.empty() && streak_.back().step + 1 != step) CloseStreak();
      streak_.push_back(std::move(s));
      return;
    }
    CloseStreak();
    last_good_scale_ = s.scale;
    grew_last_step_ = s.growth;
  }

  // Classifies the streak that just ended and adds it to its class.
  void CloseStreak() {
    if (streak_.empty()) return;
    const int64_t length = static_cast<int64_t>(streak_.size());
    double lowest = INFINITY;
    for (const StepObs& s : streak_) lowest = std::min(lowest, s.scale);
    const bool calibrating = streak_.back().step < kCalibrationSteps;
    const bool collapsed = lowest < kScaleFloor || (!calibrating && length >= kCollapseStreak);
    const bool probe = length == 1 && grew_last_step_;
    SkipClass* c = collapsed ? &error_ : (calibrating || probe) ? &info_ : &warning_;
    if (!c->first_step) {
      c->first_step = streak_.front().step;
      c->last_good_scale = last_good_scale_;
      c->scale_at_first = streak_.front().scale;
      c->lowest_scale = lowest;
    }
    c->lowest_scale = std::min(c->lowest_scale, lowest);
    c->longest_streak = std::max(c->longest_streak, length);
    for (const StepObs& s : streak_) {
      ++c->count;
      if (c->steps.size() < kMaxStepsListed) c->steps.push_back(s.step);
      c->origin.insert(c->origin.end(), s.origin.begin(), s.origin.end());
      c->skippers.insert(c->skippers.end(), s.skippers.begin(), s.skippers.end());
    }
    NormalizeRanks(&c->origin);
    NormalizeRanks(&c->skippers);
    streak_.clear();
    grew_last_step_ = false;
  }

  Finding MakeFinding(const SkipClass& c, Severity severity) const {
    Finding f;
    f.kind = std::string(kind::kScalerOverflow);
    f.severity = severity;
    // Where the overflow came from; every rank that skipped when no rank says.
    f.ranks = c.origin.empty() ? c.skippers : c.origin;
    f.step = c.first_step;
    f.subject = "loss scale";
    const std::string from = " from step " + std::to_string(*c.first_step);
    const std::string where = c.origin.empty()
                                  ? ""
                                  : "; non-finite gradients on rank" +
                                        std::string(c.origin.size() == 1 ? " " : "s ") +
                                        FormatRankRanges(c.origin);
    if (severity == Severity::kError) {
      f.summary = "the loss scale collapsed: " + StepsText(c.count) + " skipped" + from +
                  ", longest streak " + std::to_string(c.longest_streak) + ", scale down to " +
                  Num(c.lowest_scale) + where;
      f.hint =
          "Every step overflows whatever the scale: the gradients themselves are non-finite. "
          "Look for a NaN/inf in the loss or the data (log1p/exp/division by zero, a bad batch), "
          "a learning rate that made the weights blow up, or an op that overflows in fp16 "
          "(run it in fp32 or switch to bf16).";
    } else if (severity == Severity::kWarning) {
      f.summary = StepsText(c.count) + " skipped for non-finite gradients" + from +
                  " (longest streak " + std::to_string(c.longest_streak) + ")" + where;
      f.hint =
          "A skipped step is a lost update. Occasional skips are how dynamic loss scaling works; "
          "repeated ones mid-training point to gradient spikes: check the loss and the batches "
          "of these steps, lower the learning rate or clip (after unscaling).";
    } else {
      f.summary = StepsText(c.count) + " skipped while the loss scaler calibrated" + from + where;
      f.hint =
          "Normal for fp16: the scaler starts high (2^16) and backs off until the gradients fit, "
          "and after each growth it may back off once. Nothing to do unless this repeats often.";
    }
    JsonValue steps = JsonValue::Array();
    for (int64_t s : c.steps) steps.Push(s);
    f.evidence.Set("skipped_steps", c.count);
    f.evidence.Set("steps", std::move(steps));
    f.evidence.Set("longest_streak", c.longest_streak);
    f.evidence.Set("scale_at_first_skip", c.scale_at_first);
    f.evidence.Set("lowest_scale", c.lowest_scale);
    if (c.last_good_scale) f.evidence.Set("last_good_scale", *c.last_good_scale);
    f.evidence.Set("ranks_with_inf", IntArray(c.origin));
    f.evidence.Set("ranks_skipped", IntArray(c.skippers));
    return f;
  }

  static std::string Num(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
  }

  std::map<int64_t, std::map<int, ScalerObs>> pending_;  // step -> rank -> record
  std::vector<StepObs> streak_;                          // the current run of skipped steps
  std::optional<double> last_good_scale_;
  bool grew_last_step_ = false;
  SkipClass info_, warning_, error_;
};

}  // namespace

std::unique_ptr<Analyzer> CreateScalerOverflowAnalyzer() {
  return std::make_unique<ScalerOverflowAnalyzer>();
}

}  // namespace dsdiag::analyzers
