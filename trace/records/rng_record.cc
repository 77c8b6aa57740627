#include "trace/records/rng_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const RngRecord& r, JsonLine* line) {
  line->Field(RngKeys::stream.name(), r.stream)
      .Field(RngKeys::why.name(), r.why)
      .Field(RngKeys::seed.name(), r.seed)
      .Hex(RngKeys::h.name(), r.state_hash);
}

}  // namespace dsdiag::trace::records
