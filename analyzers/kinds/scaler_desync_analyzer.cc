// scaler-desync: ranks disagree on the loss scaler's decision at a step.
//
// Input: the `scaler` records (see scaler_overflow_analyzer.cc). The found-inf flag is
// reduced across ranks (MAX) precisely so that every rank skips the same steps and keeps the
// same scale; a rank that decides on its local flag (a missing reduction, a scaler per rank
// with its own state, a restored scale on one rank only) steps when the others skip, and the
// replicas diverge from there. At each step the ranks are grouped by (inf_global, skipped,
// scale); the first step with more than one group is one error, with the number of steps
// that disagreed. Who is named, evidence first, at any world size: the ranks whose own
// `skipped` contradicts their `inf_global` (they ignored the reduced flag); else the ranks
// whose `inf_global` is not the OR of every rank's `inf_local` (they did not take part in the
// reduction); else the split verdict (split_verdict.h: the odd ranks, or every rank of the
// split when there is no majority).
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/evidence_text.h"
#include "analyzers/kinds/common/rank_groups.h"
#include "analyzers/kinds/common/split_verdict.h"
#include "trace/record_types.h"
#include "trace/records/scaler_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace {

using trace::JsonValue;

struct Decision {
  bool inf_local = false;  // not compared: ranks may overflow alone, the reduction fixes that
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
    const records::ScalerView scaler(r);
    d.inf_local = scaler.inf_local().value_or(false);
    d.inf_global = scaler.inf_global().value_or(d.inf_local);
    d.skipped = scaler.skipped().value_or(false);
    d.scale = scaler.scale().value_or(1);
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

  // Evidence first: a rank that stepped against the reduced flag, or whose reduced flag is not
  // the OR of every rank's own; then the vote.
  static std::vector<int> Named(const std::map<int, Decision>& by_rank,
                                const std::vector<RankGroup<Decision>>& groups,
                                std::string* basis) {
    std::vector<int> ignored, unreduced;
    bool any_inf = false;
    for (const auto& [rank, d] : by_rank) any_inf = any_inf || d.inf_local;
    for (const auto& [rank, d] : by_rank) {
      if (d.skipped != d.inf_global) ignored.push_back(rank);
      if (d.inf_global != any_inf) unreduced.push_back(rank);
    }
    if (!ignored.empty() && ignored.size() < by_rank.size()) {
      *basis = "ignored the reduced found-inf flag";
      return ignored;
    }
    if (!unreduced.empty() && unreduced.size() < by_rank.size()) {
      *basis = "found-inf not reduced across ranks";
      return unreduced;
    }
    const SplitVerdict split = JudgeSplit(groups);
    *basis = split.majority ? "majority" : "no majority";
    return split.named;
  }

  Finding MakeFinding(int64_t step, const std::map<int, Decision>& by_rank,
                      const std::vector<RankGroup<Decision>>& groups) const {
    Finding f;
    f.kind = std::string(kind::kScalerDesync);
    f.severity = Severity::kError;
    std::string basis;
    f.ranks = Named(by_rank, groups, &basis);
    f.step = step;
    const std::string field = Differs(groups);
    f.subject = field == "scale" ? "loss scale" : "found-inf";
    const std::string who = (f.ranks.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(f.ranks);
    std::vector<int> others;
    for (const auto& [rank, d] : by_rank)
      if (!std::binary_search(f.ranks.begin(), f.ranks.end(), rank)) others.push_back(rank);
    auto did = [&](int rank) { return by_rank.at(rank).skipped ? " skipped it" : " stepped"; };
    if (field == "skipped" && !others.empty()) {
      f.summary = "ranks disagree on skipping step " + std::to_string(step) + ": " + who +
                  did(f.ranks.front()) + " while " + OnRanks(others) + did(others.front()) +
                  "; the replicas diverge from here";
    } else if (field == "skipped") {
      f.summary = "ranks disagree on skipping step " + std::to_string(step) + ": " +
                  NoMajorityClause(groups) + "; the replicas diverge from here";
    } else {
      const std::string whom = basis == "no majority" ? NoMajorityClause(groups) : who + " differ";
      f.summary = "ranks disagree on the loss scaler's " + field + " at step " +
                  std::to_string(step) + " (" + whom + "); the replicas diverge from here";
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
    f.evidence.Set("basis", basis);
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
