#include "trace/records/phase_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const PhaseRecord& r, JsonLine* line) {
  line->Field(PhaseKeys::name.name(), r.name).Field(PhaseKeys::dur.name(), r.dur);
}

}  // namespace dsdiag::trace::records
