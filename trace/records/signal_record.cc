#include "trace/records/signal_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const SignalRecord& r, JsonLine* line) {
  line->Field(SignalKeys::signal.name(), r.signal).Field(SignalKeys::signo.name(), r.signo);
}

}  // namespace dsdiag::trace::records
