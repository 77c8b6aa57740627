#include "probes/records/p2p_record.h"

#include "probes/session.h"
#include "trace/records/p2p_record.h"

namespace dsdiag::probes::records {

void WriteP2P(probes::Session* session, const P2PMessageRecord& p) noexcept {
  const PeerMessage& m = *p.m;
  trace::records::P2PRecord r;
  r.pg = m.pg;
  r.op = m.what.op;
  r.peer = m.peer;
  r.group_peer = m.group_peer;
  r.seq = p.seq;
  r.match_tag = m.match_tag;
  r.dtype = m.what.dtype;
  r.count = m.what.count;
  r.bytes = m.what.bytes;
  r.dur = p.done_ns - p.enter_ns;
  r.tag = m.what.tag;
  r.failed = p.failed;
  r.site = m.what.site;
  auto record = session->writer()->BeginAt(r.kType, p.enter_ns);
  AppendFields(r, &record.line());
}

}  // namespace dsdiag::probes::records
