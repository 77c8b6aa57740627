// The `params` record (trace/records/params_record.h): the parameter table — names, shapes,
// dtypes and the gradient-sync buckets — written once, so that `grad` and `fp` records can
// name parameters and buckets by index. Written by GradientProbe (LibTorch) and by the
// Python package's model probe. One branch when probes are off. Torch-free.
#pragma once

#include "probes/records/session_fwd.h"
#include "trace/records/params_record.h"

namespace dsdiag::probes::records {

using ParamsRecord = trace::records::ParamTable;
void WriteParams(probes::Session* session, const ParamsRecord& r) noexcept;

}  // namespace dsdiag::probes::records
