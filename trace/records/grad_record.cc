#include "trace/records/grad_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const GradRecord& r, JsonLine* line) {
  line->FloatField(GradKeys::norm.name(), r.norm).Field(GradKeys::n_missing.name(), r.n_missing);
  if (r.missing != nullptr) {
    line->BeginArray(GradKeys::missing.name());
    for (int i : *r.missing) line->Add(i);
    line->EndArray();
  }
  if (r.nonfinite != nullptr && !r.nonfinite->empty()) {
    line->BeginArray(GradKeys::nonfinite.name());
    for (int i : *r.nonfinite) line->Add(i);
    line->EndArray();
  }
}

}  // namespace dsdiag::trace::records
