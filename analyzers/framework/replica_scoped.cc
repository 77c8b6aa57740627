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
    if (placed_.count(rank)) return;
    placed_[rank] = nullptr;
    const auto table = trace::records::ParamTable::Read(r);
    if (!table || table->replicas.empty() ||
        std::find(table->replicas.begin(), table->replicas.end(), rank) == table->replicas.end())
      return;  // none declared, or one that leaves the rank out: the run's set
    std::unique_ptr<Analyzer>& analyzer = sets_[table->replicas];
    if (!analyzer) {
      analyzer = make_();
      if (run_) analyzer->Begin(*run_);
    }
    placed_[rank] = analyzer.get();
  }

  Analyzer* Of(int rank) const {
    auto it = placed_.find(rank);
    return it != placed_.end() && it->second ? it->second : run_wide_.get();
  }

  AnalyzerFactory make_;
  const RunContext* run_ = nullptr;
  std::unique_ptr<Analyzer> run_wide_;                    // the ranks that declared no set
  std::map<ReplicaSet, std::unique_ptr<Analyzer>> sets_;  // by set, lowest ranks first
  std::map<int, Analyzer*> placed_;                       // rank -> its set's (null: run's)
};

}  // namespace

std::unique_ptr<Analyzer> ReplicaScoped(AnalyzerFactory make) {
  return std::make_unique<ReplicaScopedAnalyzer>(std::move(make));
}

}  // namespace dsdiag::analyzers
