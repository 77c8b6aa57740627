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

// `phases` is always written (empty without phases); `cpu` and `runq` only when measured.
void AppendPhaseTimes(std::string_view key, const PhaseTime* times, size_t n, JsonLine* line) {
  line->BeginObject(key);
  for (size_t i = 0; times != nullptr && i < n; ++i)
    if (times[i].ns > 0) line->Field(times[i].name, times[i].ns);
  line->EndObject();
}

void AppendDeviceTimes(const StepDeviceTimes& d, JsonLine* line) {
  if (d.step < 0) return;
  line->BeginObject(StepKeys::dev.name()).Field(StepDevKeys::step.name(), d.step);
  for (size_t i = 0; d.times != nullptr && i < d.count; ++i)
    if (d.times[i].ns > 0) line->Field(d.times[i].name, d.times[i].ns);
  line->EndObject();
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
  AppendPhaseTimes(K::phases.name(), r.phases, r.phase_count, line);
  AppendCollTotals(r.coll, line);
  if (!r.pre_step_fp.empty()) line->Field(K::pre_step_fp.name(), r.pre_step_fp);
  if (r.probe_ns >= 0) line->Field(K::probe_ns.name(), r.probe_ns);
  if (r.cpu != nullptr) AppendPhaseTimes(K::cpu.name(), r.cpu, r.phase_count, line);
  if (r.runq != nullptr) AppendPhaseTimes(K::runq.name(), r.runq, r.phase_count, line);
  if (r.load >= 0) line->Field(K::load.name(), r.load);
  AppendDeviceTimes(r.dev, line);
}

}  // namespace dsdiag::trace::records
