// Checkpoints: everything needed to continue a run bit for bit — model, optimizer, loss
// scaler, data position — in one torch::serialize archive:
//   model/<param name>          the parameters (a `module.` prefix is accepted on load)
//   optimizer/...               torch::optim::Optimizer::save
//   train/{step,epoch,epoch_batches,sampler_epoch,world_size,seed}
//   scaler/{scale,growth_tracker}
// Dropout and the data order need no generator state: both are re-derived from
// (seed, rank, step), see seeds.h.
//
// Files are <run_dir>/checkpoints/step-<8 digits>.pt, `step` being the number of
// optimizer steps taken. A save writes a temporary file and renames it, so a reader never
// sees half a checkpoint; older files are kept (a stale-checkpoint resume picks one).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace dsdiag::trainer {

struct ModelParams;

struct TrainPosition {
  int64_t step = 0;           // optimizer steps taken
  int64_t epoch = 0;          // training epoch of the next batch
  int64_t epoch_batches = 0;  // batches of `epoch` already consumed
  int64_t sampler_epoch = 0;  // what the sampler was last set to
};

struct CheckpointState {
  TrainPosition position;
  double scale = 1.0;
  int64_t growth_tracker = 0;
  int64_t world_size = 1;
  int64_t seed = 0;
};

// A checkpoint that cannot be read or does not fit the model.
class CheckpointError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string CheckpointPath(const std::string& run_dir, int64_t step);

struct SaveResult {
  int64_t bytes = 0;
  uint64_t model_hash = 0;  // HashTensors over the parameters in table order
};

// Writes `path` through `path` + `temp_suffix`, then renames. Throws CheckpointError.
SaveResult SaveCheckpoint(const std::string& path, const std::string& temp_suffix,
                          const ModelParams& params, torch::optim::Optimizer& optimizer,
                          const CheckpointState& state);

struct LoadResult {
  CheckpointState state;
  int64_t bytes = 0;
  uint64_t model_hash = 0;  // after loading
  bool prefix_stripped = false;
  std::vector<std::string> missing;     // parameters the file lacks
  std::vector<std::string> unexpected;  // file entries no parameter took
};

// Loads onto the CPU (the map location), then copies into the parameters wherever they
// live. Parameters the file lacks are listed in `missing` (the caller records them, then
// refuses to go on); an unreadable file or a shape mismatch throws CheckpointError.
LoadResult LoadCheckpoint(const std::string& path, const ModelParams& params,
                          torch::optim::Optimizer& optimizer);

// The newest step-numbered checkpoint older than `path` in the same directory, or "".
std::string OlderCheckpoint(const std::string& path);

}  // namespace dsdiag::trainer
