#include "probes/records/params_record.h"

#include "probes/probe_timer.h"
#include "probes/session.h"
#include "trace/record_types.h"

namespace dsdiag::probes::records {

void WriteParams(probes::Session* session, const ParamsRecord& r) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  auto record = session->writer()->Begin(trace::rec::kParams);
  auto& l = record.line();
  l.BeginArray("names");
  for (const auto& n : r.names) l.Add(n);
  l.EndArray().BeginArray("shapes");
  for (const auto& shape : r.shapes) {
    l.BeginArray();
    for (int64_t d : shape) l.Add(d);
    l.EndArray();
  }
  l.EndArray().BeginArray("dtypes");
  for (const auto& d : r.dtypes) l.Add(d);
  l.EndArray().BeginArray("buckets");
  for (const auto& b : r.buckets) {
    l.BeginArray();
    for (int i : b) l.Add(i);
    l.EndArray();
  }
  l.EndArray();
  if (!r.buffers.empty()) {
    l.BeginArray("buffers");
    for (const auto& n : r.buffers) l.Add(n);
    l.EndArray();
  }
}

}  // namespace dsdiag::probes::records
