#include "trace/records/mark_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const MarkRecord& r, JsonLine* line) {
  line->Field(MarkKeys::name.name(), r.name).Field(MarkKeys::message.name(), r.message);
}

}  // namespace dsdiag::trace::records
