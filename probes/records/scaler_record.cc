#include "probes/records/scaler_record.h"

#include "probes/probe_timer.h"
#include "probes/session.h"
#include "trace/record_types.h"

namespace dsdiag::probes::records {

void WriteScaler(probes::Session* session, const ScalerRecord& r) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  auto record = session->writer()->Begin(trace::rec::kScaler);
  trace::JsonLine& line = record.line();
  line.Field("scale", r.scale)
      .Field("inf_local", r.inf_local)
      .Field("inf_global", r.inf_global)
      .Field("skipped", r.skipped);
  if (r.event != nullptr) line.Field("event", r.event);
  line.Field("norm_scaled", r.norm_scaled).Field("norm", r.norm);
}

}  // namespace dsdiag::probes::records
