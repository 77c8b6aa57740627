#include "synth/schedule.h"

#include <algorithm>

namespace dsdiag::synth {

Schedule Schedule::Build(const TimeModel& model, int64_t complete_steps) {
  Schedule s;
  s.steps_ = complete_steps;
  s.buckets_ = model.buckets();
  s.exit_.resize(static_cast<size_t>(complete_steps) * s.buckets_);

  const int ranks = model.ranks();
  std::vector<int64_t> start(ranks);
  for (int r = 0; r < ranks; ++r) start[r] = model.FirstStepStart(r);
  std::vector<StepWork> work(ranks);

  for (int64_t step = 0; step < complete_steps; ++step) {
    std::array<int64_t, kMaxBuckets> last_enter{};
    for (int r = 0; r < ranks; ++r) {
      work[r] = model.Work(r, step, start[r]);
      for (int k = 0; k < s.buckets_; ++k)
        last_enter[k] = std::max(last_enter[k], work[r].enter[k]);
    }
    int64_t previous = 0;
    for (int k = 0; k < s.buckets_; ++k) {
      previous = std::max(last_enter[k], previous) + model.TransferNs(k);
      s.exit_[step * s.buckets_ + k] = previous;
    }
    const int last = s.buckets_ - 1;
    for (int r = 0; r < ranks; ++r) {
      start[r] = model.End(work[r], s.ExitOn(model, r, step, last)).next_start;
    }
  }
  return s;
}

}  // namespace dsdiag::synth
