// BatchStream: the training loop's view of the data — LibTorch's DataLoader over the
// synthetic corpus with the distributed sampler, `workers` threads, and epochs.
//
// Epoch boundaries are counted, not discovered: every rank has ceil(N / W) samples per
// epoch, hence the same number of batches, so all ranks know when an epoch ends without
// asking the loader (whose end is only visible after a blocking fetch). At each epoch's
// start the loop's set_epoch() happens here (unless the `no-set-epoch` fault is on) and a
// `sampler` record describes the order this rank will visit:
//   {"type":"sampler","ts":..,"step":32,"epoch":1,"sampler_epoch":1,"seed":1234,"n":256,
//    "order":"<hash of the index sequence>","set":"<hash of the sorted indices>"}
// (plus "idx":[...] with --probes full, and "skip":k when resuming k samples in), and
// every batch a `loader` record: {"type":"loader",..,"wait":<ns blocked>,"produce":..,
// "samples":8} (`produce` only without workers, where the wait is the production).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>

#include "trainer/torch/checkpoint.h"
#include "trainer/torch/synthetic_corpus.h"

namespace dsdiag::probes {
class Session;
}

namespace dsdiag::trainer {

struct DataOptions {
  CorpusOptions corpus;
  int world_size = 1;
  int rank = 0;
  uint64_t shuffle_seed = 0;  // shared by all ranks (unless the sampler-seed fault)
  int batch_size = 8;
  int workers = 0;
  bool set_epoch = true;  // false: the `no-set-epoch` fault
};

struct Batch {
  torch::Tensor inputs;   // [b, seq] int64
  torch::Tensor targets;  // [b, seq] int64
};

class BatchStream {
 public:
  BatchStream(const DataOptions& options, probes::Session* session);
  ~BatchStream();

  // Continue from a checkpoint's position (before the first Next()).
  void Seek(const TrainPosition& position);

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  // The training epoch the next batch belongs to.
  int64_t next_epoch() const;
  // The next batch, starting a new epoch when the current one is used up.
  Batch Next();
  // Where the stream stands, for a checkpoint (step is the caller's).
  TrainPosition position() const;

 private:
  void BeginEpoch();
  void WriteSamplerRecord(int64_t skip) const;

  struct Loader;
  DataOptions options_;
  probes::Session* session_;
  int64_t batches_per_epoch_;
  int64_t epoch_ = 0;
  int64_t consumed_ = 0;  // batches of epoch_ handed out
  int64_t sampler_epoch_ = 0;
  std::unique_ptr<Loader> loader_;
};

}  // namespace dsdiag::trainer
