#include "trace/records/colls_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const CollsRecord& r, JsonLine* line) {
  line->Field(CollsKeys::pg.name(), r.pg).Field(CollsKeys::seq.name(), r.seq);
  line->BeginArray(CollsKeys::at_us.name());
  for (int64_t at : r.at_us) line->Add(at);
  line->EndArray().BeginArray(CollsKeys::dur_us.name());
  for (int64_t dur : r.dur_us) line->Add(dur);
  line->EndArray();
}

}  // namespace dsdiag::trace::records
