#include "probes/records/collective_record.h"

#include <exception>

#include "probes/session.h"

namespace dsdiag::probes::records {

void WriteCollective(probes::Session* session, const CollectiveRecord& c) noexcept {
  const int64_t dur = c.done_ns - c.enter_ns;
  session->CountCollective(c.what->bytes, dur, c.started_ns ? c.done_ns - c.started_ns : dur);
  try {
    session->collective_steps()->Write(session, c);
  } catch (const std::exception&) {  // out of memory holding the op: the record is lost
  }
}

}  // namespace dsdiag::probes::records
