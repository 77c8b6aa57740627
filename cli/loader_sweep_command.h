// `dsdiag loader-sweep [--workers 0,1,2,4,8] [--batch-size 8[,16]] [--batches N | --seconds S]
// [--warmup N] [--repeats R] [--dataset-size N] [--format text|json] [--out FILE|RUN_DIR]`:
// times the reference trainer's data pipeline over worker counts and batch sizes and
// recommends a setting (trainer/torch/loader_sweep.h measures, trace/loader_sweep_summary.h
// tabulates and recommends). --out writes loader-sweep.json ("dsdiag.loader-sweep/1"), into
// the directory when --out names one, so that `dsdiag report RUN_DIR` shows it.
//
// Exit status: 0 measured; 2 for bad usage, an --out that cannot be written, or a dsdiag
// built without LibTorch.
#pragma once

#include <cstdint>
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

// The command line, checked; torch-free (copied into trainer::LoaderSweepOptions to run).
struct LoaderSweepArgs {
  std::string format = "text";
  std::vector<int> workers;
  std::vector<int> batch_sizes;
  int64_t batches = 50;
  double seconds = 0;  // > 0: time each repeat for this long instead of `batches`
  int64_t warmup = 5;
  int repeats = 3;
  int64_t dataset_size = 1024;
  std::string out;  // empty: no --out
};

// Parses and checks the arguments after `loader-sweep` without measuring anything; throws
// UsageError. Returns false when --help was asked for. Public for the tests and fuzz/.
bool ParseLoaderSweepArgs(const std::vector<std::string>& args, LoaderSweepArgs* out);

// "0,1,2" -> {0, 1, 2}; throws UsageError naming `flag` on anything but integers >= `min`.
std::vector<int> ParseIntList(const std::string& flag, const std::string& text, int min);

}  // namespace dsdiag::cli
