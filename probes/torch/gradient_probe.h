// GradientProbe: what the gradients and parameters of one rank really were — the evidence
// the missing-grad, grad-desync, init- and replica-divergence analyzers diff across ranks.
//
//   dsdiag::probes::GradientProbe grads(session, names, params, buckets);  // `params` record
//   grads.FingerprintParams("init");        // after the initial broadcast (and after resume)
//   loss.backward();
//   grads.AfterBackward();                   // `grad`: missing / non-finite, global norm
//   allreduce_gradients();
//   grads.AfterSync();                       // `fp` of the averaged gradients, as reduced
//   ...                                      // (nothing should touch them here)
//   grads.BeforeOptimizerStep();             // `fp` again, before unscale / clip / step
//   optimizer.step();
//   grads.AfterOptimizerStep(step);          // `fp` of the parameters every N steps
//
// Evidence, not votes: every rank held the same gradient at the allreduce's completion
// (AfterSync); a rank whose gradient is different by BeforeOptimizerStep changed it itself
// (a hook, an in-place op), whatever the world size. Likewise the parameters fingerprinted
// after the optimizer step and again at the next BeforeOptimizerStep: a rank whose
// parameters changed in between changed them outside the optimizer.
//
// "Missing" means the parameter took no part in this backward: a hook on each parameter
// notes that autograd computed a gradient for it, so a gradient left defined by zero_grad()
// (or from the step before) is not taken for one. A parameter that cannot take a hook (it
// does not require grad) falls back to "its .grad is undefined".
//
// `light` hashes per gradient-sync bucket and fingerprints parameters every
// `param_fp_every` steps; `full` hashes every tensor and fingerprints every step. Hashes
// read contiguous CPU tensors in place; others are copied first. Nothing here throws.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "probes/session.h"

namespace dsdiag::probes {

struct GradientProbeOptions {
  int64_t param_fp_every = 10;  // light mode; full fingerprints every step
  // The global ranks whose parameters must equal these: the replica set, when the loop
  // reduces its gradients over a data-parallel sub-group (tensor x data parallel; the
  // group's ranks, as probes::records::WriteGroup declares it). Empty: every rank.
  std::vector<int> replicas;
};

class GradientProbe {
 public:
  // `names[i]` names `params[i]`; `buckets` lists parameter indices per gradient-sync
  // bucket in allreduce order (empty: one bucket holding every parameter). Writes the
  // `params` record and puts a participation hook on every parameter.
  GradientProbe(Session* session, std::vector<std::string> names, std::vector<at::Tensor> params,
                std::vector<std::vector<int>> buckets, GradientProbeOptions options = {});
  ~GradientProbe();
  GradientProbe(const GradientProbe&) = delete;
  GradientProbe& operator=(const GradientProbe&) = delete;

  // After backward, before the gradient sync.
  void AfterBackward() noexcept;
  // At the gradient sync's completion: every rank should now hold the same gradients.
  void AfterSync() noexcept;
  // Just before the gradients are used (unscaled, clipped, stepped).
  void BeforeOptimizerStep() noexcept;
  // After the optimizer step of `step`: parameter fingerprints when one is due.
  void AfterOptimizerStep(int64_t step) noexcept;
  // Parameter fingerprints now, labelled `why` ("init", "resume", "periodic", "final").
  void FingerprintParams(std::string_view why) noexcept;

  // The indices of parameters that took no part in the last backward (AfterBackward).
  const std::vector<int>& missing() const { return missing_; }

 private:
  void WriteParamTable() noexcept;
  void HookParameters() noexcept;
  // Whether parameter i took part in the backward since the last AfterBackward.
  bool TookPart(size_t i) const;
  void WriteFingerprints(std::string_view what, std::string_view why, bool grads) noexcept;
  uint64_t HashTensor(const at::Tensor& t) const;

  Session* session_;
  std::vector<std::string> names_;
  std::vector<at::Tensor> params_;
  std::vector<std::vector<int>> buckets_;
  GradientProbeOptions options_;
  // Set by each parameter's hook when autograd computes its gradient; shared with the
  // hooks, which may outlive the probe.
  std::shared_ptr<std::vector<uint8_t>> took_part_;
  std::vector<int64_t> hook_ids_;  // per parameter; -1: no hook (falls back to .grad)
  std::vector<int> missing_;
  std::vector<int> last_written_missing_;
  bool first_backward_ = true;
  bool params_fingerprinted_ = false;  // by the last AfterOptimizerStep
};

}  // namespace dsdiag::probes
