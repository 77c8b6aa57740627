#include "trace/records/coll_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const CollRecord& r, JsonLine* line) {
  using K = CollKeys;
  line->Field(K::pg.name(), r.pg)
      .Field(K::seq.name(), r.seq)
      .Field(K::op.name(), r.op)
      .Field(K::dtype.name(), r.dtype)
      .Field(K::n.name(), r.n)
      .Field(K::bytes.name(), r.bytes)
      .Field(K::dur.name(), r.dur)
      .Field(K::tag.name(), r.tag);
  if (r.failed) line->Field(K::failed.name(), true);
}

}  // namespace dsdiag::trace::records
