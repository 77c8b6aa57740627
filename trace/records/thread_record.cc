#include "trace/records/thread_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const ThreadRecord& r, JsonLine* line) {
  line->Field(ThreadKeys::name.name(), r.name);
}

}  // namespace dsdiag::trace::records
