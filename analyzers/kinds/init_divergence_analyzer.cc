// init-divergence: ranks start from different initial parameters.
//
// Input: the `fp` records with what "param", why "init", written after the initial
// broadcast (DDP broadcasts rank 0's parameters and buffers in its constructor):
//   {"type":"fp","step":0,"what":"param","why":"init","gran":"bucket","h":["..",".."]}
// Replicas that differ here never were equal: a forgotten broadcast, or per-rank seeds
// before the model was built.
//
// Who is named: not a vote. Rank 0 is the broadcast's source by design, so the ranks whose
// fingerprints differ from rank 0's are the ones the broadcast did not reach, at any world
// size. Without rank 0's fingerprints the split verdict decides (split_verdict.h). In a
// replica set a job declared (DDP over a data-parallel sub-group: the analyzer runs once
// per set, replica_scoped.h) the source is the set's lowest rank, DDP's group rank 0.
#include <memory>
#include <string>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/fingerprints.h"
#include "analyzers/kinds/common/split_verdict.h"
#include "trace/record_types.h"
#include "trace/records/fp_record.h"
#include "trace/records/params_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace {

using trace::JsonValue;

constexpr size_t kMaxTensorsListed = 10;

class InitDivergenceAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kInitDivergence; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kParams, trace::rec::kFingerprint};
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type_id() == trace::rec_id::kParams) {
      if (!table_) table_ = records::ParamTable::Read(r);
      return;
    }
    const records::FpView fp(r);
    if (r.type_id() != trace::rec_id::kFingerprint || fp.what() != records::fp_what::kParam ||
        fp.why() != records::fp_why::kInit || init_.count(rank.rank))
      return;
    if (auto fp = ReadFingerprint(r)) init_.Set(rank.rank, std::move(*fp));
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    if (init_.size() < 2) return;
    const auto diffs = DiffByIndex(init_);
    if (diffs.empty()) return;
    findings->push_back(MakeFinding(diffs));
  }

 private:
  // The ranks whose initial parameters are not rank 0's; the split verdict without rank 0.
  std::vector<int> Named(const std::vector<RankGroup<uint64_t>>& groups, bool* from_source) const {
    const int source_rank = SourceRank();
    *from_source = init_.count(source_rank) > 0;
    if (!*from_source) return JudgeSplit(groups).named;
    std::vector<int> named;
    const FingerprintRecord& source = init_.at(source_rank);
    for (const auto& [rank, fp] : init_)
      if (rank != source_rank && fp.hashes != source.hashes) named.push_back(rank);
    return named;
  }

  // The broadcast's source: rank 0, or the declared replica set's group rank 0.
  int SourceRank() const {
    return table_ && !table_->replicas.empty() ? table_->replicas.front() : 0;
  }

  std::string Describe(bool per_param, int index) const {
    if (table_) return table_->Describe(per_param, index);
    return (per_param ? "param #" : "bucket ") + std::to_string(index);
  }

  Finding MakeFinding(const std::vector<IndexDivergence>& diffs) const {
    const FingerprintRecord& any = init_.begin()->second;
    const auto groups = GroupByVector(init_);
    bool from_source = false;
    Finding f;
    f.kind = std::string(kind::kInitDivergence);
    f.severity = Severity::kError;
    f.ranks = Named(groups, &from_source);
    f.step = 0;
    f.subject = Describe(any.per_param, diffs.front().index);
    const std::string n = std::to_string(diffs.size()) + " of " +
                          std::to_string(any.hashes.size()) +
                          (any.per_param ? " parameters" : " buckets");
    f.summary =
        "parameters differ across ranks before the first update: " + n + " differ, first " +
        *f.subject + "; " + std::to_string(groups.size()) + " distinct replicas" +
        (from_source ? "; " + std::string(f.ranks.size() == 1 ? "rank " : "ranks ") +
                           FormatRankRanges(f.ranks) + " did not get rank " +
                           std::to_string(SourceRank()) + "'s parameters (the broadcast's source)"
                     : NoMajorityText(groups, JudgeSplit(groups)));
    f.hint =
        "Replicas must start identical: broadcast parameters and buffers from rank 0 after "
        "building the model (DDP does this in its constructor), and seed the model-init RNG "
        "with the same seed on every rank (per-rank seeds only for dropout and data).";
    JsonValue tensors = JsonValue::Array();
    for (size_t i = 0; i < diffs.size() && i < kMaxTensorsListed; ++i)
      tensors.Push(Describe(any.per_param, diffs[i].index));
    f.evidence.Set("fingerprint", records::fp_why::kInit);
    f.evidence.Set("granularity", any.per_param ? "param" : "bucket");
    f.evidence.Set("tensors_differing", static_cast<int64_t>(diffs.size()));
    f.evidence.Set("tensors", std::move(tensors));
    f.evidence.Set("basis", from_source ? "differs from rank " + std::to_string(SourceRank()) +
                                              " (the broadcast source)"
                            : JudgeSplit(groups).majority ? "majority"
                                                          : "no majority");
    f.evidence.Set("groups", GroupsJson(groups));
    return f;
  }

  std::optional<records::ParamTable> table_;
  RankFingerprints init_;  // rank -> its first "init" fingerprint
};

}  // namespace

std::unique_ptr<Analyzer> CreateInitDivergenceAnalyzer() {
  return std::make_unique<InitDivergenceAnalyzer>();
}

}  // namespace dsdiag::analyzers
