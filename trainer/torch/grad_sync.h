// Keeping the replicas identical: the initial broadcast of the model state from rank 0,
// and the bucketed gradient allreduce after every backward pass — what DDP does.
//
// Buckets follow DDP: parameters in reverse registration order (roughly the order their
// gradients become ready in backward), cut into buckets of about kBucketCapBytes. Each
// bucket is flattened, allreduced (SUM, tag "grad-bucket-<i>"), divided by the world size
// and copied back.
//
// Like DDP with find_unused_parameters=True, a parameter without a gradient on this rank
// (an expert no token was routed to, a skipped submodule) takes part as zeros, so every
// rank reduces the same buckets, and gets the averaged gradient back.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dsdiag::trainer {

class Comm;

// The model's parameters by index; the index is what trace records refer to.
struct ModelParams {
  std::vector<std::string> names;
  std::vector<torch::Tensor> tensors;
  size_t size() const { return tensors.size(); }
};

ModelParams CollectParams(torch::nn::Module& model);

// Parameters and buffers from rank 0 to all, as one flat broadcast ("init-broadcast").
void BroadcastModuleState(Comm& comm, torch::nn::Module& model);

class GradSync {
 public:
  static constexpr int64_t kBucketCapBytes = 64 << 10;

  explicit GradSync(const ModelParams& params, int64_t bucket_cap_bytes = kBucketCapBytes);

  // Parameter indices per bucket, in allreduce order.
  const std::vector<std::vector<int>>& buckets() const { return buckets_; }

  // Averages every gradient over the ranks. `mismatch_extra` > 0 appends that many
  // elements to the first bucket (fault injection `collective-mismatch`).
  void AllReduceMean(Comm& comm, int64_t mismatch_extra = 0);

 private:
  const ModelParams& params_;
  std::vector<std::vector<int>> buckets_;
};

}  // namespace dsdiag::trainer
