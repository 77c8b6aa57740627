#include "trace/records/end_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const EndRecord& r, JsonLine* line) {
  line->Field(EndKeys::reason.name(), r.reason).Field(EndKeys::status.name(), r.status);
  if (!r.detail.empty())
    line->Field(r.reason == end_reason::kSignal ? EndKeys::signal.name() : EndKeys::error.name(),
                r.detail);
  if (const FatalSignalFields* f = r.fatal) {
    if (!f->origin.empty()) line->Field(EndKeys::origin.name(), f->origin);
    if (f->sender > 0) line->Field(EndKeys::sender.name(), f->sender);
    if (!f->code.empty()) line->Field(EndKeys::code.name(), f->code);
    if (!f->addr.empty()) line->Field(EndKeys::addr.name(), f->addr);
    if (!f->pc.empty()) line->Field(EndKeys::pc.name(), f->pc);
  }
  if (r.probe_ns >= 0) line->Field(EndKeys::probe_ns.name(), r.probe_ns);
}

}  // namespace dsdiag::trace::records
