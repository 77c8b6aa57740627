// `dsdiag loader-sweep [--workers 0,1,2,4,8] [--batch-size 8[,16]] [--batches N | --seconds S]
// [--warmup N] [--repeats R] [--dataset-size N] [--format text|json] [--out FILE|RUN_DIR]`:
// times the reference trainer's data pipeline over worker counts and batch sizes and
// recommends a setting (trainer/torch/loader_sweep.h measures, trainer/loader_sweep_result.h
// tabulates and recommends). --out writes loader-sweep.json ("dsdiag.loader-sweep/1"), into
// the directory when --out names one, so that `dsdiag report RUN_DIR` shows it.
//
// Exit status: 0 measured; 2 for bad usage, an --out that cannot be written, or a dsdiag
// built without LibTorch.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/subcommand.h"

namespace dsdiag::cli {

class LoaderSweepCommand : public Subcommand {
 public:
  std::string_view name() const override { return "loader-sweep"; }
  std::string_view description() const override;
  std::string Usage() const override;
  int Run(const std::vector<std::string>& args) override;
};

// "0,1,2" -> {0, 1, 2}; throws UsageError naming `flag` on anything but integers >= `min`.
std::vector<int> ParseIntList(const std::string& flag, const std::string& text, int min);

}  // namespace dsdiag::cli
