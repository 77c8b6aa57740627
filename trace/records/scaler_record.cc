#include "trace/records/scaler_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const ScalerRecord& r, JsonLine* line) {
  using K = ScalerKeys;
  line->Field(K::scale.name(), r.scale)
      .Field(K::inf_local.name(), r.inf_local)
      .Field(K::inf_global.name(), r.inf_global)
      .Field(K::skipped.name(), r.skipped);
  if (r.event != nullptr) line->Field(K::event.name(), r.event);
  // Norms read off float32 tensors in the float's shortest form (doubles stay whole).
  line->FloatField(K::norm_scaled.name(), r.norm_scaled).FloatField(K::norm.name(), r.norm);
}

}  // namespace dsdiag::trace::records
