// Mixed precision: `--amp bf16` autocasts the forward pass; `--amp fp16` runs a dynamic
// loss scaler with torch.cuda.amp.GradScaler's semantics.
//
// LibTorch 1.13's CPU autocast only knows bf16, so on CPU the fp16 mode keeps fp32
// arithmetic and simulates what fp16 gradients would do: a scaled gradient that is
// non-finite or beyond fp16's largest value (65504) counts as an overflow. The scaler
// logic is the real one: initial scale 2^16, x2 after 2000 clean steps, x0.5 and skip the
// step on overflow, the found-inf flag reduced across ranks (MAX) so that every rank
// skips the same steps, gradients unscaled before clipping.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace dsdiag::trainer {

// Autocast to bf16 on `device` for the scope's lifetime (forward pass only, as PyTorch
// recommends); the cast cache is cleared on exit. Does nothing when not enabled.
class AutocastScope {
 public:
  AutocastScope(bool enabled, torch::DeviceType device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool enabled_;
  torch::DeviceType device_;
  bool was_enabled_ = false;
  torch::ScalarType was_dtype_ = torch::kBFloat16;
};

class LossScaler {
 public:
  static constexpr double kInitScale = 65536.0;
  static constexpr double kGrowthFactor = 2.0;
  static constexpr double kBackoffFactor = 0.5;
  static constexpr int64_t kGrowthInterval = 2000;
  static constexpr double kFp16Max = 65504.0;

  explicit LossScaler(bool enabled) : enabled_(enabled) {}

  bool enabled() const { return enabled_; }
  double scale() const { return enabled_ ? scale_ : 1.0; }
  int64_t growth_tracker() const { return growth_tracker_; }
  void Restore(double scale, int64_t growth_tracker) {
    scale_ = scale;
    growth_tracker_ = growth_tracker;
  }

  // Would fp16 gradients have overflowed, given the largest scaled magnitude?
  static bool Overflowed(double max_abs_scaled);

  // Applies a step's outcome to the scale; returns "backoff", "growth" or nullptr.
  const char* Update(bool found_inf);

 private:
  bool enabled_;
  double scale_ = kInitScale;
  int64_t growth_tracker_ = 0;  // clean steps since the last change
};

}  // namespace dsdiag::trainer
