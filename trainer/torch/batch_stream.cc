#include "trainer/torch/batch_stream.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <vector>

#include "probes/loop_records.h"
#include "probes/probe_timer.h"
#include "probes/session.h"
#include "trace/clock.h"
#include "trainer/torch/distributed_sampler.h"
#include "trainer/torch/tensor_hash.h"

namespace dsdiag::trainer {

using CorpusBatches =
    torch::data::datasets::MapDataset<SyntheticCorpus, torch::data::transforms::Stack<>>;
using CorpusLoader = torch::data::StatelessDataLoader<CorpusBatches, DistributedShuffleSampler>;

struct BatchStream::Loader {
  std::shared_ptr<SamplerPosition> position = std::make_shared<SamplerPosition>();
  std::unique_ptr<CorpusLoader> loader;
  std::optional<torch::data::Iterator<torch::data::Example<>>> it;
  bool fresh = false;  // `it` has not been dereferenced yet
};

BatchStream::BatchStream(const DataOptions& options, probes::Session* session)
    : options_(options), session_(session), loader_(std::make_unique<Loader>()) {
  if (options.batch_size < 1) throw std::invalid_argument("batch size must be at least 1");
  if (options.corpus.size < 1) throw std::invalid_argument("dataset size must be at least 1");
  const int64_t per_rank = static_cast<int64_t>(DistributedShuffleSampler::SamplesPerRank(
      static_cast<size_t>(options.corpus.size), options.world_size));
  batches_per_epoch_ = (per_rank + options.batch_size - 1) / options.batch_size;
  DistributedShuffleSampler sampler(static_cast<size_t>(options.corpus.size), options.world_size,
                                    options.rank, options.shuffle_seed, loader_->position);
  loader_->loader = torch::data::make_data_loader(
      SyntheticCorpus(options.corpus).map(torch::data::transforms::Stack<>()), std::move(sampler),
      torch::data::DataLoaderOptions()
          .batch_size(static_cast<size_t>(options.batch_size))
          .workers(static_cast<size_t>(std::max(options.workers, 0))));
}

BatchStream::~BatchStream() = default;

void BatchStream::Seek(const TrainPosition& position) {
  epoch_ = position.epoch;
  consumed_ = position.epoch_batches;
  sampler_epoch_ = position.sampler_epoch;
}

int64_t BatchStream::next_epoch() const {
  return consumed_ >= batches_per_epoch_ ? epoch_ + 1 : epoch_;
}

TrainPosition BatchStream::position() const {
  TrainPosition p;
  p.epoch = epoch_;
  p.epoch_batches = consumed_;
  p.sampler_epoch = sampler_epoch_;
  return p;
}

void BatchStream::BeginEpoch() {
  loader_->position->epoch = sampler_epoch_;
  loader_->position->skip = consumed_ * options_.batch_size;
  WriteSamplerRecord(loader_->position->skip);
  loader_->it.emplace(loader_->loader->begin());
  loader_->fresh = true;
}

Batch BatchStream::Next() {
  if (consumed_ >= batches_per_epoch_) {
    if (loader_->it) {
      // The loader only accepts a new begin() once the last iterator reached its end;
      // with the batch count exact this fetch returns at once.
      if (!loader_->fresh) ++*loader_->it;
      if (*loader_->it != loader_->loader->end()) {
        throw std::logic_error("data loader yielded more batches than the epoch holds");
      }
      loader_->it.reset();
    }
    ++epoch_;
    consumed_ = 0;
    if (options_.set_epoch) sampler_epoch_ = epoch_;
  }
  if (!loader_->it) BeginEpoch();
  const int64_t t0 = trace::MonotonicNs();
  if (!loader_->fresh) ++*loader_->it;
  loader_->fresh = false;
  if (*loader_->it == loader_->loader->end()) {
    throw std::logic_error("data loader ran out of batches before the epoch ended");
  }
  torch::data::Example<>& example = **loader_->it;
  const int64_t wait = trace::MonotonicNs() - t0;
  ++consumed_;
  // Without workers the batch is made while the loop waits: the wait is the production.
  probes::records::WriteLoader(session_, wait, options_.workers > 0 ? -1 : wait,
                               example.data.size(0));
  return {example.data, example.target};
}

void BatchStream::WriteSamplerRecord(int64_t skip) const {
  if (!session_->on()) return;
  probes::ProbeTimer timer(session_);  // drawing and hashing the shard is the probe's work
  const std::vector<size_t> order = DistributedShuffleSampler::RankOrder(
      static_cast<size_t>(options_.corpus.size), options_.world_size, options_.rank,
      options_.shuffle_seed, sampler_epoch_);
  const std::vector<uint64_t> seq(order.begin(), order.end());
  std::vector<uint64_t> sorted = seq;
  std::sort(sorted.begin(), sorted.end());
  probes::records::SamplerRecord r;
  r.epoch = next_epoch();
  r.sampler_epoch = sampler_epoch_;
  r.seed = static_cast<int64_t>(options_.shuffle_seed);
  r.n = static_cast<int64_t>(seq.size());
  r.order = HashBytes(seq.data(), seq.size() * sizeof(uint64_t));
  r.set = HashBytes(sorted.data(), sorted.size() * sizeof(uint64_t));
  r.skip = skip;
  if (session_->full()) r.indices = &seq;
  r.members = &seq;
  r.dataset_size = options_.corpus.size;
  probes::records::WriteSampler(session_, r);
}

}  // namespace dsdiag::trainer
