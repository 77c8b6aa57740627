// SynthModel: the parameters of the model a synthetic run pretends to train — a small
// DeepSeek-style MoE decoder (token embedding, blocks of attention plus a routed mixture of
// experts, an output head) — and its gradient-sync buckets, laid out the way DDP lays them
// out: parameters in reverse registration order (the order backward produces gradients),
// cut into buckets of about kBucketCapElements. Its `params` record is table(), the one
// parameter-table type (trace/records/params_record.h); the element counts are synth's own,
// for the time model and the allreduce sizes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/records/params_record.h"

namespace dsdiag::synth {

struct Param {
  std::string name;            // "blocks.1.moe.experts.2.w_in.weight"
  std::vector<int64_t> shape;  // [out, in]
  int64_t numel = 0;
};

struct Bucket {
  std::vector<int> params;  // indices into SynthModel::params, in allreduce order
  int64_t numel = 0;
};

class SynthModel {
 public:
  static constexpr int kBlocks = 2;
  static constexpr int kExperts = 4;
  static constexpr int64_t kBucketCapElements = 65536;

  // embed.weight, blocks.{i}.attn.{qkv,out}.weight, blocks.{i}.moe.router.weight,
  // blocks.{i}.moe.experts.{e}.w_in.weight / w_out.weight, head.weight.
  static SynthModel DeepSeekMoe();

  const std::vector<Param>& params() const { return params_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }
  // Indices of the parameters whose name starts with `prefix`, ascending.
  std::vector<int> IndicesWithPrefix(std::string_view prefix) const;

  // What the `params` record says of the model: names, shapes, dtypes (all f32), buckets.
  const trace::records::ParamTable& table() const { return table_; }

 private:
  void Add(std::string name, std::vector<int64_t> shape);
  void MakeBuckets();
  void MakeTable();

  std::vector<Param> params_;
  std::vector<Bucket> buckets_;
  trace::records::ParamTable table_;
};

}  // namespace dsdiag::synth
