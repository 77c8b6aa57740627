// The `params` record (docs/trace-format.md, "`params`") and the one parameter-table type:
// the model's parameters by index — names, shapes, dtypes — its gradient-sync buckets and,
// from the Python package, its buffers. Written once per rank, after the model is built, so
// that `grad` and `fp` records can name parameters and buckets by index: by GradientProbe
// (LibTorch), the Python package's model probe and synth (its model, synth/synth_model.h).
// Read by every analyzer that names a parameter (analyzers/kinds/common/).
//
//   {"type":"params","ts":..,"step":0,"names":["embed.weight","blocks.0.attn.qkv.weight"],
//    "shapes":[[256,64],[192,64]],"dtypes":["f32","f32"],"buckets":[[1],[0]]}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct ParamsKeys {
  static constexpr FieldKey names{"names"};
  static constexpr FieldKey shapes{"shapes"};
  static constexpr FieldKey dtypes{"dtypes"};    // "f32", "bf16", ...
  static constexpr FieldKey buckets{"buckets"};  // parameter indices per bucket, allreduce order
  static constexpr FieldKey buffers{"buffers"};  // optional: the buffers, by qualified name
  // optional (v5): the global ranks that hold these same parameters (the replica set: DDP's
  // process_group); absent: every rank of the run.
  static constexpr FieldKey replicas{"replicas"};
};

struct ParamTable {
  static constexpr std::string_view kType = rec::kParams;
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::string> dtypes;
  std::vector<std::vector<int>> buckets;
  // The module's buffers (BatchNorm's running_mean, ...) in the order of `fp` records with
  // what "buffer"; written only when there are some.
  std::vector<std::string> buffers;
  // The global ranks whose parameters must equal these (DDP's process group), ascending;
  // empty: every rank of the run. Written only when not empty.
  std::vector<int> replicas;

  // Reads a `params` record; nullopt when `names`, `buckets` or `buffers` is malformed
  // (`shapes` and `dtypes` are for people: a reader that lacks them still names things).
  static std::optional<ParamTable> Read(const Record& record);

  // "blocks.0.attn.qkv.weight", or "param #14" past the table.
  std::string ParamName(int index) const;
  // "bucket 2 (blocks.0.attn.qkv.weight, blocks.0.attn.out.weight +3 more)".
  std::string BucketName(int index) const;
  // "bn.running_mean", or "buffer #3" past the table.
  std::string BufferName(int index) const;
  // ParamName or BucketName by fingerprint granularity (per parameter or per bucket).
  std::string Describe(bool per_param, int index) const;
};
void AppendFields(const ParamTable& table, JsonLine* line);

}  // namespace dsdiag::trace::records
