// Hand-written runs for the collective analyzers (straggler, collective-mismatch, hang):
// ranks whose steps and collectives happen at chosen times on a shared "true" clock, each
// rank writing them on its own monotonic clock (its own boot time and, optionally, a skewed
// wall clock), plus watchdog errors and flight-recorder dumps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/analyzers/test_run.h"
#include "tests/support/step_trace.h"
#include "trace/json_line.h"
#include "trace/record_types.h"
#include "trace/records/clock_record.h"
#include "trace/records/coll_record.h"
#include "trace/records/phase_record.h"
#include "trace/records/step_begin_record.h"
#include "trace/records/step_record.h"
#include "trace/run_files.h"

namespace dsdiag::analyzers::testing {

inline constexpr int64_t kUs = 1000;
inline constexpr int64_t kMs = 1000 * kUs;
inline constexpr int64_t kSec = 1000 * kMs;
inline constexpr int64_t kWall0 = int64_t{1767225600} * kSec;  // rank 0's wall clock at t = 0
inline constexpr int64_t kStepPeriod = 100 * kMs;              // steps start every 100 ms

// How a rank's clocks relate to the true time t (ns since the run's start).
struct RankClockSpec {
  int64_t boot = 0;  // its CLOCK_MONOTONIC reads t + boot
  int64_t skew = 0;  // its wall clock runs this far ahead of rank 0's
  // Where the measured offset is written: in the header, or only in a later `clock` record
  // (the header then says "not measured": offset 0, offset_err -1).
  bool offset_in_header = true;
  bool clock_record = true;  // a `clock` record with the measured offset, after the header

  int64_t Local(int64_t t) const { return t + boot; }
};

// The phases of one step, ns. A longer data, forward or backward delays every allreduce.
struct StepShape {
  int64_t before_data = 0;  // time at the step's start in no phase (no figure covers it)
  int64_t data = 1 * kMs;
  int64_t forward = 15 * kMs;
  int64_t backward = 22 * kMs;
  int64_t sync = 1 * kMs;  // waiting for the others' gradients included
  int64_t optimizer = 2 * kMs;
  int64_t checkpoint = 0;
  // What the scheduler says (the `step` record's `cpu` and `runq`), written when `sched`:
  // every phase ran on a CPU all its wall time, but `sync` (blocked) and backward, which
  // waited `backward_runq` for a core and was blocked `backward_blocked`.
  bool sched = false;
  int64_t backward_runq = 0;
  int64_t backward_blocked = 0;
  // Run-queue time the figures give the backward beyond its wall time (on a contended core
  // the scheduler's accounting lags: CPU and run-queue times can add up to more).
  int64_t backward_runq_overcount = 0;
  double host_load = 0;  // the `step` record's `load`; 0: 1.5 with run-queue time, else 0.5
  // Device time (the `step` record's `dev`, of the step before), written when `device`: the
  // host phases' times, plus `device_forward` more in the forward.
  bool device = false;
  int64_t device_forward = 0;
};

// A small deterministic jitter in [-amplitude, amplitude].
inline int64_t Jitter(int rank, int64_t step, int salt, int64_t amplitude) {
  uint64_t x = static_cast<uint64_t>(rank) * 0x9E3779B97F4A7C15ull ^
               static_cast<uint64_t>(step + 1) * 0xC2B2AE3D27D4EB4Full ^
               static_cast<uint64_t>(salt + 7) * 0x165667B19E3779F9ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  const int64_t span = 2 * amplitude + 1;
  return amplitude == 0 ? 0 : static_cast<int64_t>(x % static_cast<uint64_t>(span)) - amplitude;
}

struct RankSpec {
  int rank = 0;
  int world_size = 2;
  int steps = 10;
  int buckets = 3;
  RankClockSpec clock;
  int64_t jitter = 300 * kUs;  // on each phase
  // The step's shape on this rank (default: StepShape{}).
  std::function<StepShape(int64_t step)> shape;
  // Collectives before the first step (an initial broadcast), entered at this true time.
  std::optional<int64_t> broadcast_at;
  bool end = true;
};

// One allreduce-like `coll` record entered at rank-local `ts`.
inline void WriteColl(trace::TraceWriter* w, int64_t ts, int pg, int64_t seq,
                      std::string_view op = "allreduce", std::string_view dtype = "f32",
                      int64_t n = 65536, std::string_view tag = "grad-bucket-0",
                      int64_t dur = 1 * kMs, const trace::PeerCounts* counts = nullptr) {
  trace::records::CollRecord c;
  c.pg = pg;
  c.seq = seq;
  c.op = op;
  c.dtype = dtype;
  c.count = n;
  c.bytes = 4 * n;
  c.dur = dur;
  c.tag = tag;
  c.counts = counts;
  AppendFields(c, &w->BeginAt(c.kType, ts).line());
}

inline void WritePhase(trace::TraceWriter* w, int64_t ts, std::string_view name, int64_t dur) {
  trace::records::PhaseRecord p;
  p.name = name;
  p.dur = dur;
  AppendFields(p, &w->BeginAt(p.kType, ts).line());
}

// Writes a whole rank: header (clock per spec), steps, end "ok". Step s starts at true time
// s * kStepPeriod; its allreduces (pg 0, seq s * buckets + k) enter during backward.
inline void WriteRank(TestRun* run, const RankSpec& spec) {
  trace::TraceHeader h = TestRun::Header(spec.rank, spec.world_size);
  h.config.Set("steps", spec.steps);
  h.clock.mono_ns = spec.clock.Local(0);
  h.clock.wall_ns = kWall0 + spec.clock.skew;
  h.clock.offset_ns = spec.clock.offset_in_header ? spec.clock.skew : 0;
  h.clock.offset_err_ns = spec.clock.offset_in_header ? 5 * kUs : -1;
  auto w = run->Open(h);
  const RankClockSpec& c = spec.clock;
  if (c.clock_record) {
    trace::records::ClockRecord clock;
    clock.when = "start";
    clock.offset = c.skew;
    clock.offset_err = 5 * kUs;
    clock.rtt = 10 * kUs;
    AppendFields(clock, &w->BeginAt(clock.kType, c.Local(1 * kMs)).line());
  }
  if (spec.broadcast_at) {
    WriteColl(w.get(), c.Local(*spec.broadcast_at), 0, 0, "broadcast", "f32", 1024, "broadcast");
  }
  const int64_t first_seq = spec.broadcast_at ? 1 : 0;
  for (int64_t s = 0; s < spec.steps; ++s) {
    const StepShape shape = spec.shape ? spec.shape(s) : StepShape{};
    auto j = [&](int salt) { return Jitter(spec.rank, s, salt, spec.jitter); };
    const int64_t start = 10 * kMs + s * kStepPeriod;
    const int64_t data = shape.data + j(0);
    const int64_t forward = shape.forward + j(1);
    const int64_t backward = shape.backward + j(2);
    const int64_t ckpt = shape.checkpoint;
    namespace phase = trace::phase;
    test_support::StepTrace step(s, start);  // planned on the true time, written on the rank's
    int64_t t = start + shape.before_data;
    if (ckpt) {
      step.Phase(phase::kCheckpoint, t, ckpt);
      t += ckpt;
    }
    step.Phase(phase::kData, t, data);
    t += data;
    step.Phase(phase::kForward, t, forward);
    t += forward;
    for (int k = 0; k < spec.buckets; ++k) {
      trace::records::CollRecord coll;
      coll.seq = first_seq + s * spec.buckets + k;
      coll.op = "allreduce";
      coll.dtype = "f32";
      coll.count = 65536;
      coll.bytes = 4 * coll.count;
      coll.dur = 1 * kMs;
      const std::string tag = "grad-bucket-" + std::to_string(k);
      coll.tag = tag;
      step.Coll(coll, t + backward * (k + 1) / spec.buckets);
    }
    step.Phase(phase::kBackward, t, backward);
    t += backward;
    const int64_t sync = shape.sync;
    step.Phase(phase::kSync, t, sync);
    step.Phase(phase::kOptimizer, t + sync, shape.optimizer);
    const trace::records::PhaseTime cpu[] = {
        {phase::kData, data},
        {phase::kForward, forward},
        {phase::kBackward, backward - shape.backward_runq - shape.backward_blocked},
        {phase::kSync, 0},
        {phase::kOptimizer, shape.optimizer},
        {phase::kCheckpoint, ckpt}};
    const trace::records::PhaseTime runq[] = {
        {phase::kData, 0},
        {phase::kForward, 0},
        {phase::kBackward, shape.backward_runq + shape.backward_runq_overcount},
        {phase::kSync, 0},
        {phase::kOptimizer, 0},
        {phase::kCheckpoint, 0}};
    const trace::records::PhaseTime dev[] = {{phase::kForward, forward + shape.device_forward},
                                             {phase::kBackward, backward},
                                             {phase::kOptimizer, shape.optimizer}};
    trace::records::StepRecord& record = step.record();
    if (shape.device && s > 0) record.dev = {s - 1, dev, 3};
    record.dur = t + sync + shape.optimizer - start;
    record.loss = 2.0;
    if (shape.sched) {
      record.cpu = cpu;
      record.runq = runq;
      record.load = shape.host_load > 0 ? shape.host_load : shape.backward_runq > 0 ? 1.5 : 0.5;
    }
    step.Write(w.get(), [&c](int64_t planned) { return c.Local(planned); });
  }
  if (spec.end) {
    w->SetStep(spec.steps);
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
}

}  // namespace dsdiag::analyzers::testing
