#include "synth/rank_trace.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "synth/noise.h"
#include "trace/flight_dump.h"
#include "trace/flight_dump_keys.h"
#include "trace/record_types.h"
#include "trace/records/clock_record.h"
#include "trace/records/coll_record.h"
#include "trace/records/end_record.h"
#include "trace/records/error_record.h"
#include "trace/records/fp_record.h"
#include "trace/records/grad_record.h"
#include "trace/records/phase_record.h"
#include "trace/records/record_line.h"
#include "trace/records/step_begin_record.h"
#include "trace/records/step_record.h"
#include "trace/trace_header.h"

namespace dsdiag::synth {
namespace {

namespace end_reason = trace::records::end_reason;
namespace fp_what = trace::records::fp_what;
namespace fp_why = trace::records::fp_why;
namespace phase = trace::phase;
namespace records = trace::records;

constexpr size_t kDrainBytes = size_t{4} << 20;
constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1000 * kUs;

// Noise slots for values (time_model.cc uses the low slots of the same keys).
enum ValueSlot : uint32_t {
  kSlotLoss = 1000,
  kSlotNorm,
  kSlotDetect,
  kSlotPid,
  kSlotGradFp,
  kSlotParamFp
};

// The trainer fingerprints parameters every this many steps (light mode's default).
constexpr int64_t kParamFpEvery = 10;

// What makes one rank's hash differ from the shared one: a function of the rank only.
uint64_t RankSalt(int rank, uint64_t what) { return Mix(Mix(what) ^ static_cast<uint64_t>(rank)); }

// The elements of a bucket's allreduce. collective-mismatch: the rank's first allreduce of
// that step has half as many (the run goes on, as if the backend had not noticed).
int64_t Numel(const RunFacts& run, int rank, int64_t step, int bucket) {
  const int64_t n = run.params->buckets()[bucket].numel;
  return bucket == 0 && run.faults->CollectiveMismatch(rank, step) ? n / 2 : n;
}

// Four decimals: the shortest repr of the result is at most that long.
double Round4(double v) { return std::round(v * 1e4) / 1e4; }

class Renderer {
 public:
  Renderer(const RunFacts& run, int rank, std::string* out)
      : run_(run), model_(*run.model), rank_(rank), out_(out), buckets_(model_.buckets()) {
    for (int k = 0; k < buckets_; ++k) tags_.push_back("grad-bucket-" + std::to_string(k));
  }

  void Render(const Drain& drain) {
    Header();
    Write(run_.params->table(), model_.ParamsTime(rank_), 0);
    Fingerprint(fp_what::kParam, fp_why::kInit, model_.ParamsTime(rank_), 0);
    Clock("start", model_.ClockTime(rank_), 0);
    const std::optional<Stop>& stop = run_.faults->stop();
    int64_t start = model_.FirstStepStart(rank_);
    for (int64_t step = 0; step < run_.steps; ++step) {
      if (stop && step == stop->step) {
        StoppedStep(*stop, start);
        drain(out_);
        return;
      }
      start = Step(step, start);
      if (out_->size() >= kDrainBytes) drain(out_);
    }
    const int64_t end = start + 2 * kMs;
    Fingerprint(fp_what::kParam, fp_why::kFinal, start + kMs, run_.steps);
    Clock("end", end, run_.steps);
    End(run_.steps, end + kMs, end_reason::kOk, 0, "");
    drain(out_);
  }

 private:
  int64_t Mono(int64_t t) const { return model_.Mono(rank_, t); }

  // One record at time `t` of the run (this rank's clock is Mono(t)).
  template <class R>
  void Write(const R& record, int64_t t, int64_t step) {
    records::AppendRecordLine(record, records::At{Mono(t), step}, out_);
  }

  void Header() {
    trace::TraceHeader h;
    h.schema = std::string(trace::kSchemaV1);
    h.run_id = run_.run_id;
    h.rank = rank_;
    h.world_size = run_.ranks;
    h.local_rank = rank_ % kRanksPerHost;
    h.host = "synth-host-" + std::to_string(rank_ / kRanksPerHost);
    h.pid = 1000 + static_cast<int64_t>(Noise(model_.seed(), rank_, -1).Bits(kSlotPid) % 60000);
    h.versions["dsdiag"] = DSDIAG_VERSION;
    h.env["OMP_NUM_THREADS"] = "1";
    h.config = run_.config;
    if (run_.faults->ConfigMismatch(rank_)) {
      // Launched by another script: its own batch size and environment (its local_rank and
      // host differ anyway, as every rank's do).
      h.config.Set("batch_size", BatchSize());
      h.env["OMP_NUM_THREADS"] = "4";
      h.env["NCCL_DEBUG"] = "INFO";
    }
    const int64_t launch = model_.LaunchTime(rank_);
    h.clock.mono_ns = Mono(launch);
    h.clock.wall_ns = model_.Wall(rank_, launch);
    h.clock.offset_ns = model_.MeasuredOffset(rank_);
    h.clock.offset_err_ns = model_.OffsetErr(rank_);
    trace::AppendHeaderRecord(h, h.clock.mono_ns, out_);
  }

  void Clock(std::string_view when, int64_t t, int64_t step) {
    records::ClockRecord clock;
    clock.when = when;
    clock.offset = model_.MeasuredOffset(rank_);
    clock.offset_err = model_.OffsetErr(rank_);
    clock.rtt = 2 * clock.offset_err;
    Write(clock, t, step);
  }

  // One whole step; returns when the next one starts.
  int64_t Step(int64_t step, int64_t start) {
    const StepWork w = model_.Work(rank_, step, start);
    std::array<int64_t, kMaxBuckets> exit{};
    for (int k = 0; k < buckets_; ++k) exit[k] = run_.schedule->ExitOn(model_, rank_, step, k);

    StepBegin(step, w.start);
    Phase(step, phase::kData, w.start, w.data_end);
    Phase(step, phase::kForward, w.data_end, w.forward_end);
    // Records appear when they are written: an allreduce's when it completes.
    int k = 0;
    for (; k < buckets_ && exit[k] <= w.backward_end; ++k) Coll(step, k, w.enter[k], exit[k]);
    Phase(step, phase::kBackward, w.forward_end, w.backward_end);
    Grad(step, w.backward_end);
    for (; k < buckets_; ++k) Coll(step, k, w.enter[k], exit[k]);
    const StepEnd e = model_.End(w, exit[buckets_ - 1]);
    // At the allreduce's completion every rank agrees; a rank-local edit shows before the step.
    Fingerprint(fp_what::kGrad, fp_why::kAfterSync, e.sync_end, step);
    Fingerprint(fp_what::kGrad, fp_why::kPreStep, e.sync_end, step);
    // The probe fingerprints the parameters again before the step after a periodic one.
    if (step > 0 && (step - 1) % kParamFpEvery == 0)
      Fingerprint(fp_what::kParam, fp_why::kPreStep, e.sync_end, step);
    Phase(step, phase::kSync, w.backward_end, e.sync_end);
    Phase(step, phase::kOptimizer, e.sync_end, e.optimizer_end);
    if (step % kParamFpEvery == 0)
      Fingerprint(fp_what::kParam, fp_why::kPeriodic, e.optimizer_end, step);
    StepRecord(step, w, e, exit);
    return e.next_start;
  }

  // The step where a crash or hang stops the run.
  void StoppedStep(const Stop& stop, int64_t start) {
    const int64_t step = stop.step;
    const StepWork w = model_.Work(rank_, step, start);
    StepBegin(step, w.start);
    Phase(step, phase::kData, w.start, w.data_end);
    if (rank_ == stop.rank) {
      // Died or stuck in backward. A SIGKILL catches the writer mid-record.
      if (stop.kind == Stop::Kind::kCrash) {
        TruncatedPhase(step, phase::kForward, w);
      } else {
        Phase(step, phase::kForward, w.data_end, w.forward_end);
      }
      return;
    }
    Phase(step, phase::kForward, w.data_end, w.forward_end);
    Phase(step, phase::kBackward, w.forward_end, w.backward_end);
    Grad(step, w.backward_end);
    // Every bucket was issued during backward; the first never completes.
    const int64_t seq = step * buckets_;
    const std::string what = "allreduce pg 0 seq " + std::to_string(seq) + " (" + tags_[0] + ")";
    if (stop.kind == Stop::Kind::kCrash) {
      // The peer's socket closes when it dies; the error surfaces in the wait (sync).
      const Noise n(model_.seed(), rank_, step);
      const int64_t detect = std::max(w.backward_end, run_.stop_time) + kMs +
                             static_cast<int64_t>(n.Uniform(kSlotDetect) * 500 * kUs);
      const std::string message = what + " failed: connection closed by peer synth-host-" +
                                  std::to_string(stop.rank / kRanksPerHost);
      Phase(step, phase::kSync, w.backward_end, detect);
      Error(step, detect, message, seq);
      End(step, detect + 200 * kUs, end_reason::kPeerFailure, 1, message);
    } else {
      // The watchdog gives up on the oldest pending collective and dumps the recorder.
      const int64_t fire = w.enter[0] + kTimeoutNs;
      const std::string message = "collective timeout: " + what + " not completed after " +
                                  std::to_string(kTimeoutNs / 1000000000) + " s";
      Error(step, fire, message, seq);
      End(step, fire + kMs, end_reason::kError, 1, message);
    }
  }

  void TruncatedPhase(int64_t step, std::string_view name, const StepWork& w) {
    std::string record;
    std::string* const file = out_;
    out_ = &record;
    Phase(step, name, w.data_end, w.forward_end);
    out_ = file;
    out_->append(record, 0, record.size() / 2);  // no newline: the line is cut short
  }

  void StepBegin(int64_t step, int64_t t) {
    records::StepBeginRecord begin;
    begin.epoch = step / kStepsPerEpoch;
    Write(begin, t, step);
  }

  void Phase(int64_t step, std::string_view name, int64_t from, int64_t to) {
    records::PhaseRecord phase;
    phase.name = name;
    phase.dur = to - from;
    Write(phase, from, step);
  }

  void Coll(int64_t step, int bucket, int64_t enter, int64_t exit) {
    records::CollRecord coll;
    coll.pg = 0;
    coll.seq = step * buckets_ + bucket;
    coll.op = "allreduce";
    coll.dtype = "f32";
    coll.count = Numel(run_, rank_, step, bucket);
    coll.bytes = 4 * coll.count;
    coll.dur = exit - enter;
    coll.tag = tags_[bucket];
    Write(coll, enter, step);
  }

  // The local gradient norm before sync, falling as training converges. `missing` is
  // written on the first step (the baseline set) and would be again if the set changed.
  void Grad(int64_t step, int64_t t) {
    const Noise n(model_.seed(), rank_, step);
    const double decay = std::exp(-static_cast<double>(step) / Tau());
    const double norm = Round4((1.6 * decay + 0.45) * (1.0 + 0.08 * n.Symmetric(kSlotNorm)));
    const bool unused = run_.faults->UnusedParams(rank_);
    static const std::vector<int> kNone;
    records::GradRecord grad;
    grad.norm = norm;
    grad.n_missing = unused ? static_cast<int64_t>(run_.unused_params.size()) : 0;
    if (step == 0) grad.missing = unused ? &run_.unused_params : &kNone;
    Write(grad, t, step);
  }

  // A light-mode `fp` record: one hash per bucket. Hashes say only who agrees with whom:
  // the shared value is a function of (seed, step, bucket, what), and a rank whose state
  // differs XORs in a salt of its own.
  void Fingerprint(std::string_view what, std::string_view why, int64_t t, int64_t step) {
    const bool grad = what == fp_what::kGrad;
    uint64_t salt = 0;
    if (grad) {
      // grad-desync: one bucket's gradient is altered after the allreduce, at that step only:
      // seen before the optimizer step, not at the allreduce's completion.
      if (why == fp_why::kPreStep && run_.faults->GradDesync(rank_, step))
        salt = RankSalt(rank_, kSlotGradFp);
    } else {
      // no-broadcast: every replica starts from its own init (rank 0's is the reference);
      // after a grad-desync the replica stays off for good.
      if (run_.faults->NoBroadcast() && rank_ != 0) salt ^= RankSalt(rank_, kSlotParamFp);
      // Before the step, the parameters are the previous step's.
      const int64_t as_of = why == fp_why::kPreStep ? step - 1 : step;
      if (why != fp_why::kInit && run_.faults->Drifted(rank_, as_of))
        salt ^= RankSalt(rank_, kSlotGradFp);
    }
    // Parameters change only at optimizer steps: `init` and a step's `periodic` differ; a
    // step's `pre-step` holds what the previous one's `periodic` did.
    const int64_t state = grad || why == fp_why::kInit || why == fp_why::kPreStep ? step : step + 1;
    hashes_.clear();
    for (int k = 0; k < buckets_; ++k) {
      const uint64_t shared =
          Noise(model_.seed(), state, k).Bits(grad ? kSlotGradFp : kSlotParamFp);
      hashes_.push_back(shared ^ (grad && k != 0 ? 0 : salt));
    }
    records::FpRecord fp;
    fp.what = what;
    fp.why = why;
    fp.per_param = false;
    fp.hashes = &hashes_;
    Write(fp, t, step);
  }

  // `exit`: when each bucket's allreduce completed. Buckets run one after the other, as in
  // the flight dump: bucket k starts when it is issued and bucket k-1 is done.
  void StepRecord(int64_t step, const StepWork& w, const StepEnd& e,
                  const std::array<int64_t, kMaxBuckets>& exit) {
    const Noise n(model_.seed(), rank_, step);
    const double decay = std::exp(-static_cast<double>(step) / Tau());
    const double loss = Round4(0.35 + 2.0 * decay + 0.06 * n.Symmetric(kSlotLoss));
    const records::PhaseTime phases[] = {{phase::kData, w.data_end - w.start},
                                         {phase::kForward, w.forward_end - w.data_end},
                                         {phase::kBackward, w.backward_end - w.forward_end},
                                         {phase::kSync, e.sync_end - w.backward_end},
                                         {phase::kOptimizer, e.optimizer_end - e.sync_end}};
    records::StepRecord r;
    r.dur = e.optimizer_end - w.start;
    r.epoch = step / kStepsPerEpoch;
    r.loss = loss;
    r.lr = kLearningRate;
    r.samples = BatchSize();
    r.phases = phases;
    r.phase_count = sizeof(phases) / sizeof(phases[0]);
    r.phase_objects = true;  // synth writes v1
    r.coll.written = records::StepCollTotals::Written::kAll;
    r.coll.n = buckets_;
    int64_t previous_exit = 0;
    for (int k = 0; k < buckets_; ++k) {
      r.coll.bytes += 4 * Numel(run_, rank_, step, k);
      r.coll.dur += exit[k] - w.enter[k];
      r.coll.wait += exit[k] - std::max(w.enter[k], previous_exit);
      previous_exit = exit[k];
    }
    Write(r, w.start, step);
  }

  void Error(int64_t step, int64_t t, const std::string& message, int64_t seq) {
    records::ErrorRecord error;
    error.where = phase::kSync;
    error.message = message;
    error.names_collective = true;
    error.pg = 0;
    error.seq = seq;
    error.op = "allreduce";
    error.tag = tags_[0];
    Write(error, t, step);
  }

  void End(int64_t step, int64_t t, std::string_view reason, int status, std::string_view detail) {
    // No probe_ns: synth's ranks have no probes to time.
    records::EndRecord end;
    end.reason = reason;
    end.status = status;
    end.detail = detail;
    Write(end, t, step);
  }

  // The batch size this rank was launched with (config-mismatch doubles it).
  int BatchSize() const { return run_.faults->ConfigMismatch(rank_) ? 2 * kBatchSize : kBatchSize; }

  // Loss and gradient norm decay over about a third of the run.
  double Tau() const { return std::max(4.0, 0.35 * static_cast<double>(run_.steps)); }

  const RunFacts& run_;
  const TimeModel& model_;
  int rank_;
  std::string* out_;
  int buckets_;
  std::vector<std::string> tags_;
  std::vector<uint64_t> hashes_;  // an `fp` record's, reused
};

}  // namespace

void RenderRankTrace(const RunFacts& run, int rank, std::string* buffer, const Drain& drain) {
  Renderer(run, rank, buffer).Render(drain);
}

int64_t StepStart(const RunFacts& run, int rank, int64_t step) {
  const TimeModel& model = *run.model;
  int64_t start = model.FirstStepStart(rank);
  for (int64_t s = 0; s < step; ++s) {
    const StepWork w = model.Work(rank, s, start);
    start = model.End(w, run.schedule->ExitOn(model, rank, s, model.buckets() - 1)).next_start;
  }
  return start;
}

bool HasFlightDump(const RunFacts& run, int rank) {
  const std::optional<Stop>& stop = run.faults->stop();
  return stop && stop->kind == Stop::Kind::kHang && rank != stop->rank;
}

// What the survivor's flight recorder holds when its watchdog fires: the allreduces of
// the last two finished steps, then the stuck step's (the first started, the rest queued).
void AppendFlightDump(const RunFacts& run, int rank, std::string* out) {
  const TimeModel& model = *run.model;
  const Stop& stop = *run.faults->stop();
  const int buckets = model.buckets();
  const int64_t first = std::max<int64_t>(0, stop.step - 2);
  int64_t start = StepStart(run, rank, first);
  const int64_t launch = model.LaunchTime(rank);

  trace::FlightDump dump;
  int64_t fire = 0;
  for (int64_t step = first; step <= stop.step; ++step) {
    const StepWork w = model.Work(rank, step, start);
    const bool stuck = step == stop.step;
    if (stuck) fire = w.enter[0] + kTimeoutNs;
    int64_t previous_exit = 0;
    for (int k = 0; k < buckets; ++k) {
      const int64_t exit = stuck ? 0 : run.schedule->ExitOn(model, rank, step, k);
      const bool started = !stuck || k == 0;
      const int64_t started_at = std::max(w.enter[k], previous_exit);
      const int64_t n = Numel(run, rank, step, k);
      trace::FlightDumpEntry e;
      e.pg = 0;
      e.seq = step * buckets + k;
      e.what.op = "allreduce";
      e.what.dtype = "f32";
      e.what.count = n;
      e.what.bytes = 4 * n;
      e.what.tag = "grad-bucket-" + std::to_string(k);
      e.step = step;
      e.phase = std::string(phase::kBackward);
      e.state = !stuck    ? trace::CollectiveState::kCompleted
                : started ? trace::CollectiveState::kStarted
                          : trace::CollectiveState::kIssued;
      e.issued = model.Mono(rank, w.enter[k]);
      if (started) e.started = model.Mono(rank, started_at);
      if (!stuck) e.completed = model.Mono(rank, exit);
      dump.entries.push_back(std::move(e));
      previous_exit = exit;
    }
    if (!stuck) {
      start = model.End(w, run.schedule->ExitOn(model, rank, step, buckets - 1)).next_start;
    }
  }
  dump.run_id = run.run_id;
  dump.rank = rank;
  dump.world_size = run.ranks;
  dump.reason = trace::flight_dump_reason::kTimeout;
  dump.ts = model.Mono(rank, fire);
  dump.clock = trace::ClockReference{model.Mono(rank, launch), model.Wall(rank, launch),
                                     model.MeasuredOffset(rank), model.OffsetErr(rank)};
  dump.where_step = stop.step;
  dump.where_phase = std::string(phase::kSync);
  *out += trace::FlightDumpJson(dump);
}

}  // namespace dsdiag::synth
