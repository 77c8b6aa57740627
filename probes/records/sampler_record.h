// The `sampler` record (trace/records/sampler_record.h): the samples a rank draws in an
// epoch, as an order-sensitive hash, an order-insensitive digest, optionally the indices
// (full mode) and the exact membership bitmap. Written by the trainer's data stream at each
// epoch start and by the Python package's sampler probe. One branch when probes are off.
// Torch-free.
#pragma once

#include "probes/records/session_fwd.h"
#include "trace/records/sampler_record.h"

namespace dsdiag::probes::records {

using SamplerRecord = trace::records::SamplerRecord;
using trace::records::kMaxBitmapSize;
void WriteSampler(probes::Session* session, const SamplerRecord& r) noexcept;

}  // namespace dsdiag::probes::records
