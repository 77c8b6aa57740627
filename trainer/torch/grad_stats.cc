#include "trainer/torch/grad_stats.h"

#include <cmath>

namespace dsdiag::trainer {

double MaxAbsGrad(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  double result = 0;
  for (const torch::Tensor& p : params) {
    const torch::Tensor& g = p.grad();
    if (!g.defined() || g.numel() == 0) continue;
    const double m = g.abs().max().item<double>();
    if (!(m <= result)) result = m;  // also lets NaN through
    if (std::isnan(result)) break;
  }
  return result;
}

double GradNorm(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  double sum_sq = 0;
  for (const torch::Tensor& p : params) {
    if (!p.grad().defined()) continue;
    const double n = p.grad().to(torch::kFloat).norm().item<double>();
    sum_sq += n * n;
  }
  return std::sqrt(sum_sq);
}

void ScaleGrads(const std::vector<torch::Tensor>& params, double factor) {
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& p : params) {
    if (p.grad().defined()) p.mutable_grad().mul_(factor);
  }
}

double ClipGradNorm(const std::vector<torch::Tensor>& params, double max_norm) {
  const double norm = GradNorm(params);
  // torch.nn.utils.clip_grad_norm_'s rule: coefficient max / (norm + 1e-6), capped at 1.
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1.0) ScaleGrads(params, coef);
  return norm;
}

}  // namespace dsdiag::trainer
