#include "trace/records/step_record.h"

#include "trace/json_line.h"
#include "trace/record_types.h"
#include "trace/records/phase_record.h"

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

// v3: the times by their phase's place in kStepOrder, the rest 0; false when a phase with
// time is not in that order (written as an object then).
bool InStepOrder(const PhaseTime* times, size_t n, int64_t (*out)[phase::kStepOrderCount]) {
  for (int64_t& ns : *out) ns = 0;
  for (size_t i = 0; times != nullptr && i < n; ++i) {
    if (times[i].ns <= 0) continue;
    size_t at = 0;
    while (at < phase::kStepOrderCount && phase::kStepOrder[at] != times[i].name) ++at;
    if (at == phase::kStepOrderCount) return false;
    (*out)[at] += times[i].ns;
  }
  return true;
}

// Whole µs, a nonzero time rounded up: a phase that ran never reads 0 (left out).
int64_t CeilUs(int64_t ns) { return ns > 0 ? RoundUpToUs(ns) / 1000 : 0; }

// `phases` is always written (empty without phases); `cpu` and `runq` only when measured.
// In step order as an array of µs under `array_key` (v4), else as an object of ns (v1).
void AppendPhaseTimes(std::string_view key, std::string_view array_key, const PhaseTime* times,
                      size_t n, bool objects, JsonLine* line) {
  int64_t ordered[phase::kStepOrderCount];
  if (!objects && InStepOrder(times, n, &ordered)) {
    size_t end = phase::kStepOrderCount;
    while (end > 0 && ordered[end - 1] == 0) --end;
    line->BeginArray(array_key);
    for (size_t i = 0; i < end; ++i) line->Add(CeilUs(ordered[i]));
    line->EndArray();
    return;
  }
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

double Load(const StepRecord& r) { return r.load >= 0 ? r.load : NAN; }

bool Same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// A double member: left out when unknown, or (v3) when the previous step's; null when it
// became unknown since (v3), which the reader reads as left out.
void AppendDouble(std::string_view key, double v, const double* previous, JsonLine* line) {
  if (previous != nullptr ? Same(v, *previous) : std::isnan(v)) return;
  line->Field(key, v);
}

}  // namespace

StepRepeats RepeatsOf(const StepRecord& r) {
  return StepRepeats{true, r.epoch, r.samples, r.lr, Load(r)};
}

void AppendFields(const StepRecord& r, JsonLine* line) {
  using K = StepKeys;
  const StepRepeats* p = r.previous != nullptr && r.previous->written ? r.previous : nullptr;
  line->Field(K::dur.name(), r.dur);
  if (p == nullptr || r.epoch != p->epoch) line->Field(K::epoch.name(), r.epoch);
  // Losses are often float32 read off a tensor: written in the float's shortest form.
  if (!std::isnan(r.loss)) line->FloatField(K::loss.name(), r.loss);
  if (!std::isnan(r.gloss)) line->FloatField(K::gloss.name(), r.gloss);
  AppendDouble(K::lr.name(), r.lr, p ? &p->lr : nullptr, line);
  if (p == nullptr || r.samples != p->samples) line->Field(K::samples.name(), r.samples);
  AppendPhaseTimes(K::phases.name(), K::phases_us.name(), r.phases, r.phase_count, r.phase_objects,
                   line);
  AppendCollTotals(r.coll, line);
  if (!r.pre_step_fp.empty()) line->Field(K::pre_step_fp.name(), r.pre_step_fp);
  if (r.probe_ns >= 0) line->Field(K::probe_ns.name(), r.probe_ns);
  if (r.cpu != nullptr)
    AppendPhaseTimes(K::cpu.name(), K::cpu_us.name(), r.cpu, r.phase_count, r.phase_objects, line);
  if (r.runq != nullptr)
    AppendPhaseTimes(K::runq.name(), K::runq_us.name(), r.runq, r.phase_count, r.phase_objects,
                     line);
  AppendDouble(K::load.name(), Load(r), p ? &p->load : nullptr, line);
  AppendDeviceTimes(r.dev, line);
}

}  // namespace dsdiag::trace::records
