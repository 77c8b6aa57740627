// The `clip` record (trace/records/clip_record.h): one gradient clip, whether the gradients
// were already unscaled, the total norm it measured and the threshold. Written by the
// trainer when it clips and by the Python package's clip probe. One branch when probes are
// off. Torch-free.
#pragma once

#include "probes/records/session_fwd.h"

namespace dsdiag::probes::records {

void WriteClip(probes::Session* session, bool unscaled, double norm, double max) noexcept;

}  // namespace dsdiag::probes::records
