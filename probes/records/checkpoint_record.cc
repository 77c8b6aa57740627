#include "probes/records/checkpoint_record.h"

#include "probes/probe_timer.h"
#include "probes/session.h"
#include "trace/clock.h"

namespace dsdiag::probes::records {

void WriteCheckpoint(probes::Session* session, const CheckpointRecord& r) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  {
    // A span record: `ts` is the start, so that checkpoint-race can see overlapping writes.
    auto record = session->writer()->BeginAt(CheckpointRecord::kType, trace::MonotonicNs() - r.dur);
    AppendFields(r, &record.line());
  }
  // A checkpoint is an event people look for after a crash: make it durable now.
  session->writer()->Flush();
}

}  // namespace dsdiag::probes::records
