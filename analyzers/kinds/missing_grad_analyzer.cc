// missing-grad: parameters that got no gradient on some ranks (or on every rank).
//
// Input: each rank's `params` table and its `grad` records, written after backward and
// before the sync:
//   {"type":"grad","step":3,"norm":1.7,"n_missing":2,"missing":[14,15]}
// `missing` is written when the set changes, so each rank's current set carries over the
// steps that omit it. At every step the ranks' sets are compared per parameter:
//  - missing on some ranks but not others: error. Real DDP hangs or raises "Expected to
//    have finished reduction in the prior iteration" here; a trainer that zero-fills
//    (find_unused_parameters=True) trains on, but the ranks did different work.
//  - missing on every rank: info. A truly unused parameter (or an expert nobody routed to).
// Parameters with the same ranks, first step and step count are one finding (a skipped
// submodule is one cause); `subject` is the first of them in table order.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/rank_slots.h"
#include "trace/record_types.h"
#include "trace/records/grad_record.h"
#include "trace/records/params_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace {

using trace::JsonValue;

// How one parameter went without gradient, accumulated over the steps.
struct Absence {
  int64_t first_step = -1;
  int64_t last_step = -1;
  int64_t steps = 0;
  std::vector<int> ranks;            // ranks missing it, over all affected steps
  std::vector<int> first_with_grad;  // ranks that had it at the first affected step
};

JsonValue IntArray(const std::vector<int>& v) {
  JsonValue a = JsonValue::Array();
  for (int x : v) a.Push(x);
  return a;
}

class MissingGradAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kMissingGrad; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kParams, trace::rec::kGradient};
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type_id() == trace::rec_id::kParams) {
      if (!table_) table_ = records::ParamTable::Read(r);
      return;
    }
    if (r.type_id() != trace::rec_id::kGradient) return;
    auto& current = CurrentSet(rank.rank);
    // has_missing() answers from the record's member list: most `grad` records lack it.
    const records::GradView grad(r);
    std::vector<int64_t> read;
    if (grad.has_missing() && grad.missing(&read)) {
      std::vector<int> listed(read.begin(), read.end());
      std::sort(listed.begin(), listed.end());
      current = std::make_shared<const std::vector<int>>(std::move(listed));
    } else if (!current) {
      current = std::make_shared<const std::vector<int>>();
    }
    pending_[r.step()].Set(rank.rank, current);
  }

  void OnStepDone(int64_t step) override {
    auto it = pending_.find(step);
    if (it == pending_.end()) return;
    Compare(step, it->second);
    pending_.erase(it);
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    // Steps still pending (per-rank fallback of the driver) are compared in order.
    for (auto& [step, sets] : pending_) Compare(step, sets);
    pending_.clear();
    Report(partial_, Severity::kError, findings);
    Report(everywhere_, Severity::kInfo, findings);
  }

 private:
  using MissingSet = std::shared_ptr<const std::vector<int>>;
  using RankSets = RankSlots<MissingSet>;

  // The rank's current set (null before its first grad record): a slot per rank number,
  // not a map, so that the record of a step costs no search.
  MissingSet& CurrentSet(int rank) {
    const size_t at = static_cast<size_t>(std::max(rank, 0));
    if (at >= current_.size()) current_.resize(at + 1);
    return current_[at];
  }

  void Compare(int64_t step, const RankSets& sets) {
    if (sets.empty()) return;
    std::map<int, std::vector<int>> ranks_missing;  // param -> ranks
    for (const auto& [rank, set] : sets)
      for (int p : *set) ranks_missing[p].push_back(rank);
    for (auto& [param, ranks] : ranks_missing) {
      const bool everywhere = ranks.size() == sets.size();
      if (!everywhere && sets.size() < 2) continue;
      Absence& a = (everywhere ? everywhere_ : partial_)[param];
      if (a.first_step < 0) {
        a.first_step = step;
        for (const auto& [rank, set] : sets)
          if (!std::binary_search(set->begin(), set->end(), param))
            a.first_with_grad.push_back(rank);
      }
      a.last_step = step;
      ++a.steps;
      for (int r : ranks)
        if (std::find(a.ranks.begin(), a.ranks.end(), r) == a.ranks.end()) a.ranks.push_back(r);
    }
  }

  std::string Name(int param) const {
    return table_ ? table_->ParamName(param) : "param #" + std::to_string(param);
  }

  void Report(std::map<int, Absence>& absences, Severity severity,
              std::vector<Finding>* findings) const {
    // Group parameters that went missing together.
    using Key = std::tuple<std::vector<int>, int64_t, int64_t>;
    std::map<Key, std::vector<int>> groups;
    for (auto& [param, a] : absences) {
      NormalizeRanks(&a.ranks);
      groups[{a.ranks, a.first_step, a.steps}].push_back(param);
    }
    for (const auto& [key, params] : groups)
      findings->push_back(MakeFinding(absences.at(params.front()), params, severity));
  }

  Finding MakeFinding(const Absence& a, const std::vector<int>& params, Severity severity) const {
    Finding f;
    f.kind = std::string(kind::kMissingGrad);
    f.severity = severity;
    f.ranks = a.ranks;
    f.step = a.first_step;
    f.subject = Name(params.front());
    const std::string more =
        params.size() > 1 ? " (+" + std::to_string(params.size() - 1) + " more)" : "";
    const std::string steps = std::to_string(a.steps) + (a.steps == 1 ? " step" : " steps");
    if (severity == Severity::kError) {
      f.summary = *f.subject + more + " has no gradient on " +
                  (a.ranks.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(a.ranks) +
                  " but has one on the others, from step " + std::to_string(a.first_step) + " (" +
                  steps + ")";
    } else {
      f.summary = *f.subject + more + " got no gradient on any rank in " + steps + " from step " +
                  std::to_string(a.first_step);
    }
    JsonValue names = JsonValue::Array();
    for (int p : params) names.Push(Name(p));
    f.evidence.Set("params", std::move(names));
    f.evidence.Set("first_step", a.first_step);
    f.evidence.Set("last_step", a.last_step);
    f.evidence.Set("steps_affected", a.steps);
    f.evidence.Set("ranks_without_grad", IntArray(a.ranks));
    if (severity == Severity::kError)
      f.evidence.Set("ranks_with_grad_at_first_step", IntArray(a.first_with_grad));
    f.hint = Hint(*f.subject, severity);
    return f;
  }

  static std::string Hint(const std::string& param, Severity severity) {
    const bool expert = param.find("expert") != std::string::npos;
    if (severity == Severity::kError) {
      std::string h =
          "A parameter without gradient on some ranks makes DDP hang or raise \"Expected to "
          "have finished reduction\". Find the branch those ranks skip (a submodule called "
          "conditionally, a rank-dependent code path); if the skip is legitimate, use "
          "find_unused_parameters=True (or zero-fill the missing gradients before the "
          "allreduce) so every rank reduces the same buckets.";
      if (expert)
        h += " For MoE experts this is routing: an expert that got no token on a rank has no "
             "gradient there; check the router's load balance and capacity.";
      return h;
    }
    return expert ? "No rank routed a token to this expert in these steps: check the router's "
                    "load-balancing loss; an expert that is never used wastes memory."
                  : "This parameter never takes part in the loss: remove it, or freeze it "
                    "(requires_grad=false) so that DDP need not search for unused parameters.";
  }

  std::optional<records::ParamTable> table_;
  std::vector<MissingSet> current_;      // by rank number: its current set
  std::map<int64_t, RankSets> pending_;  // step -> the sets the ranks reported
  std::map<int, Absence> partial_;       // param -> absence on some ranks
  std::map<int, Absence> everywhere_;    // param -> absence on all ranks
};

}  // namespace

std::unique_ptr<Analyzer> CreateMissingGradAnalyzer() {
  return std::make_unique<MissingGradAnalyzer>();
}

}  // namespace dsdiag::analyzers
