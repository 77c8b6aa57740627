// GradientProbe: what the gradients and parameters of one rank really were — the evidence
// the missing-grad, grad-desync, init- and replica-divergence analyzers diff across ranks.
//
//   dsdiag::probes::GradientProbe grads(session, names, params, buckets);  // `params` record
//   grads.FingerprintParams("init");        // after the initial broadcast (and after resume)
//   loss.backward();
//   grads.AfterBackward();                   // `grad`: missing / non-finite, global norm
//   allreduce_gradients();
//   grads.AfterSync();                       // `fp` of the averaged gradients
//   optimizer.step();
//   grads.AfterOptimizerStep(step);          // `fp` of the parameters every N steps
//
// `light` hashes per gradient-sync bucket and fingerprints parameters every
// `param_fp_every` steps; `full` hashes every tensor and fingerprints every step. Hashes
// read contiguous CPU tensors in place; others are copied first. Nothing here throws.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "probes/session.h"

namespace dsdiag::probes {

struct GradientProbeOptions {
  int64_t param_fp_every = 10;  // light mode; full fingerprints every step
};

class GradientProbe {
 public:
  // `names[i]` names `params[i]`; `buckets` lists parameter indices per gradient-sync
  // bucket in allreduce order (empty: one bucket holding every parameter). Writes the
  // `params` record.
  GradientProbe(Session* session, std::vector<std::string> names, std::vector<at::Tensor> params,
                std::vector<std::vector<int>> buckets, GradientProbeOptions options = {});

  // After backward, before the gradient sync.
  void AfterBackward() noexcept;
  // After the gradient sync: every rank should now hold the same gradients.
  void AfterSync() noexcept;
  // After the optimizer step of `step`: parameter fingerprints when one is due.
  void AfterOptimizerStep(int64_t step) noexcept;
  // Parameter fingerprints now, labelled `why` ("init", "resume", "periodic", "final").
  void FingerprintParams(std::string_view why) noexcept;

  // The indices of parameters without gradient at the last AfterBackward().
  const std::vector<int>& missing() const { return missing_; }

 private:
  void WriteParamTable() noexcept;
  void WriteFingerprints(std::string_view what, std::string_view why, bool grads) noexcept;
  uint64_t HashTensor(const at::Tensor& t) const;

  Session* session_;
  std::vector<std::string> names_;
  std::vector<at::Tensor> params_;
  std::vector<std::vector<int>> buckets_;
  GradientProbeOptions options_;
  std::vector<int> missing_;
  std::vector<int> last_written_missing_;
  bool first_backward_ = true;
};

}  // namespace dsdiag::probes
