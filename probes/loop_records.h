// The trainer's records of the kinds docs/trace-format.md designs but no probe writes yet
// (`sampler`, `loader`, `scaler`, `clip`, `ckpt`, `rng`): written through the session's writer in
// exactly the documented shape, so that when a probe takes one over the traces do not
// change. Every function is one branch when probes are off. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/sample_bitmap.h"

namespace dsdiag::probes {
class Session;
}

namespace dsdiag::probes::records {

struct SamplerRecord {
  int64_t epoch = 0;          // the training epoch this order serves
  int64_t sampler_epoch = 0;  // what the sampler was set to (differs under no-set-epoch)
  int64_t seed = 0;           // the shuffle seed
  uint64_t order = 0;         // hash of the index sequence (order-sensitive)
  uint64_t set = 0;           // hash of the sorted indices (order-insensitive)
  int64_t skip = 0;           // samples skipped when resuming mid-epoch
  const std::vector<uint64_t>* indices = nullptr;  // written as `idx` when set (full mode)
  int64_t n = 0;
  // The rank's epoch indices (any order) and the dataset size: written as the exact
  // membership bitmap `bits` (+ `size`) when 0 < dataset_size <= kMaxBitmapSize, so that
  // the analyzers can prove shard overlap and jointly missed samples.
  const std::vector<uint64_t>* members = nullptr;
  int64_t dataset_size = 0;
};
// ceil(size / 8) bytes, base64 (trace/sample_bitmap.h): 1 << 20 samples cost 175 KB per rank
// per epoch.
inline constexpr int64_t kMaxBitmapSize = trace::kMaxSampleBitmapSize;
void WriteSampler(probes::Session* session, const SamplerRecord& r) noexcept;

// One batch: `wait` ns the loop blocked on it; `produce` ns spent making it when that is
// visible (the batch was made on the main thread), else negative and left out.
void WriteLoader(probes::Session* session, int64_t wait, int64_t produce, int64_t samples) noexcept;

struct ScalerRecord {
  double scale = 1;             // the scale this step's loss was multiplied by
  bool inf_local = false;       // this rank's gradients overflowed
  bool inf_global = false;      // some rank's did (the reduced flag)
  bool skipped = false;         // the optimizer step was skipped
  const char* event = nullptr;  // "growth", "backoff" or null
  double norm_scaled = 0;       // global norm of the synced, still scaled gradients
  double norm = 0;              // the same, unscaled
};
void WriteScaler(probes::Session* session, const ScalerRecord& r) noexcept;

void WriteClip(probes::Session* session, bool unscaled, double norm, double max) noexcept;

struct CheckpointRecord {
  std::string op;  // "save", "load"
  std::string path;
  int64_t bytes = 0;
  uint64_t hash = 0;  // digest of the model parameters saved / loaded
  int64_t ckpt_step = 0;
  int64_t epoch = 0;
  int64_t dur = 0;
  std::string map_location;  // load only
  bool prefix_stripped = false;
  std::vector<std::string> missing, unexpected;  // load only
};
void WriteCheckpoint(probes::Session* session, const CheckpointRecord& r) noexcept;

void WriteRng(probes::Session* session, std::string_view stream, std::string_view why, int64_t seed,
              uint64_t state_hash) noexcept;

}  // namespace dsdiag::probes::records
