// Faults: the `--inject` plan as seen by one rank — each question the training loop asks
// ("do I skip the shared expert?", "do I crash at this step?") answered for this rank.
//
// Injection lives in the trainer only and reproduces each fault the way it happens in
// real jobs; the probes never see this object. A spec without `rank` targets every rank;
// a step-keyed spec without `step` fires at step 0. Torch-free.
#pragma once

#include <cstdint>
#include <utility>

#include "inject/inject_spec.h"

namespace dsdiag::trainer {

class Faults {
 public:
  Faults() = default;
  Faults(inject::InjectPlan plan, int rank) : plan_(std::move(plan)), rank_(rank) {}

  bool empty() const { return plan_.empty(); }

  // Model and gradients.
  bool skip_shared_expert() const { return Has(inject::Kind::kUnusedParam); }
  bool alter_grad_at(int64_t step) const { return AtStep(inject::Kind::kGradDesync, step); }
  bool no_broadcast() const { return plan_.Find(inject::Kind::kNoBroadcast) != nullptr; }
  bool overflow_at(int64_t step) const { return AtStep(inject::Kind::kOverflow, step); }
  bool collective_mismatch_at(int64_t step) const {
    return AtStep(inject::Kind::kCollectiveMismatch, step);
  }

  // Randomness and data.
  bool rng_collision() const { return plan_.Find(inject::Kind::kRngCollision) != nullptr; }
  bool sampler_seed() const { return Has(inject::Kind::kSamplerSeed); }
  bool no_set_epoch() const { return plan_.Find(inject::Kind::kNoSetEpoch) != nullptr; }
  int64_t slow_loader_ms() const { return Ms(inject::Kind::kSlowLoader); }

  // Mixed precision.
  bool scaler_desync() const { return Has(inject::Kind::kScalerDesync); }
  bool clip_before_unscale() const {
    return plan_.Find(inject::Kind::kClipBeforeUnscale) != nullptr;
  }

  // Checkpoints.
  bool ckpt_all_ranks() const { return plan_.Find(inject::Kind::kCkptAllRanks) != nullptr; }
  bool ckpt_stale() const { return Has(inject::Kind::kCkptStale); }

  // Time and liveness.
  int64_t straggler_ms() const { return Ms(inject::Kind::kStraggler); }
  int64_t clock_skew_ns() const { return Ms(inject::Kind::kClockSkew) * 1000000; }
  bool hang_at(int64_t step) const { return AtStep(inject::Kind::kHang, step); }
  bool crash_at(int64_t step) const { return AtStep(inject::Kind::kCrash, step); }

 private:
  bool Has(inject::Kind kind) const { return plan_.FindFor(kind, rank_) != nullptr; }
  bool AtStep(inject::Kind kind, int64_t step) const;
  int64_t Ms(inject::Kind kind) const;

  inject::InjectPlan plan_;
  int rank_ = 0;
};

}  // namespace dsdiag::trainer
