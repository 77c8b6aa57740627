#include "trace/records/p2p_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const P2PRecord& r, JsonLine* line) {
  using K = P2PKeys;
  line->Field(K::pg.name(), r.pg).Field(K::op.name(), r.op).Field(K::peer.name(), r.peer);
  if (r.group_peer != r.peer) line->Field(K::group_peer.name(), r.group_peer);
  line->Field(K::seq.name(), r.seq);
  if (r.match_tag != 0) line->Field(K::match_tag.name(), r.match_tag);
  line->Field(K::dtype.name(), r.dtype)
      .Field(K::count.name(), r.count)
      .Field(K::bytes.name(), r.bytes)
      .Field(K::dur.name(), r.dur)
      .Field(K::tag.name(), r.tag);
  if (r.failed) line->Field(K::failed.name(), true);
  if (r.site != 0) line->Field(K::site.name(), r.site);
}

}  // namespace dsdiag::trace::records
