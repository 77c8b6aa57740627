// `dsdiag run [--nproc N] [--out RUN_DIR] [--probes off|light|full] [--timeout SECONDS]
// -- COMMAND [ARGS...]`: a user's own PyTorch job, unchanged, with every rank instrumented.
//
// With --nproc, N copies of COMMAND start as `torchrun --standalone --nproc_per_node N` would
// start them (the launcher of `dsdiag train --nproc`, launch/launcher.h); without it COMMAND
// runs once and may start its ranks itself (torch.multiprocessing.spawn, a shell loop,
// torchrun). Every process gets DSDIAG_OUT, DSDIAG_PROBES, DSDIAG_TIMEOUT and one
// DSDIAG_RUN_ID, and the dsdiag Python package first on PYTHONPATH: its sitecustomize
// instruments any Python process that imports torch (python/).
//
// Exit status: the job's (launch/launcher.h says how it is chosen); 2 for bad usage.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/subcommand.h"

namespace dsdiag::cli {

struct RunArgs {
  int nproc = 0;  // 0: run COMMAND once, without rank variables
  std::string out;
  bool out_given = false;
  std::string probes = "light";
  double timeout_s = 300;
  std::vector<std::string> command;  // COMMAND ARGS...
};

// Parses the arguments after `run`; throws UsageError. False when --help was asked for.
bool ParseRunArgs(const std::vector<std::string>& args, RunArgs* out);

class RunCommand : public Subcommand {
 public:
  std::string_view name() const override { return "run"; }
  std::string_view description() const override;
  std::string Usage() const override;
  int Run(const std::vector<std::string>& args) override;
};

}  // namespace dsdiag::cli
