#include "trace/records/clock_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const ClockRecord& r, JsonLine* line) {
  line->Field(ClockKeys::when.name(), r.when)
      .Field(ClockKeys::offset.name(), r.offset)
      .Field(ClockKeys::offset_err.name(), r.offset_err)
      .Field(ClockKeys::rtt.name(), r.rtt);
}

}  // namespace dsdiag::trace::records
