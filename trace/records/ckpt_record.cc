#include "trace/records/ckpt_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const CkptRecord& r, JsonLine* line) {
  using K = CkptKeys;
  line->Field(K::op.name(), r.op)
      .Field(K::path.name(), r.path)
      .Field(K::bytes.name(), r.bytes)
      .Hex(K::h.name(), r.hash)
      .Field(K::ckpt_step.name(), r.ckpt_step)
      .Field(K::epoch.name(), r.epoch)
      .Field(K::dur.name(), r.dur);
  if (r.op != kCkptLoad) return;
  line->Field(K::map_location.name(), r.map_location)
      .Field(K::prefix_stripped.name(), r.prefix_stripped);
  line->BeginArray(K::missing.name());
  for (const std::string& name : r.missing) line->Add(name);
  line->EndArray().BeginArray(K::unexpected.name());
  for (const std::string& name : r.unexpected) line->Add(name);
  line->EndArray();
}

}  // namespace dsdiag::trace::records
