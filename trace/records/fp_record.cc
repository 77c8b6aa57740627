#include "trace/records/fp_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const FpRecord& r, JsonLine* line) {
  line->Field(FpKeys::what.name(), r.what)
      .Field(FpKeys::why.name(), r.why)
      .Field(FpKeys::gran.name(), r.per_param ? kGranParam : kGranBucket);
  if (!r.fn.empty()) line->Field(FpKeys::fn.name(), r.fn);
  line->BeginArray(FpKeys::h.name());
  if (r.hashes != nullptr)
    for (uint64_t h : *r.hashes) line->AddHex(h);
  line->EndArray();
}

void AppendFields(const FpSameRecord& r, JsonLine* line) {
  line->Field(FpKeys::what.name(), r.what)
      .Field(FpKeys::why.name(), r.why)
      .Field(FpKeys::same.name(), r.same);
}

}  // namespace dsdiag::trace::records
