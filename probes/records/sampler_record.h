// The `sampler` record (docs/trace-format.md): the samples a rank draws in an epoch, as an
// order-sensitive hash, an order-insensitive digest, optionally the indices (full mode) and
// the exact membership bitmap. Written by the trainer's data stream at each epoch start.
// One branch when probes are off. Torch-free.
#pragma once

#include <cstdint>
#include <vector>

#include "probes/records/session_fwd.h"
#include "trace/sample_bitmap.h"

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

}  // namespace dsdiag::probes::records
