#include "trace/records/error_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const ErrorRecord& r, JsonLine* line) {
  using K = ErrorKeys;
  line->Field(K::where.name(), r.where).Field(K::message.name(), r.message);
  if (!r.names_collective) return;
  line->Field(K::pg.name(), r.pg)
      .Field(K::seq.name(), r.seq)
      .Field(K::op.name(), r.op)
      .Field(K::tag.name(), r.tag);
}

void AppendFields(const StoreUnreachableRecord& r, JsonLine* line) {
  using K = ErrorKeys;
  line->Field(K::where.name(), "store")
      .Field(K::message.name(), r.message)
      .Field(K::store_unreachable.name(), true)
      .Field(K::store.name(), r.store)
      .Field(K::tried_ms.name(), r.tried_ms);
  if (!r.store_error.empty()) line->Field(K::store_error.name(), r.store_error);
}

}  // namespace dsdiag::trace::records
