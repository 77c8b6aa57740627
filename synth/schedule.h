// Schedule: the cross-rank half of a synthetic run — when each gradient allreduce completes.
//
// An allreduce completes for everyone only after the last rank has entered it (and after
// the previous one on the same process group: they run in order), so its completion is
//   exit[s][k] = max(max over ranks of enter[s][k], exit[s][k-1]) + transfer[k]
// and each rank's next step starts from its own exit. Build() runs all ranks through the
// steps once, keeping only these completions (steps x buckets values), so a renderer can
// later replay any one rank alone with TimeModel and get the same times.
#pragma once

#include <cstdint>
#include <vector>

#include "synth/time_model.h"

namespace dsdiag::synth {

class Schedule {
 public:
  // Steps [0, complete_steps) are steps every rank finishes.
  static Schedule Build(const TimeModel& model, int64_t complete_steps);

  int64_t complete_steps() const { return steps_; }
  // The common completion of bucket `bucket`'s allreduce in `step` (< complete_steps).
  int64_t Exit(int64_t step, int bucket) const { return exit_[step * buckets_ + bucket]; }
  // The same on `rank`, with its jitter.
  int64_t ExitOn(const TimeModel& model, int rank, int64_t step, int bucket) const {
    return Exit(step, bucket) + model.ExitJitter(rank, step, bucket);
  }

 private:
  int64_t steps_ = 0;
  int buckets_ = 0;
  std::vector<int64_t> exit_;  // [step * buckets + bucket]
};

}  // namespace dsdiag::synth
