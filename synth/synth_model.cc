#include "synth/synth_model.h"

namespace dsdiag::synth {
namespace {

constexpr int64_t kVocab = 256;
constexpr int64_t kModel = 64;    // d_model
constexpr int64_t kHidden = 128;  // expert d_ff

}  // namespace

SynthModel SynthModel::DeepSeekMoe() {
  SynthModel t;
  t.Add("embed.weight", {kVocab, kModel});
  for (int b = 0; b < kBlocks; ++b) {
    const std::string block = "blocks." + std::to_string(b) + ".";
    t.Add(block + "attn.qkv.weight", {3 * kModel, kModel});
    t.Add(block + "attn.out.weight", {kModel, kModel});
    t.Add(block + "moe.router.weight", {kExperts, kModel});
    for (int e = 0; e < kExperts; ++e) {
      const std::string expert = block + "moe.experts." + std::to_string(e) + ".";
      t.Add(expert + "w_in.weight", {kHidden, kModel});
      t.Add(expert + "w_out.weight", {kModel, kHidden});
    }
  }
  t.Add("head.weight", {kVocab, kModel});
  t.MakeBuckets();
  t.MakeTable();
  return t;
}

void SynthModel::Add(std::string name, std::vector<int64_t> shape) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  params_.push_back({std::move(name), std::move(shape), numel});
}

// Backward produces gradients roughly in reverse registration order; DDP fills a bucket
// in that order and launches its allreduce once the bucket passes the size cap.
void SynthModel::MakeBuckets() {
  Bucket current;
  for (int i = static_cast<int>(params_.size()) - 1; i >= 0; --i) {
    current.params.push_back(i);
    current.numel += params_[i].numel;
    if (current.numel >= kBucketCapElements) {
      buckets_.push_back(std::move(current));
      current = Bucket();
    }
  }
  if (!current.params.empty()) buckets_.push_back(std::move(current));
}

std::vector<int> SynthModel::IndicesWithPrefix(std::string_view prefix) const {
  std::vector<int> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (std::string_view(params_[i].name).substr(0, prefix.size()) == prefix) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

void SynthModel::MakeTable() {
  for (const Param& p : params_) {
    table_.names.push_back(p.name);
    table_.shapes.push_back(p.shape);
    table_.dtypes.push_back("f32");
  }
  for (const Bucket& b : buckets_) table_.buckets.push_back(b.params);
}

}  // namespace dsdiag::synth
