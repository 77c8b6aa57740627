#include "trainer/torch/mixed_precision.h"

#include <ATen/autocast_mode.h>

#include <cmath>

namespace dsdiag::trainer {

AutocastScope::AutocastScope(bool enabled, torch::DeviceType device)
    : enabled_(enabled), device_(device) {
  if (!enabled_) return;
  if (device_ == torch::kCPU) {
    was_enabled_ = at::autocast::is_cpu_enabled();
    was_dtype_ = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
  } else {
    was_enabled_ = at::autocast::is_enabled();
    was_dtype_ = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
  }
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!enabled_) return;
  // Leaving the outermost autocast region drops the cached casts of the weights, which
  // change at every optimizer step.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  if (device_ == torch::kCPU) {
    at::autocast::set_cpu_enabled(was_enabled_);
    at::autocast::set_autocast_cpu_dtype(was_dtype_);
  } else {
    at::autocast::set_enabled(was_enabled_);
    at::autocast::set_autocast_gpu_dtype(was_dtype_);
  }
}

bool LossScaler::Overflowed(double max_abs_scaled) {
  return !std::isfinite(max_abs_scaled) || max_abs_scaled > kFp16Max;
}

const char* LossScaler::Update(bool found_inf) {
  if (!enabled_) return nullptr;
  if (found_inf) {
    scale_ *= kBackoffFactor;
    growth_tracker_ = 0;
    return "backoff";
  }
  if (++growth_tracker_ == kGrowthInterval) {
    scale_ *= kGrowthFactor;
    growth_tracker_ = 0;
    return "growth";
  }
  return nullptr;
}

}  // namespace dsdiag::trainer
