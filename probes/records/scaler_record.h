// The `scaler` record (docs/trace-format.md): what the fp16 loss scaler saw and did in one
// optimizer step (scale, local and reduced overflow, skipped step, growth or backoff, the
// gradient norm before and after unscaling). Written by the trainer after each fp16 step.
// One branch when probes are off. Torch-free.
#pragma once

#include "probes/records/session_fwd.h"

namespace dsdiag::probes::records {

struct ScalerRecord {
  double scale = 1;             // the scale this step's loss was multiplied by
  bool inf_local = false;       // this rank's gradients overflowed
  bool inf_global = false;      // some rank's did (the reduced flag)
  bool skipped = false;         // the optimizer step was skipped
  const char* event = nullptr;  // "growth", "backoff" or null
  double norm_scaled = 0;       // global norm of the synced, still scaled gradients
  double norm = 0;              // the same, unscaled
};
void WriteScaler(probes::Session* session, const ScalerRecord& r) noexcept;

}  // namespace dsdiag::probes::records
