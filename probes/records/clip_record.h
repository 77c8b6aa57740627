// The `clip` record (docs/trace-format.md): one gradient clip, whether the gradients were
// already unscaled, the total norm it measured and the threshold. Written by the trainer
// when it clips. One branch when probes are off. Torch-free.
#pragma once

#include "probes/records/session_fwd.h"

namespace dsdiag::probes::records {

void WriteClip(probes::Session* session, bool unscaled, double norm, double max) noexcept;

}  // namespace dsdiag::probes::records
