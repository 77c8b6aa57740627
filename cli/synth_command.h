// `dsdiag synth --ranks R --steps S --out RUN_DIR [--inject SPEC]... [--seed N] [--force]
// [--threads N] [--torch-fr [--fr-entries N]]`: writes schema-valid synthetic traces, one per
// rank, shaped like the reference trainer's, at any scale and without LibTorch
// (synth/synth_run.h does the work). With --torch-fr it writes instead what the same job
// would leave had it run without dsdiag but with PyTorch's Flight Recorder on: one
// `nccl_trace_rank_<R>` pickle per rank (synth/torch_fr_dumps.h). For tests and benchmarks of
// compare/timeline/report.
//
// Exit status: 0 written; 2 for bad usage (including an --inject kind synth cannot imitate
// and a non-empty --out without --force) or an output directory that cannot be written.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/subcommand.h"
#include "synth/synth_run.h"

namespace dsdiag::cli {

struct SynthArgs {
  synth::SynthConfig config;
  synth::WriteOptions write;
  bool torch_fr = false;  // Flight Recorder dumps instead of rank traces
  int fr_entries = 0;     // the ring buffer's size (--fr-entries)
};

// Parses the arguments after `synth` without writing anything (the --inject specs are checked
// later, by synth); throws UsageError. Returns false when --help was asked for. Public for the
// tests and fuzz/.
bool ParseSynthArgs(const std::vector<std::string>& args, SynthArgs* out);

class SynthCommand : public Subcommand {
 public:
  std::string_view name() const override { return "synth"; }
  std::string_view description() const override;
  std::string Usage() const override;
  int Run(const std::vector<std::string>& args) override;
};

}  // namespace dsdiag::cli
