#include "probes/records/collective_record.h"

#include "probes/session.h"
#include "trace/record_types.h"

namespace dsdiag::probes::records {

void WriteCollective(probes::Session* session, const CollectiveRecord& c) noexcept {
  const int64_t dur = c.done_ns - c.enter_ns;
  session->CountCollective(c.bytes, dur, c.started_ns ? c.done_ns - c.started_ns : dur);
  auto record = session->writer()->BeginAt(trace::rec::kCollective, c.enter_ns);
  auto& l = record.line();
  l.Field("pg", c.pg)
      .Field("seq", c.seq)
      .Field("op", c.op)
      .Field("dtype", c.dtype)
      .Field("n", c.count)
      .Field("bytes", c.bytes)
      .Field("dur", dur)
      .Field("tag", c.tag);
  if (c.failed) l.Field("failed", true);
}

}  // namespace dsdiag::probes::records
