// WriteRecord: one record of trace/records/ through the session's writer, timed as a probe
// call; one branch when probes are off. The probes' record functions (scaler_record.h, ...)
// are this with the values they are given: the fields and their spelling live in
// trace/records/, once. Torch-free.
#pragma once

#include "probes/probe_timer.h"
#include "probes/session.h"

namespace dsdiag::probes::records {

template <class R>
void WriteRecord(probes::Session* session, const R& r) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  auto record = session->writer()->Begin(R::kType);
  AppendFields(r, &record.line());
}

}  // namespace dsdiag::probes::records
