// Session: the probes of one rank — owns its trace writer and the per-step accounting
// every other probe hangs off. A training loop holds one for its lifetime:
//
//   auto probes = dsdiag::probes::Session::Start(config, &error);
//   for (step...) {
//     probes->BeginStep(step, epoch);
//     { dsdiag::probes::PhaseScope p(probes.get(), Phase::kForward); ... }
//     probes->EndStep({.loss = loss});
//   }
//   probes->End("ok", 0);
//
// With Mode::kOff Start() still returns a session; every call is then one branch and
// writes nothing. No call throws; a failing disk is reported once by the writer.
#pragma once

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "probes/mode.h"
#include "probes/phase.h"
#include "probes/records/collective_steps.h"
#include "probes/records/fingerprint_repeats.h"
#include "probes/thread_cpu.h"
#include "trace/records/end_record.h"
#include "trace/records/step_record.h"
#include "trace/trace_header.h"
#include "trace/trace_writer.h"

namespace dsdiag::probes {

struct SessionConfig {
  Mode mode = Mode::kLight;
  std::string run_dir;  // the file is <run_dir>/rank-<R>.jsonl; the dir is created
  // kZstd: the file is rank-<R>.jsonl.zst instead (Start fails without libzstd).
  trace::TraceCompression compression = trace::TraceCompression::kNone;
  // Caller fills run_id, rank, world_size, local_rank, config (and clock.offset once
  // measured). Start() fills schema, host, pid, versions["dsdiag"], env and the clock pair
  // when they are empty.
  trace::TraceHeader header;
};

struct StepSummary {
  double loss = NAN;         // this rank's loss
  double global_loss = NAN;  // averaged over ranks, when the loop has it
  double lr = NAN;
  int64_t samples = 0;  // samples consumed this step on this rank
  // An earlier step's device times (`dev`), where the loop measures them; step < 0: none.
  trace::records::StepDeviceTimes device;
};

class Session {
 public:
  static std::unique_ptr<Session> Start(SessionConfig config, std::string* error);
  ~Session();  // writes an `end` record with reason "destroyed" if End() was not called

  bool on() const noexcept { return writer_ != nullptr; }
  // The `end` record is written: nothing more goes into this trace.
  bool ended() const noexcept { return ended_.load(); }
  Mode mode() const noexcept { return mode_; }
  bool full() const noexcept { return mode_ == Mode::kFull; }
  int rank() const noexcept { return rank_; }
  // The writer other probes record through; null when off.
  trace::TraceWriter* writer() noexcept { return writer_.get(); }

  void BeginStep(int64_t step, int64_t epoch) noexcept;
  // Writes `step` (with the step's collective totals, see CountCollective), then flushes.
  void EndStep(const StepSummary& summary) noexcept;

  // Adds one collective to the current step's totals, written as the `step` record's `coll`
  // object: the per-step aggregate timelines and reports read without summing `coll`
  // records. Called by CollectiveScope on the thread that issues collectives (the main
  // thread), like the phase totals. `wait_ns`: from the backend accepting the op to its
  // completion.
  void CountCollective(int64_t bytes, int64_t dur_ns, int64_t wait_ns) noexcept;
  // Writes the `coll` / `colls` records (records/collective_steps.h): in light mode the loop
  // thread's ops wait for the step's end. Null when off.
  records::CollectiveSteps* collective_steps() noexcept { return collective_steps_.get(); }
  // Writes what waits for the step's end (held collectives, an owed pre-step fingerprint)
  // now: the trace is then complete up to here (before a flight dump; errors, signals and
  // the end do it themselves).
  void FlushHeldRecords() noexcept;
  // The pre-step fingerprints left out as repeats (records/fingerprint_repeats.h).
  records::PreStepRepeats* pre_step_repeats() noexcept { return &pre_step_repeats_; }

  // Time spent inside probe calls (ProbeTimer adds it, from any thread); the `step` record
  // carries what was added since the previous one, the `end` record the total.
  void AddProbeTime(int64_t ns) noexcept { probe_ns_.fetch_add(ns, std::memory_order_relaxed); }
  int64_t probe_ns() const noexcept { return probe_ns_.load(std::memory_order_relaxed); }

  // Where the main thread is now (read by the watchdog / flight recorder from any thread).
  int64_t current_step() const noexcept { return step_.load(std::memory_order_relaxed); }
  Phase current_phase() const noexcept { return phase_.load(std::memory_order_relaxed); }

  void RecordError(std::string_view where, std::string_view message) noexcept;
  // Records a signal by number; call from normal context (not inside the handler).
  void RecordSignal(int signo) noexcept;
  // Clock offset to rank 0 measured at `when` ("start" or "end").
  void RecordClock(std::string_view when, int64_t offset_ns, int64_t err_ns,
                   int64_t rtt_ns) noexcept;
  void Mark(std::string_view name, std::string_view message) noexcept;

  // Writes the `end` record once (later calls do nothing) and flushes.
  // reason: "ok", "signal", "error", "peer-failure"; detail goes to `signal` or `error`.
  void End(std::string_view reason, int status, std::string_view detail = {}) noexcept;
  // The same for a rank dying by a fatal signal (probes/fatal_signals.h): reason "signal",
  // status 128 + signo, and how the signal came.
  void EndByFatalSignal(int signo, const trace::records::FatalSignalFields& how) noexcept;

  // Async-signal-safe flush of whatever is buffered.
  void FlushFromSignal() noexcept;

 private:
  friend class PhaseScope;
  Session(Mode mode, int rank, std::unique_ptr<trace::TraceWriter> writer);
  void EnterPhase(Phase phase, int64_t start_ns) noexcept;
  // `unwinding`: left by an exception; the current phase then stays `phase` (PhaseScope).
  void ExitPhase(Phase phase, Phase previous, int64_t start_ns, const ThreadCpu& start_cpu,
                 bool unwinding) noexcept;
  void WriteEnd(const trace::records::EndRecord& end) noexcept;

  const Mode mode_;
  const int rank_;
  std::unique_ptr<trace::TraceWriter> writer_;
  std::atomic<int64_t> step_{0};
  std::atomic<Phase> phase_{Phase::kNone};
  int64_t epoch_ = 0;
  int64_t step_start_ns_ = 0;
  std::array<int64_t, kPhaseCount> phase_ns_{};  // time per phase in the current step
  // What the phase's thread spent on a CPU and in the run queue, per phase (thread_cpu.h);
  // whether this step measured them (a phase on a thread without schedstat: no run queue).
  std::array<int64_t, kPhaseCount> phase_cpu_ns_{};
  std::array<int64_t, kPhaseCount> phase_runq_ns_{};
  bool step_range_open_ = false;  // the step's NVTX range, pushed by BeginStep (main thread)
  bool cpu_known_ = false, runq_known_ = false;
  trace::records::StepRepeats step_repeats_;  // of the last step record written
  struct CollectiveTotals {
    int64_t n = 0, bytes = 0, dur_ns = 0, wait_ns = 0;
  };
  CollectiveTotals coll_;  // the current step's collectives
  std::unique_ptr<records::CollectiveSteps> collective_steps_;
  records::PreStepRepeats pre_step_repeats_;
  std::atomic<int64_t> probe_ns_{0};
  int64_t probe_ns_at_last_step_ = 0;  // the probe ns the step records have counted so far
  std::atomic<bool> ended_{false};
};

// Times one phase of the step: a `phase` record, the step's phase totals, the session's
// current phase, and an NVTX range of the same name. Stack-only, like nvtx3::scoped_range.
// Left by an exception, the scope still writes its record but leaves the session's current
// phase as it is: the handler that catches the exception (error record, flight dump) then
// says in which phase it was raised, not "none".
class PhaseScope {
 public:
  PhaseScope(Session* session, Phase phase) noexcept;
  ~PhaseScope();
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;
  void* operator new(size_t) = delete;
  // Left by an exception the C++ runtime does not see (a Python one, through the binding).
  void MarkLeftByException() noexcept { left_by_exception_ = true; }

 private:
  Session* session_;
  Phase phase_;
  Phase previous_;
  int64_t start_ns_;
  ThreadCpu start_cpu_;
  int exceptions_at_entry_;
  bool left_by_exception_ = false;
};

}  // namespace dsdiag::probes
