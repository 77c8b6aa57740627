// Ranks that train on the same batches: the `batch` fingerprints of the training loader's
// `loader` records (a sample of each batch's bytes), compared across ranks step by step.
// A DataLoader over the whole dataset on every rank (no DistributedSampler, or shuffle=True
// with one seed everywhere) feeds every rank the same batches in the same order; a split
// dataset never does, by chance, twice. shard-overlap reports it where no rank described a
// sampler (a DistributedSampler's shards are compared exactly from its `sampler` records).
//
// Input, per rank and step, the first `loader` record carrying `batch` (the training
// loader's; a zipped companion's record carries none):
//   {"type":"loader","step":3,"wait":1200000,"samples":32,"batch":"9f3c.."}
// A step is compared once every rank delivered it, or kLateSteps later among the ranks that
// did (two or more). A rank "shares" a step when another rank's batch fingerprint equals its own.
// The verdict: at least kMinSharedSteps compared steps, and ranks sharing at least half of them
// whose own batches change from step to step (a constant batch — a synthetic benchmark's
// torch.ones — is not data that a sampler would split). Ranks that must train on the same
// batches (tensor-parallel peers, common/data_replicas.h) share them by design: a batch
// counts as shared only when ranks of two data replicas hold it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "trace/json_value.h"

namespace dsdiag::analyzers {

inline constexpr int64_t kMinSharedSteps = 2;
inline constexpr int64_t kLateSteps = 64;  // a step waits this long for its last rank
// The shard-overlap finding's evidence `basis` when it comes from this rule (what the
// follow-on pass looks for).
inline constexpr std::string_view kIdenticalBatchesBasis = "identical batches";

struct IdenticalBatchesVerdict {
  std::vector<int> ranks;  // the ranks that trained on another rank's batches
  int64_t first_step = 0;  // the first step at which they did
  int64_t shared_steps = 0;
  int64_t compared_steps = 0;
  trace::JsonValue evidence = trace::JsonValue::Object();
};

class IdenticalBatches {
 public:
  explicit IdenticalBatches(size_t ranks_expected) : ranks_expected_(ranks_expected) {}
  // The data replica of a rank (its lowest same-data peer); unset: each rank its own.
  void SetReplicaOf(std::function<int(int)> replica_of) { replica_of_ = std::move(replica_of); }

  void Add(int rank, int64_t step, uint64_t batch);
  // Compares the steps up to `step` that every rank delivered, and frees them.
  void StepDone(int64_t step);
  // Compares what is left; the verdict when the rule holds.
  std::optional<IdenticalBatchesVerdict> Finish();

 private:
  struct RankStats {
    int64_t shared = 0;
    int64_t first_shared = -1;
    uint64_t last = 0;
    bool varies = false;  // its batches changed from one step to another
  };
  void Compare(int64_t step, const std::map<int, uint64_t>& batches);

  size_t ranks_expected_;
  std::function<int(int)> replica_of_;
  std::map<int64_t, std::map<int, uint64_t>> pending_;  // step -> rank -> batch
  std::map<int, RankStats> ranks_;
  int64_t compared_ = 0;
};

}  // namespace dsdiag::analyzers
