#include "probes/records/p2p_record.h"

#include "probes/session.h"
#include "trace/records/p2p_record.h"

namespace dsdiag::probes::records {

void WriteP2P(probes::Session* session, const P2PMessageRecord& m) noexcept {
  trace::records::P2PRecord r;
  r.pg = m.pg;
  r.op = m.op;
  r.peer = m.peer;
  r.group_peer = m.group_peer;
  r.seq = m.seq;
  r.match_tag = m.match_tag;
  r.dtype = m.dtype;
  r.n = m.count;
  r.bytes = m.bytes;
  r.dur = m.done_ns - m.enter_ns;
  r.tag = m.tag;
  r.failed = m.failed;
  auto record = session->writer()->BeginAt(r.kType, m.enter_ns);
  AppendFields(r, &record.line());
}

}  // namespace dsdiag::probes::records
