// The command line of `dsdiag train` (docs/contract.md), parsed and checked into a TrainConfig
// without running anything, so that tests can drive it. train_command.cc decides from the
// result whether to launch ranks or to be one.
#pragma once

#include <ctime>
#include <string>
#include <vector>

#include "launch/dist_env.h"
#include "trainer/train_config.h"

namespace dsdiag::cli {

struct TrainArgs {
  trainer::TrainConfig config;
  bool help = false;
  bool out_given = false;
  // The arguments as given minus --nproc and --out: what each launched rank gets (followed
  // by `--out RUN_DIR`, so that every rank writes to one directory).
  std::vector<std::string> rank_args;
};

// Parses and validates `args` (the arguments after `train`); throws UsageError, including
// for a bad --inject spec. `env_world_size` is the world size of the launcher environment
// (WORLD_SIZE and friends), 0 when there is none, -1 when there is one but it cannot be
// read (the caller reports that unless --nproc is given). Without --nproc it is the world
// size the --inject ranks are checked against; with neither, config.nproc becomes 1.
// Neither --steps nor --epochs: steps = 50. config.out stays empty when --out is not given.
TrainArgs ParseTrainArgs(const std::vector<std::string>& args, int env_world_size);

// The text of `dsdiag train --help`.
std::string TrainUsage();

// "runs/20261130-081500" for `now` (local time).
std::string TimestampRunDir(std::time_t now);

// The run directory of a rank started by an outside launcher (torchrun, srun, mpirun) when
// --out is not given. Every rank must arrive at the same name without talking to the others,
// so it comes from an id the launcher shares: DSDIAG_RUN_ID, TORCHELASTIC_RUN_ID or
// SLURM_JOB_ID(.SLURM_STEP_ID); a one-rank job may use the timestamp. Throws UsageError
// (asking for --out) when the ranks cannot agree on one.
std::string SharedRunDir(const launch::DistEnv& env, std::time_t now);

}  // namespace dsdiag::cli
