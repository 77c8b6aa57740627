#include "probes/records/clip_record.h"

#include "probes/probe_timer.h"
#include "probes/session.h"
#include "trace/record_types.h"

namespace dsdiag::probes::records {

void WriteClip(probes::Session* session, bool unscaled, double norm, double max) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  auto record = session->writer()->Begin(trace::rec::kClip);
  record.line().Field("unscaled", unscaled).Field("norm", norm).Field("max", max);
}

}  // namespace dsdiag::probes::records
