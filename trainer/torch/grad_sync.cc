#include "trainer/torch/grad_sync.h"

#include "trainer/torch/comm.h"

namespace dsdiag::trainer {

ModelParams CollectParams(torch::nn::Module& model) {
  ModelParams table;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    table.names.push_back(item.key());
    table.tensors.push_back(item.value());
  }
  return table;
}

void BroadcastModuleState(Comm& comm, torch::nn::Module& model) {
  std::vector<torch::Tensor> state = model.parameters();
  for (const torch::Tensor& b : model.buffers()) state.push_back(b);
  if (state.empty()) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> flat_parts;
  for (const torch::Tensor& t : state)
    flat_parts.push_back(t.detach().reshape({-1}).to(torch::kFloat));
  torch::Tensor flat = torch::cat(flat_parts);
  comm.Broadcast(flat, /*root=*/0, "init-broadcast");
  int64_t offset = 0;
  for (torch::Tensor& t : state) {
    const int64_t n = t.numel();
    t.copy_(flat.narrow(0, offset, n).view_as(t));
    offset += n;
  }
}

GradSync::GradSync(const ModelParams& params, int64_t bucket_cap_bytes) : params_(params) {
  std::vector<int> bucket;
  int64_t bytes = 0;
  for (int i = static_cast<int>(params.size()) - 1; i >= 0; --i) {
    const torch::Tensor& p = params.tensors[i];
    const int64_t size = p.numel() * static_cast<int64_t>(p.element_size());
    if (!bucket.empty() && bytes + size > bucket_cap_bytes) {
      buckets_.push_back(std::move(bucket));
      bucket.clear();
      bytes = 0;
    }
    bucket.push_back(i);
    bytes += size;
  }
  if (!bucket.empty()) buckets_.push_back(std::move(bucket));
}

void GradSync::AllReduceMean(Comm& comm, int64_t mismatch_extra) {
  torch::NoGradGuard no_grad;
  const double world = comm.world_size();
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const std::vector<int>& bucket = buckets_[b];
    std::vector<torch::Tensor> parts;
    parts.reserve(bucket.size() + 1);
    for (int i : bucket) {
      const torch::Tensor& p = params_.tensors[i];
      const torch::Tensor& g = p.grad();
      parts.push_back(g.defined() ? g.reshape({-1}).to(torch::kFloat)
                                  : torch::zeros({p.numel()}, p.options().dtype(torch::kFloat)));
    }
    if (b == 0 && mismatch_extra > 0) {
      parts.push_back(torch::zeros({mismatch_extra}, parts[0].options()));
    }
    torch::Tensor flat = torch::cat(parts);
    comm.AllReduce(flat, c10d::ReduceOp::SUM, "grad-bucket-" + std::to_string(b));
    flat.div_(world);
    int64_t offset = 0;
    for (int i : bucket) {
      const torch::Tensor& p = params_.tensors[i];
      torch::Tensor averaged = flat.narrow(0, offset, p.numel()).view_as(p).to(p.scalar_type());
      offset += p.numel();
      if (p.grad().defined()) {
        p.mutable_grad().copy_(averaged);
      } else {
        p.mutable_grad() = averaged.clone();
      }
    }
  }
}

}  // namespace dsdiag::trainer
