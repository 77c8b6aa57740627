#include "analyzers/framework/replica_scoped.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trace/record_types.h"
#include "trace/records/params_record.h"

namespace dsdiag::analyzers {
namespace {

using ReplicaSet = std::vector<int>;  // ascending global ranks; empty: the run's ranks

class ReplicaScopedAnalyzer : public Analyzer {
 public:
  explicit ReplicaScopedAnalyzer(AnalyzerFactory make) : make_(std::move(make)) {
    run_wide_ = make_();
  }

  std::string_view name() const override { return run_wide_->name(); }
  bool wants_records() const override { return run_wide_->wants_records(); }
  std::vector<std::string_view> record_types() const override {
    std::vector<std::string_view> types = run_wide_->record_types();
    if (!types.empty() && std::find(types.begin(), types.end(), trace::rec::kParams) == types.end())
      types.push_back(trace::rec::kParams);
    return types;
  }

  void Begin(const RunContext& run) override {
    run_ = &run;
    run_wide_->Begin(run);
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type_id() == trace::rec_id::kParams) Place(rank.rank, r);
    Of(rank.rank)->OnRecord(rank, r);
  }
  void OnRankEnd(const RankInfo& rank, const RankEnd& end) override {
    Of(rank.rank)->OnRankEnd(rank, end);
  }
  void OnStepDone(int64_t step) override {
    run_wide_->OnStepDone(step);
    for (auto& [set, analyzer] : sets_) analyzer->OnStepDone(step);
  }

  void Finish(const RunContext& run, std::vector<Finding>* findings) override {
    run_wide_->Finish(run, findings);
    for (auto& [set, analyzer] : sets_) {
      const size_t first = findings->size();
      analyzer->Finish(run, findings);
      for (size_t i = first; i < findings->size(); ++i) {
        trace::JsonValue ranks = trace::JsonValue::Array();
        for (int r : set) ranks.Push(static_cast<int64_t>(r));
        (*findings)[i].evidence.Set("replicas", std::move(ranks));
      }
    }
  }

 private:
  // The rank's first `params` record decides its set (a later one, a second model's table
  // in a job that rebuilt its model, does not move it).
  void Place(int rank, const trace::Record& r) {
    if (rank < 0) return;
    if (static_cast<size_t>(rank) >= placed_.size()) {
      placed_.resize(rank + 1, false);
      set_of_.resize(rank + 1, nullptr);
    }
    if (placed_[rank]) return;
    placed_[rank] = true;
    const auto table = trace::records::ParamTable::Read(r);
    if (!table || table->replicas.empty() ||
        std::find(table->replicas.begin(), table->replicas.end(), rank) == table->replicas.end())
      return;  // none declared, or one that leaves the rank out: the run's set
    std::unique_ptr<Analyzer>& analyzer = sets_[table->replicas];
    if (!analyzer) {
      analyzer = make_();
      if (run_) analyzer->Begin(*run_);
    }
    set_of_[rank] = analyzer.get();
  }

  Analyzer* Of(int rank) const {
    const bool known = rank >= 0 && static_cast<size_t>(rank) < set_of_.size();
    return known && set_of_[rank] ? set_of_[rank] : run_wide_.get();
  }

  AnalyzerFactory make_;
  const RunContext* run_ = nullptr;
  std::unique_ptr<Analyzer> run_wide_;                    // the ranks that declared no set
  std::map<ReplicaSet, std::unique_ptr<Analyzer>> sets_;  // by set, lowest ranks first
  // By rank (vectors: every record of these kinds is routed through them): whether its
  // params record was read, and its set's analyzer (null: the run's).
  std::vector<bool> placed_;
  std::vector<Analyzer*> set_of_;
};

}  // namespace

std::unique_ptr<Analyzer> ReplicaScoped(AnalyzerFactory make) {
  return std::make_unique<ReplicaScopedAnalyzer>(std::move(make));
}

}  // namespace dsdiag::analyzers
