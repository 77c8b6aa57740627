#include "trace/records/clip_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const ClipRecord& r, JsonLine* line) {
  // A norm read off a float32 tensor (clip_grad_norm_'s) in the float's shortest form.
  line->Field(ClipKeys::unscaled.name(), r.unscaled)
      .FloatField(ClipKeys::norm.name(), r.norm)
      .Field(ClipKeys::max.name(), r.max);
}

}  // namespace dsdiag::trace::records
