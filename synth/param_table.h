// ParamTable: the parameters of the model a synthetic run pretends to train — a small
// DeepSeek-style MoE decoder (token embedding, blocks of attention plus a routed mixture of
// experts, an output head) — and its gradient-sync buckets, laid out the way DDP lays them
// out: parameters in reverse registration order (the order backward produces gradients),
// cut into buckets of about kBucketCapElements.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dsdiag::synth {

struct Param {
  std::string name;            // "blocks.1.moe.experts.2.w_in.weight"
  std::vector<int64_t> shape;  // [out, in]
  int64_t numel = 0;
};

struct Bucket {
  std::vector<int> params;  // indices into ParamTable::params, in allreduce order
  int64_t numel = 0;
};

class ParamTable {
 public:
  static constexpr int kBlocks = 2;
  static constexpr int kExperts = 4;
  static constexpr int64_t kBucketCapElements = 65536;

  // embed.weight, blocks.{i}.attn.{qkv,out}.weight, blocks.{i}.moe.router.weight,
  // blocks.{i}.moe.experts.{e}.w_in.weight / w_out.weight, head.weight.
  static ParamTable DeepSeekMoe();

  const std::vector<Param>& params() const { return params_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }
  // Indices of the parameters whose name starts with `prefix`, ascending.
  std::vector<int> IndicesWithPrefix(std::string_view prefix) const;

  // The `params` record (docs/trace-format.md) as one JSON line.
  void AppendParamsRecord(int64_t ts_ns, std::string* out) const;

 private:
  void Add(std::string name, std::vector<int64_t> shape);
  void MakeBuckets();

  std::vector<Param> params_;
  std::vector<Bucket> buckets_;
};

}  // namespace dsdiag::synth
