// `dsdiag synth --ranks R --steps S --out RUN_DIR [--inject SPEC]... [--seed N] [--force]
// [--threads N]`: writes schema-valid synthetic traces, one per rank, shaped like the
// reference trainer's, at any scale and without LibTorch (synth/synth_run.h does the work).
// For tests and benchmarks of compare/timeline/report.
//
// Exit status: 0 written; 2 for bad usage (including an --inject kind synth cannot imitate
// and a non-empty --out without --force) or an output directory that cannot be written.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/subcommand.h"

namespace dsdiag::cli {

class SynthCommand : public Subcommand {
 public:
  std::string_view name() const override { return "synth"; }
  std::string_view description() const override;
  std::string Usage() const override;
  int Run(const std::vector<std::string>& args) override;
};

}  // namespace dsdiag::cli
