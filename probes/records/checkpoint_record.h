// The `ckpt` record (trace/records/ckpt_record.h): one checkpoint save or load, a span record
// (`ts` = its start) with the path, size, digest and, for a load, what did not match.
// Written by the trainer after each save and load and by the Python package's checkpoint
// probes, then flushed. One branch when probes are off. Torch-free.
#pragma once

#include "probes/records/session_fwd.h"
#include "trace/records/ckpt_record.h"

namespace dsdiag::probes::records {

using CheckpointRecord = trace::records::CkptRecord;
void WriteCheckpoint(probes::Session* session, const CheckpointRecord& r) noexcept;

}  // namespace dsdiag::probes::records
