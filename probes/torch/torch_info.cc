#include "probes/torch/torch_info.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/version.h>

#include <string>

namespace dsdiag::probes {

void DescribeTorch(trace::TraceHeader* header) {
  header->versions["libtorch"] = TORCH_VERSION;
  // CUDA runtime version as major.minor, only when this LibTorch was built with CUDA.
  const auto& cuda = at::detail::getCUDAHooks();
  if (cuda.hasCUDA()) {
    const long v = cuda.versionCUDART();
    header->versions["cuda"] = std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  }
  auto& ctx = at::globalContext();
  trace::JsonValue det = trace::JsonValue::Object();
  det.Set("deterministic_algorithms", ctx.deterministicAlgorithms());
  det.Set("cudnn_deterministic", ctx.deterministicCuDNN());
  det.Set("cudnn_benchmark", ctx.benchmarkCuDNN());
  det.Set("intra_op_threads", at::get_num_threads());
  header->sections.Set("determinism", std::move(det));
}

}  // namespace dsdiag::probes
