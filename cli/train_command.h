// `dsdiag train [options]`: runs the instrumented reference trainer (docs/contract.md).
//   --nproc N         launch N local ranks of this same executable (launch/launcher.h),
//                     supervise them, print a summary and return the launcher's status
//   under a launcher  (launch/dist_env.h) run as that one rank: trainer::RunRank
//   neither           as --nproc 1
// The options are parsed and checked first (cli/train_options.h), so a bad command line
// reports exit 2 even in a dsdiag built without LibTorch, which then says it cannot train.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/subcommand.h"

namespace dsdiag::cli {

class TrainCommand : public Subcommand {
 public:
  std::string_view name() const override { return "train"; }
  std::string_view description() const override;
  std::string Usage() const override;
  int Run(const std::vector<std::string>& args) override;
};

}  // namespace dsdiag::cli
