// Gradient arithmetic the training step needs besides the probes: the largest magnitude
// (the simulated fp16 overflow check), the global norm, scaling and clipping.
// (The `grad` record itself — missing / non-finite gradients — is the GradientProbe's.)
#pragma once

#include <torch/torch.h>

#include <vector>

namespace dsdiag::trainer {

// Largest |g| over the defined gradients; inf or NaN when some gradient holds one.
double MaxAbsGrad(const std::vector<torch::Tensor>& params);
// Global L2 norm of the defined gradients.
double GradNorm(const std::vector<torch::Tensor>& params);
// Multiplies every defined gradient by `factor`.
void ScaleGrads(const std::vector<torch::Tensor>& params, double factor);
// Scales the gradients so that their global norm is at most `max_norm`; returns the norm
// before clipping (what torch.nn.utils.clip_grad_norm_ returns).
double ClipGradNorm(const std::vector<torch::Tensor>& params, double max_norm);

}  // namespace dsdiag::trainer
