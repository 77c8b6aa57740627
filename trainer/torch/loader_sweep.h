// RunLoaderSweep: `dsdiag loader-sweep`'s measurement — the trainer's own data pipeline
// (BatchStream: synthetic corpus, distributed sampler, LibTorch DataLoader) timed over a
// grid of worker counts and batch sizes, one rank, probes off.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trace/loader_sweep_file.h"
#include "trace/loader_sweep_summary.h"

namespace dsdiag::trainer {

struct LoaderSweepOptions {
  std::vector<int> workers{0, 1, 2, 4, 8};
  std::vector<int> batch_sizes{8};
  int64_t batches = 50;  // timed batches per repeat
  double seconds = 0;    // > 0: time each repeat for this long instead of `batches`
  int64_t warmup = 5;    // batches fetched (the first included) before timing
  int repeats = 3;
  int64_t dataset_size = 1024;
  int vocab = 64;
  int seq_len = 16;
  uint64_t seed = 1234;
  // Called before each repeat with a one-line description (live progress); may be empty.
  std::function<void(const std::string&)> progress;
};

// Throws std::invalid_argument on options it cannot measure.
trace::LoaderSweep RunLoaderSweep(const LoaderSweepOptions& options);

}  // namespace dsdiag::trainer
