// DistributedShuffleSampler: PyTorch's torch.utils.data.DistributedSampler for LibTorch.
//
// LibTorch 1.13 has torch::data::samplers::DistributedRandomSampler, but it shuffles with
// the epoch alone as seed (no shared base seed), hands each rank a contiguous block
// rather than a rank::world_size stride, and keeps its epoch inside the loader's private
// copy of the sampler. This one follows the Python semantics:
//   order = randperm(N, generator seeded with seed + epoch)
//   pad by wrapping around to a multiple of world_size
//   rank r takes order[r], order[r + W], order[r + 2W], ...
// so with a shared seed and set_epoch() the ranks' shards are disjoint and change every
// epoch. The loader owns a copy of the sampler; the training loop steers it through a
// shared SamplerPosition, read at every reset() (that is, at every DataLoader::begin()).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace dsdiag::trainer {

struct SamplerPosition {
  int64_t epoch = 0;  // the sampler epoch, what set_epoch() sets
  int64_t skip = 0;   // this rank's samples to skip at the next reset (resuming mid-epoch)
};

class DistributedShuffleSampler : public torch::data::samplers::Sampler<> {
 public:
  DistributedShuffleSampler(size_t dataset_size, int world_size, int rank, uint64_t seed,
                            std::shared_ptr<SamplerPosition> position);

  void reset(torch::optional<size_t> new_size = torch::nullopt) override;
  torch::optional<std::vector<size_t>> next(size_t batch_size) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  // The indices rank `rank` visits in `epoch`, in order.
  static std::vector<size_t> RankOrder(size_t dataset_size, int world_size, int rank, uint64_t seed,
                                       int64_t epoch);
  // ceil(N / W): every rank visits the same number of samples per epoch.
  static size_t SamplesPerRank(size_t dataset_size, int world_size);

 private:
  size_t dataset_size_;
  int world_size_;
  int rank_;
  uint64_t seed_;
  std::shared_ptr<SamplerPosition> position_;
  std::vector<size_t> order_;  // this epoch's indices for this rank
  size_t cursor_ = 0;
};

}  // namespace dsdiag::trainer
