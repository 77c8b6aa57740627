#include "trace/records/custom_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const CustomRecord& r, JsonLine* line) {
  line->Field(CustomKeys::name.name(), r.name);
  if (!r.data_json.empty()) line->Raw(CustomKeys::data.name(), r.data_json);
}

}  // namespace dsdiag::trace::records
