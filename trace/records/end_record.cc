#include "trace/records/end_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const EndRecord& r, JsonLine* line) {
  line->Field(EndKeys::reason.name(), r.reason).Field(EndKeys::status.name(), r.status);
  if (!r.detail.empty())
    line->Field(r.reason == "signal" ? EndKeys::signal.name() : EndKeys::error.name(), r.detail);
  if (r.probe_ns >= 0) line->Field(EndKeys::probe_ns.name(), r.probe_ns);
}

}  // namespace dsdiag::trace::records
