#include "trace/records/loader_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const LoaderRecord& r, JsonLine* line) {
  line->Field(LoaderKeys::wait.name(), r.wait);
  if (r.produce >= 0) line->Field(LoaderKeys::produce.name(), r.produce);
  line->Field(LoaderKeys::samples.name(), r.samples);
  if (r.batch != 0) line->Hex(LoaderKeys::batch.name(), r.batch);
}

}  // namespace dsdiag::trace::records
