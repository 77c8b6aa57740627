// The `scaler` record (trace/records/scaler_record.h): what the fp16 loss scaler saw and did
// in one optimizer step. Written by the trainer after each fp16 step and by the Python
// package's scaler probe. One branch when probes are off. Torch-free.
#pragma once

#include "probes/records/session_fwd.h"
#include "trace/records/scaler_record.h"

namespace dsdiag::probes::records {

using ScalerRecord = trace::records::ScalerRecord;
void WriteScaler(probes::Session* session, const ScalerRecord& r) noexcept;

}  // namespace dsdiag::probes::records
