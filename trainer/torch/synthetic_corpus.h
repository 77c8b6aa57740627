// SyntheticCorpus: a deterministic next-token dataset with learnable structure.
//
// Tokens follow a fixed random Markov chain over the vocabulary: each token has three
// likely successors (probabilities 0.70 / 0.20 / 0.10), so a model that learns the bigram
// table drops from ln(vocab) nats to about 0.8. Sample i is a walk of seq_len + 1 tokens
// drawn from a generator seeded by (seed, i): any rank, worker or resumed run produces
// the same sample for the same index without storing the corpus.
//
// The dataset is copied into every loader worker, so its state is shared and immutable.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace dsdiag::trainer {

struct CorpusOptions {
  int vocab = 64;
  int seq_len = 16;
  int64_t size = 1024;  // samples
  uint64_t seed = 1234;
  // Fault injection `slow-loader`: every batch takes this much longer to produce.
  int64_t slow_ms = 0;
};

class SyntheticCorpus : public torch::data::datasets::Dataset<SyntheticCorpus> {
 public:
  explicit SyntheticCorpus(const CorpusOptions& options);

  // data: [seq_len] int64 inputs; target: [seq_len] int64 next tokens.
  ExampleType get(size_t index) override;
  std::vector<ExampleType> get_batch(torch::ArrayRef<size_t> indices) override;
  torch::optional<size_t> size() const override { return static_cast<size_t>(options_.size); }

 private:
  struct Chain;  // the successor table
  CorpusOptions options_;
  std::shared_ptr<const Chain> chain_;
};

}  // namespace dsdiag::trainer
