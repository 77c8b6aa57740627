#include "trace/records/step_begin_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const StepBeginRecord& r, JsonLine* line) {
  line->Field(StepBeginKeys::epoch.name(), r.epoch);
}

}  // namespace dsdiag::trace::records
