// The `params` record (docs/trace-format.md): the parameter table — names, shapes, dtypes and
// the gradient-sync buckets — written once, so that `grad` and `fp` records can name
// parameters and buckets by index. Written by GradientProbe (LibTorch) and by the Python
// package's DDP probe. One branch when probes are off. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "probes/records/session_fwd.h"

namespace dsdiag::probes::records {

struct ParamsRecord {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::string> dtypes;        // "f32", "bf16", ...
  std::vector<std::vector<int>> buckets;  // parameter indices per bucket, in allreduce order
  // The module's buffers by qualified name (BatchNorm's running_mean, ...), in the order of
  // `fp` records with what "buffer"; written only when there are some (the Python package).
  std::vector<std::string> buffers;
};
void WriteParams(probes::Session* session, const ParamsRecord& r) noexcept;

}  // namespace dsdiag::probes::records
