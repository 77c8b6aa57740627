#include "trace/records/clip_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const ClipRecord& r, JsonLine* line) {
  line->Field(ClipKeys::unscaled.name(), r.unscaled)
      .Field(ClipKeys::norm.name(), r.norm)
      .Field(ClipKeys::max.name(), r.max);
}

}  // namespace dsdiag::trace::records
