#include "probes/records/loader_record.h"

#include "probes/probe_timer.h"
#include "probes/session.h"
#include "trace/record_types.h"

namespace dsdiag::probes::records {

void WriteLoader(probes::Session* session, int64_t wait, int64_t produce,
                 int64_t samples) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  auto record = session->writer()->Begin(trace::rec::kLoader);
  trace::JsonLine& line = record.line();
  line.Field("wait", wait);
  if (produce >= 0) line.Field("produce", produce);
  line.Field("samples", samples);
}

}  // namespace dsdiag::probes::records
