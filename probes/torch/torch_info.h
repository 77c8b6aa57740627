// What LibTorch this rank runs with, for the trace header: versions (LibTorch, CUDA, NCCL
// when present), intra-op threads and the determinism switches engineers set by folklore
// (deterministic algorithms, cuDNN benchmark / deterministic). Torch stays out of this header.
#pragma once

#include "trace/trace_header.h"

namespace dsdiag::probes {

// Adds versions["libtorch"] (and "cuda", "nccl" when built with them) and a "determinism"
// section to `header`. Call before Session::Start.
void DescribeTorch(trace::TraceHeader* header);

}  // namespace dsdiag::probes
