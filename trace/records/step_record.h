// The `step` record (docs/trace-format.md, "`step_begin` and `step`"): closes step `step`
// (`ts` = its start, `dur` its wall time) with the loss, learning rate, samples, the time in
// each phase, the step's collective totals and the probes' own time. Written by the session
// (Session::EndStep) and synth; in v2 it may carry `pre_step_fp` and a `coll` of `wait` alone,
// in v3 its per-phase times as arrays in trace::phase::kStepOrder, all of which the reader
// expands (trace/compact_records.h): analyzers read the v1/v2 objects below. Read by the step
// driver, straggler, hang, loader-starvation, rank-died, the timeline and the report.
//
//   {"type":"step","ts":5000,"step":3,"dur":41000000,"epoch":0,"loss":2.31,"lr":0.001,
//    "samples":32,"phases":{"data":1200000,"forward":15000000,...},
//    "coll":{"n":5,"bytes":222472,"dur":9950000,"wait":9610000},"probe_ns":74944,
//    "cpu":{"data":90000,"forward":14800000,...},"runq":{"forward":120000,...},"load":0.52,
//    "dev":{"step":2,"forward":9100000,"backward":19000000,"coll":8800000}}
// `dev` (optional): device time, measured by events on the device's stream and read a step
// late, so it is an earlier step's (its `step`): per phase, and `coll` summed over the step's
// collectives (written by the Python package's device path, python/dsdiag/torch/
// _device_time.py).
//
// v3 writes `"phases":[1200000,15000000,...]`, `"cpu":[90000,14800000,...]`,
// `"runq":[0,120000,...]` (a name costs more than its number; trailing zeros left out), and
// leaves out `epoch`, `lr`, `samples` and `load` where they equal the previous step's. v4
// writes the arrays in whole µs: `"phases_us":[1200,15000,...]`, `"cpu_us"`, `"runq_us"`.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "trace/record.h"
#include "trace/records/span.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct StepKeys {
  static constexpr FieldKey dur = SpanKeys::dur;
  static constexpr FieldKey epoch{"epoch"};
  static constexpr FieldKey loss{"loss"};    // the rank's local loss
  static constexpr FieldKey gloss{"gloss"};  // the loss averaged over ranks, when known
  static constexpr FieldKey lr{"lr"};
  static constexpr FieldKey samples{"samples"};
  static constexpr FieldKey phases{"phases"};            // phase name -> ns (trace::phase)
  static constexpr FieldKey coll{"coll"};                // {"n","bytes","dur","wait"}
  static constexpr FieldKey pre_step_fp{"pre_step_fp"};  // v2: "grad,param" left out as repeats
  static constexpr FieldKey probe_ns{"probe_ns"};  // ns inside probe calls since the last step
  // Per phase, what the scheduler says of the thread that ran it (probes/thread_cpu.h): ns
  // on a CPU, and ns runnable but waiting for one. Left out where unknown.
  static constexpr FieldKey cpu{"cpu"};    // phase name -> ns on a CPU
  static constexpr FieldKey runq{"runq"};  // phase name -> ns in the run queue
  static constexpr FieldKey load{"load"};  // the host's 1-min load average per CPU
  static constexpr FieldKey dev{"dev"};    // {"step": S, phase name or "coll" -> device ns}
  // v4: `phases`, `cpu` and `runq` as arrays of whole µs (each nonzero ns rounded up, so no
  // phase that ran reads 0), which the reader expands back into the objects above. A time
  // in ns carries three digits of scheduler noise that a compressor cannot take out.
  static constexpr FieldKey phases_us{"phases_us"};
  static constexpr FieldKey cpu_us{"cpu_us"};
  static constexpr FieldKey runq_us{"runq_us"};
};
// The members of `dev` besides the times.
struct StepDevKeys {
  static constexpr FieldKey step{"step"};  // the step the times are of (read a step late)
  static constexpr FieldKey coll{"coll"};  // the step's collectives' device ns, summed
};
// The members of `coll`.
struct StepCollKeys {
  static constexpr FieldKey n{"n"};
  static constexpr FieldKey bytes{"bytes"};
  static constexpr FieldKey dur = SpanKeys::dur;
  static constexpr FieldKey wait{"wait"};
};

struct PhaseTime {
  std::string_view name;  // trace::phase
  int64_t ns = 0;         // 0: left out
};

struct StepCollTotals {
  enum class Written { kNone, kWaitOnly, kAll };
  // kNone: the step issued no collective. kWaitOnly (v2): every op is in the step's `colls`
  // records, whose sums the reader puts back.
  Written written = Written::kNone;
  int64_t n = 0, bytes = 0, dur = 0, wait = 0;
};

// Device times of an earlier step (`dev`): `count` named times ("coll" among them), 0 left out.
struct StepDeviceTimes {
  int64_t step = -1;  // negative: `dev` left out
  const PhaseTime* times = nullptr;
  size_t count = 0;
};

// v3: the members a step record leaves out when they equal the previous step record's (the
// reader puts them back, trace/compact_records.h): they change once an epoch, or a second.
struct StepRepeats {
  bool written = false;  // a step record was written before
  int64_t epoch = 0, samples = 0;
  double lr = NAN, load = NAN;  // NaN: unknown (a load below 0 counts as NaN)
};

struct StepRecord {
  static constexpr std::string_view kType = rec::kStep;
  int64_t dur = 0;
  int64_t epoch = 0;
  double loss = NAN;  // NaN: left out (as gloss and lr)
  double gloss = NAN;
  double lr = NAN;
  int64_t samples = 0;
  const PhaseTime* phases = nullptr;  // `phase_count` of them, in order
  size_t phase_count = 0;
  StepCollTotals coll;
  std::string_view pre_step_fp;  // empty: left out
  int64_t probe_ns = -1;         // negative: left out
  // Per phase, like `phases` (`phase_count` of each, 0 left out); null: the object left out.
  const PhaseTime* cpu = nullptr;
  const PhaseTime* runq = nullptr;
  double load = NAN;  // NaN or negative: left out
  StepDeviceTimes dev;
  // The per-phase times as v1/v2 objects rather than v3 arrays (synth writes v1). A phase
  // outside trace::phase::kStepOrder is written so in any case.
  bool phase_objects = false;
  // v3: the previous step record's, whose equal members are left out (a value that became
  // unknown is written as null); null: every member written.
  const StepRepeats* previous = nullptr;
};
void AppendFields(const StepRecord& r, JsonLine* line);
// A step time as the probes write it: ns rounded up to a whole µs (a nonzero time never
// reads 0). The phases' times (v4's `phases_us`), and in ns units `dur`, `coll.wait` and
// `probe_ns`: the three digits below a µs are scheduler noise that no analysis reads (the
// straggler's thresholds are in ms) and that a compressor cannot take out (~5 bytes a
// compressed rank-step for those three).
inline int64_t RoundUpToUs(int64_t ns) { return ns > 0 ? (ns + 999) / 1000 * 1000 : ns; }
// What the next step record may leave out after `r`.
StepRepeats RepeatsOf(const StepRecord& r);

class StepView {
 public:
  explicit StepView(const Record& r) : r_(r) {}
  std::optional<int64_t> dur() const { return r_.Int(StepKeys::dur); }
  std::optional<int64_t> epoch() const { return r_.Int(StepKeys::epoch); }
  std::optional<double> loss() const { return r_.Double(StepKeys::loss); }
  std::optional<double> gloss() const { return r_.Double(StepKeys::gloss); }
  std::optional<double> lr() const { return r_.Double(StepKeys::lr); }
  std::optional<int64_t> samples() const { return r_.Int(StepKeys::samples); }
  // The phases' times, as Record::NumberMembers (reuse *out to allocate nothing per step).
  bool phases(std::vector<Record::NumberMember>* out) const {
    return r_.NumberMembers(StepKeys::phases, out);
  }
  bool coll(std::vector<Record::NumberMember>* out) const {
    return r_.NumberMembers(StepKeys::coll, out);
  }
  std::optional<JsonValue> coll_value() const { return r_.Value(StepKeys::coll); }
  std::optional<std::string_view> pre_step_fp() const { return r_.Str(StepKeys::pre_step_fp); }
  std::optional<int64_t> probe_ns() const { return r_.Int(StepKeys::probe_ns); }
  // Per phase CPU and run-queue ns, as `phases` (false when the record has none).
  bool cpu(std::vector<Record::NumberMember>* out) const {
    return r_.NumberMembers(StepKeys::cpu, out);
  }
  bool runq(std::vector<Record::NumberMember>* out) const {
    return r_.NumberMembers(StepKeys::runq, out);
  }
  std::optional<double> load() const { return r_.Double(StepKeys::load); }
  // `dev`'s members: "step" and the device times (false when the record has none).
  bool dev(std::vector<Record::NumberMember>* out) const {
    return r_.NumberMembers(StepKeys::dev, out);
  }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
