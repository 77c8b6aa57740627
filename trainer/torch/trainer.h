// Trainer: one rank's training run once the process group and the probes exist — model,
// optimizer, data, and the step:
//
//   data -> forward (bf16 autocast) -> backward (loss scaled under fp16)
//   -> sync (found-inf MAX, bucketed gradient allreduce, global loss, health check)
//   -> optimizer (unscale, clip, step or skip, scale update) -> checkpoint when due
//
// each part inside its PhaseScope, with the fault plan applied where the real fault
// would strike. The loop calls RunControl::Check() between phases, so a signal or a
// peer's failure unwinds it with StopRun at the next phase boundary.
#pragma once

#include <cstdint>
#include <memory>

#include "launch/dist_env.h"
#include "trainer/train_config.h"

namespace dsdiag::probes {
class Session;
}

namespace dsdiag::trainer {

class Comm;
class Faults;
class RunControl;

class Trainer {
 public:
  Trainer(const TrainConfig& config, const launch::DistEnv& env, const Faults& faults, Comm& comm,
          probes::Session* session, RunControl& control);
  ~Trainer();

  // Trains until --steps or --epochs is reached. Throws StopRun, CollectiveError,
  // CheckpointError or other std::exceptions.
  void Run();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dsdiag::trainer
