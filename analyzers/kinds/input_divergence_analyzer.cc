// input-divergence: ranks that must compute on the same batch — the tensor-parallel peers of
// one data-parallel replica, which each hold a slice of its layers — were fed different ones.
// Nothing fails: every peer computes its slice of another sample and the all-reduces combine
// them into silently wrong activations and gradients (a loader seeded or split by the global
// rank where the data-parallel rank was meant).
//
// Input: the training loader's `loader` records' `batch` fingerprints, one per rank and step
// (as shard-overlap reads them), and what says which ranks must agree (common/
// data_replicas.h: a device mesh's tensor-parallel dimension, or a group whose members sit at
// one position of their DDP replica sets):
//   {"type":"loader","step":3,"wait":1200000,"samples":32,"batch":"9f3c.."}
// Each step, once every rank delivered it, each set's members that hold a batch are
// compared. Who is named: the ranks outside the largest group of equal batches at the first
// step they differ; with no majority (two peers), every peer of the set. Error, one per set.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/data_replicas.h"
#include "analyzers/kinds/common/evidence_text.h"
#include "analyzers/kinds/common/fingerprints.h"
#include "analyzers/kinds/common/rank_groups.h"
#include "analyzers/kinds/common/split_verdict.h"
#include "trace/record_types.h"
#include "trace/records/loader_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace {

using trace::JsonValue;

struct Divergence {
  int64_t first_step = -1;
  int64_t steps_differing = 0;
  int64_t steps_compared = 0;
  std::vector<RankGroup<uint64_t>> first_groups;
};

class InputDivergenceAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kInputDivergence; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kLoader, trace::rec::kParams, trace::rec::kGroup, trace::rec::kMesh};
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type_id() != trace::rec_id::kLoader) return replicas_.Note(rank.rank, r);
    const auto batch = records::LoaderView(r).batch();
    if (batch && *batch != 0) pending_[r.step()].emplace(rank.rank, *batch);  // the first
  }

  void OnStepDone(int64_t step) override {
    for (auto it = pending_.begin(); it != pending_.end() && it->first <= step;
         it = pending_.erase(it))
      Compare(it->first, it->second);
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    for (const auto& [step, batches] : pending_) Compare(step, batches);
    pending_.clear();
    for (const auto& [set, d] : by_set_)
      if (d.steps_differing > 0) findings->push_back(MakeFinding(set, d));
  }

 private:
  void Compare(int64_t step, const std::map<int, uint64_t>& batches) {
    for (const std::vector<int>& set : replicas_.Sets()) {
      std::vector<std::pair<int, uint64_t>> values;
      for (int r : set)
        if (auto it = batches.find(r); it != batches.end()) values.emplace_back(r, it->second);
      if (values.size() < 2) continue;
      Divergence& d = by_set_[set];
      ++d.steps_compared;
      auto groups = GroupRanks(values);
      if (groups.size() < 2) continue;
      ++d.steps_differing;
      if (d.first_step < 0) {
        d.first_step = step;
        d.first_groups = std::move(groups);
      }
    }
  }

  static Finding MakeFinding(const std::vector<int>& set, const Divergence& d) {
    const SplitVerdict v = JudgeSplit(d.first_groups);
    Finding f;
    f.kind = std::string(kind::kInputDivergence);
    f.severity = Severity::kError;
    f.ranks = v.named;
    f.step = d.first_step;
    f.subject = "batches of ranks " + FormatRankRanges(set);
    const std::string counts = std::to_string(d.steps_differing) + " of " +
                               std::to_string(d.steps_compared) + " steps compared";
    f.summary = "ranks " + FormatRankRanges(set) +
                ", which compute one data-parallel replica together (tensor-parallel peers), "
                "were fed different batches from step " +
                std::to_string(d.first_step) + " (" + counts + ")" +
                (v.majority ? ": " + OnRanks(v.named) + (v.named.size() == 1 ? " was" : " were") +
                                  " fed another batch than the others"
                            : NoMajorityText(d.first_groups, v));
    JsonValue peers = JsonValue::Array();
    for (int r : set) peers.Push(static_cast<int64_t>(r));
    f.evidence.Set("peers", std::move(peers));
    f.evidence.Set("first_step", d.first_step);
    f.evidence.Set("steps_differing", d.steps_differing);
    f.evidence.Set("steps_compared", d.steps_compared);
    f.evidence.Set("basis", v.majority ? "majority" : "no majority");
    f.evidence.Set("majority", v.majority);
    f.evidence.Set("groups", GroupsJson(d.first_groups));
    f.hint =
        "Tensor-parallel peers split one replica's layers: each must see the replica's batch. "
        "Split and seed the data by the data-parallel rank, not the global one "
        "(DistributedSampler(dataset, num_replicas=dp_size, rank=dp_rank); torchtitan builds "
        "its loader from the mesh's data-parallel coordinate), or broadcast the batch over "
        "the tensor-parallel group.";
    return f;
  }

  DataReplicas replicas_;
  std::map<int64_t, std::map<int, uint64_t>> pending_;  // step -> rank -> batch
  std::map<std::vector<int>, Divergence> by_set_;
};

}  // namespace

std::unique_ptr<Analyzer> CreateInputDivergenceAnalyzer() {
  return std::make_unique<InputDivergenceAnalyzer>();
}

}  // namespace dsdiag::analyzers
