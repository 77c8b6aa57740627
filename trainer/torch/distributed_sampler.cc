#include "trainer/torch/distributed_sampler.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <utility>

namespace dsdiag::trainer {

DistributedShuffleSampler::DistributedShuffleSampler(size_t dataset_size, int world_size, int rank,
                                                     uint64_t seed,
                                                     std::shared_ptr<SamplerPosition> position)
    : dataset_size_(dataset_size),
      world_size_(world_size),
      rank_(rank),
      seed_(seed),
      position_(std::move(position)) {}

size_t DistributedShuffleSampler::SamplesPerRank(size_t dataset_size, int world_size) {
  const size_t w = static_cast<size_t>(world_size);
  return (dataset_size + w - 1) / w;
}

std::vector<size_t> DistributedShuffleSampler::RankOrder(size_t dataset_size, int world_size,
                                                         int rank, uint64_t seed, int64_t epoch) {
  at::Generator rng = at::detail::createCPUGenerator(seed + static_cast<uint64_t>(epoch));
  torch::Tensor perm = torch::randperm(static_cast<int64_t>(dataset_size), rng, torch::kLong);
  const int64_t* p = perm.data_ptr<int64_t>();
  const size_t per_rank = SamplesPerRank(dataset_size, world_size);
  const size_t total = per_rank * static_cast<size_t>(world_size);
  std::vector<size_t> order;
  order.reserve(per_rank);
  for (size_t i = static_cast<size_t>(rank); i < total; i += static_cast<size_t>(world_size)) {
    order.push_back(static_cast<size_t>(p[i % dataset_size]));  // wrap-around padding
  }
  return order;
}

void DistributedShuffleSampler::reset(torch::optional<size_t> new_size) {
  if (new_size) dataset_size_ = *new_size;
  order_ = RankOrder(dataset_size_, world_size_, rank_, seed_, position_->epoch);
  cursor_ = std::min(order_.size(), static_cast<size_t>(std::max<int64_t>(position_->skip, 0)));
  position_->skip = 0;
}

torch::optional<std::vector<size_t>> DistributedShuffleSampler::next(size_t batch_size) {
  if (cursor_ >= order_.size()) return torch::nullopt;
  const size_t end = std::min(order_.size(), cursor_ + batch_size);
  std::vector<size_t> batch(order_.begin() + static_cast<std::ptrdiff_t>(cursor_),
                            order_.begin() + static_cast<std::ptrdiff_t>(end));
  cursor_ = end;
  return batch;
}

void DistributedShuffleSampler::save(torch::serialize::OutputArchive& archive) const {
  archive.write("epoch", torch::tensor(position_->epoch, torch::kLong));
  archive.write("cursor", torch::tensor(static_cast<int64_t>(cursor_), torch::kLong));
}

void DistributedShuffleSampler::load(torch::serialize::InputArchive& archive) {
  torch::Tensor epoch, cursor;
  archive.read("epoch", epoch);
  archive.read("cursor", cursor);
  position_->epoch = epoch.item<int64_t>();
  position_->skip = cursor.item<int64_t>();
}

}  // namespace dsdiag::trainer
