// RunRank: one rank of the reference trainer — rendezvous, train, write its trace.
// Returns the process exit status (0 clean; non-zero on failure, see trainer docs).
#pragma once

#include "launch/dist_env.h"
#include "trainer/train_config.h"

namespace dsdiag::trainer {

int RunRank(const TrainConfig& config, const launch::DistEnv& env);

}  // namespace dsdiag::trainer
