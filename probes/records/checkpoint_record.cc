#include "probes/records/checkpoint_record.h"

#include "probes/probe_timer.h"
#include "probes/session.h"
#include "trace/clock.h"
#include "trace/record_types.h"

namespace dsdiag::probes::records {

void WriteCheckpoint(probes::Session* session, const CheckpointRecord& r) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  {
    // A span record: `ts` is the start, so that checkpoint-race can see overlapping writes.
    auto record = session->writer()->BeginAt(trace::rec::kCheckpoint, trace::MonotonicNs() - r.dur);
    trace::JsonLine& line = record.line();
    line.Field("op", r.op)
        .Field("path", r.path)
        .Field("bytes", r.bytes)
        .Hex("h", r.hash)
        .Field("ckpt_step", r.ckpt_step)
        .Field("epoch", r.epoch)
        .Field("dur", r.dur);
    if (r.op == "load") {
      line.Field("map_location", r.map_location).Field("prefix_stripped", r.prefix_stripped);
      line.BeginArray("missing");
      for (const std::string& name : r.missing) line.Add(name);
      line.EndArray().BeginArray("unexpected");
      for (const std::string& name : r.unexpected) line.Add(name);
      line.EndArray();
    }
  }
  // A checkpoint is an event people look for after a crash: make it durable now.
  session->writer()->Flush();
}

}  // namespace dsdiag::probes::records
