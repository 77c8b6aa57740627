// scaler-desync: ranks disagree on the loss scaler's decision at a step.
//
// Input: the `scaler` records (see scaler_overflow_analyzer.cc). The found-inf flag is
// reduced across ranks (MAX) precisely so that every rank skips the same steps and keeps the
// same scale; a rank that decides on its local flag (a missing reduction, a scaler per rank
// with its own state, a restored scale on one rank only) steps when the others skip, and the
// replicas diverge from there. At each step the ranks are grouped by (inf_global, skipped,
// scale); the first step with more than one group is one error naming the odd ranks, with
// the number of steps that disagreed. A rank whose own `skipped` contradicts its
// `inf_global` ignored the reduced flag; the evidence says so.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/rank_groups.h"
#include "trace/record_types.h"

namespace dsdiag::analyzers {
namespace {

using trace::JsonValue;

struct Decision {
  bool inf_global = false;
  bool skipped = false;
  double scale = 1;
  bool operator==(const Decision& o) const {
    return inf_global == o.inf_global && skipped == o.skipped && scale == o.scale;
  }
};

JsonValue IntArray(const std::vector<int>& v) {
  JsonValue a = JsonValue::Array();
  for (int x : v) a.Push(x);
  return a;
}

class ScalerDesyncAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kScalerDesync; }
  std::vector<std::string_view> record_types() const override { return {trace::rec::kScaler}; }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type_id() != trace::rec_id::kScaler) return;
    Decision d;
    d.inf_global = r.Bool("inf_global").value_or(false);
    d.skipped = r.Bool("skipped").value_or(false);
    d.scale = r.Double("scale").value_or(1);
    pending_[r.step()][rank.rank] = d;
  }

  void OnStepDone(int64_t step) override {
    while (!pending_.empty() && pending_.begin()->first <= step) {
      Compare(pending_.begin()->first, pending_.begin()->second);
      pending_.erase(pending_.begin());
    }
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    OnStepDone(INT64_MAX);
    if (finding_) {
      finding_->evidence.Set("steps_disagreeing", steps_disagreeing_);
      finding_->evidence.Set("last_step_disagreeing", last_step_);
      findings->push_back(std::move(*finding_));
    }
  }

 private:
  void Compare(int64_t step, const std::map<int, Decision>& by_rank) {
    if (by_rank.size() < 2) return;
    std::vector<std::pair<int, Decision>> values(by_rank.begin(), by_rank.end());
    const auto groups = GroupRanks(values);
    if (groups.size() < 2) return;
    ++steps_disagreeing_;
    last_step_ = step;
    if (!finding_) finding_ = MakeFinding(step, by_rank, groups);
  }

  static std::string Differs(const std::vector<RankGroup<Decision>>& groups) {
    const Decision& ref = groups.front().value;
    for (size_t i = 1; i < groups.size(); ++i) {
      if (groups[i].value.skipped != ref.skipped) return "skipped";
    }
    for (size_t i = 1; i < groups.size(); ++i) {
      if (groups[i].value.inf_global != ref.inf_global) return "inf_global";
    }
    return "scale";
  }

  Finding MakeFinding(int64_t step, const std::map<int, Decision>& by_rank,
                      const std::vector<RankGroup<Decision>>& groups) const {
    Finding f;
    f.kind = std::string(kind::kScalerDesync);
    f.severity = Severity::kError;
    f.ranks = OddRanks(groups);
    f.step = step;
    const std::string field = Differs(groups);
    f.subject = field == "scale" ? "loss scale" : "found-inf";
    const std::string who = (f.ranks.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(f.ranks);
    if (field == "skipped") {
      f.summary = "ranks disagree on skipping step " + std::to_string(step) + ": " + who +
                  (groups[1].value.skipped ? " skipped it" : " stepped") + " while rank" +
                  (groups[0].ranks.size() == 1 ? " " : "s ") + FormatRankRanges(groups[0].ranks) +
                  (groups[0].value.skipped ? " skipped it" : " stepped") +
                  "; the replicas diverge from here";
    } else {
      f.summary = "ranks disagree on the loss scaler's " + field + " at step " +
                  std::to_string(step) + " (" + who + " differ); the replicas diverge from here";
    }
    f.hint =
        "Every rank must take the same scaler decision: all-reduce the found-inf flag (MAX) "
        "before deciding to skip, and keep one scaler state per run that is saved and restored "
        "on every rank. A rank that decides on its own overflow flag steps while the others "
        "skip.";
    JsonValue decisions = JsonValue::Array();
    for (const auto& g : groups) {
      JsonValue o = JsonValue::Object();
      o.Set("ranks", IntArray(g.ranks));
      o.Set("inf_global", g.value.inf_global);
      o.Set("skipped", g.value.skipped);
      o.Set("scale", g.value.scale);
      decisions.Push(std::move(o));
    }
    std::vector<int> ignored;  // skipped differs from the reduced flag
    for (const auto& [rank, d] : by_rank)
      if (d.skipped != d.inf_global) ignored.push_back(rank);
    f.evidence.Set("first_step", step);
    f.evidence.Set("differs", field);
    f.evidence.Set("groups", std::move(decisions));
    if (!ignored.empty()) f.evidence.Set("ranks_ignoring_reduced_flag", IntArray(ignored));
    return f;
  }

  std::map<int64_t, std::map<int, Decision>> pending_;  // step -> rank -> decision
  std::optional<Finding> finding_;
  int64_t steps_disagreeing_ = 0;
  int64_t last_step_ = -1;
};

}  // namespace

std::unique_ptr<Analyzer> CreateScalerDesyncAnalyzer() {
  return std::make_unique<ScalerDesyncAnalyzer>();
}

}  // namespace dsdiag::analyzers
