#include "trace/records/step_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {
namespace {

void AppendCollTotals(const StepCollTotals& c, JsonLine* line) {
  using Written = StepCollTotals::Written;
  if (c.written == Written::kNone) return;
  line->BeginObject(StepKeys::coll.name());
  if (c.written == Written::kAll) {
    line->Field(StepCollKeys::n.name(), c.n)
        .Field(StepCollKeys::bytes.name(), c.bytes)
        .Field(StepCollKeys::dur.name(), c.dur);
  }
  line->Field(StepCollKeys::wait.name(), c.wait).EndObject();
}

}  // namespace

void AppendFields(const StepRecord& r, JsonLine* line) {
  using K = StepKeys;
  line->Field(K::dur.name(), r.dur).Field(K::epoch.name(), r.epoch);
  // Losses are often float32 read off a tensor: written in the float's shortest form.
  if (!std::isnan(r.loss)) line->FloatField(K::loss.name(), r.loss);
  if (!std::isnan(r.gloss)) line->FloatField(K::gloss.name(), r.gloss);
  if (!std::isnan(r.lr)) line->Field(K::lr.name(), r.lr);
  line->Field(K::samples.name(), r.samples);
  line->BeginObject(K::phases.name());
  for (size_t i = 0; i < r.phase_count; ++i)
    if (r.phases[i].ns > 0) line->Field(r.phases[i].name, r.phases[i].ns);
  line->EndObject();
  AppendCollTotals(r.coll, line);
  if (!r.pre_step_fp.empty()) line->Field(K::pre_step_fp.name(), r.pre_step_fp);
  if (r.probe_ns >= 0) line->Field(K::probe_ns.name(), r.probe_ns);
}

}  // namespace dsdiag::trace::records
