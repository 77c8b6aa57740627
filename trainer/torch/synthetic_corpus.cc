#include "trainer/torch/synthetic_corpus.h"

#include <array>
#include <chrono>
#include <random>
#include <thread>

#include "trainer/torch/seeds.h"

namespace dsdiag::trainer {
namespace {

constexpr int kSuccessors = 3;
// Cumulative probabilities of the successors, in per-mille.
constexpr std::array<int, kSuccessors> kCumulative = {700, 900, 1000};
// Keeps the corpus stream apart from the other streams derived from the same base seed.
constexpr uint64_t kCorpusStream = 0xc0de;

}  // namespace

struct SyntheticCorpus::Chain {
  std::vector<std::array<int64_t, kSuccessors>> next;  // [vocab][successor]
};

SyntheticCorpus::SyntheticCorpus(const CorpusOptions& options) : options_(options) {
  auto chain = std::make_shared<Chain>();
  std::mt19937_64 rng(MixSeed(options.seed, kCorpusStream));
  std::uniform_int_distribution<int64_t> token(0, options.vocab - 1);
  chain->next.resize(options.vocab);
  for (auto& successors : chain->next) {
    for (int64_t& s : successors) s = token(rng);
  }
  chain_ = std::move(chain);
}

SyntheticCorpus::ExampleType SyntheticCorpus::get(size_t index) {
  std::mt19937_64 rng(MixSeed(MixSeed(options_.seed, kCorpusStream), index));
  std::uniform_int_distribution<int64_t> token(0, options_.vocab - 1);
  std::uniform_int_distribution<int> per_mille(0, 999);
  torch::Tensor walk = torch::empty({options_.seq_len + 1}, torch::kLong);
  int64_t* out = walk.data_ptr<int64_t>();
  out[0] = token(rng);
  for (int i = 1; i <= options_.seq_len; ++i) {
    const int draw = per_mille(rng);
    int pick = 0;
    while (draw >= kCumulative[pick]) ++pick;
    out[i] = chain_->next[out[i - 1]][pick];
  }
  return {walk.narrow(0, 0, options_.seq_len), walk.narrow(0, 1, options_.seq_len)};
}

std::vector<SyntheticCorpus::ExampleType> SyntheticCorpus::get_batch(
    torch::ArrayRef<size_t> indices) {
  // A slow loader is slow per batch (decode, augmentation, remote storage), not per
  // sample: one sleep for the whole batch.
  if (options_.slow_ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.slow_ms));
  }
  std::vector<ExampleType> batch;
  batch.reserve(indices.size());
  for (size_t i : indices) batch.push_back(get(i));
  return batch;
}

}  // namespace dsdiag::trainer
