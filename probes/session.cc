#include "probes/session.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>

#include "probes/nvtx.h"
#include "probes/probe_timer.h"
#include "trace/clock.h"
#include "trace/record_types.h"
#include "trace/records/clock_record.h"
#include "trace/records/end_record.h"
#include "trace/records/error_record.h"
#include "trace/records/mark_record.h"
#include "trace/records/phase_record.h"
#include "trace/records/signal_record.h"
#include "trace/records/step_begin_record.h"
#include "trace/records/step_record.h"
#include "trace/run_files.h"
#include "trace/signal_name.h"

namespace dsdiag::probes {
namespace {

// Creates `dir` and its parents (mkdir -p); false with *error set on failure.
bool MakeDirs(const std::string& dir, std::string* error) {
  std::string path;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    path = dir.substr(0, pos);
    if (path.empty()) continue;
    if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = "cannot create " + path + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// Fills what every header has and the caller need not know.
void CompleteHeader(trace::TraceHeader* h) {
  if (h->schema.empty()) h->schema = std::string(trace::kSchema);
  if (h->host.empty()) h->host = HostName();
  if (h->pid == 0) h->pid = getpid();
  if (!h->versions.count("dsdiag")) h->versions["dsdiag"] = DSDIAG_VERSION;
  if (h->env.empty()) h->env = trace::CollectRelevantEnv();
  if (h->clock.mono_ns == 0) {
    h->clock.mono_ns = trace::MonotonicNs();
    h->clock.wall_ns = trace::WallNs();
  }
}

}  // namespace

std::unique_ptr<Session> Session::Start(SessionConfig config, std::string* error) {
  if (config.mode == Mode::kOff)
    return std::unique_ptr<Session>(new Session(Mode::kOff, config.header.rank, nullptr));
  if (!MakeDirs(config.run_dir, error)) return nullptr;
  const std::string path =
      config.run_dir + "/" + trace::RankTraceFileName(config.header.rank, config.compression);
  trace::TraceWriter::Options options;
  options.compression = config.compression;
  auto writer = trace::TraceWriter::Open(path, options, error);
  if (!writer) return nullptr;
  CompleteHeader(&config.header);
  config.header.sections.Set("probes", std::string(ModeName(config.mode)));
  writer->WriteHeader(config.header);
  writer->Flush();
  return std::unique_ptr<Session>(new Session(config.mode, config.header.rank, std::move(writer)));
}

Session::Session(Mode mode, int rank, std::unique_ptr<trace::TraceWriter> writer)
    : mode_(mode),
      rank_(rank),
      writer_(std::move(writer)),
      collective_steps_(writer_ ? std::make_unique<records::CollectiveSteps>(mode != Mode::kFull)
                                : nullptr) {}

Session::~Session() { End("destroyed", 0); }

void Session::BeginStep(int64_t step, int64_t epoch) noexcept {
  step_.store(step, std::memory_order_relaxed);
  // A phase an exception left current (PhaseScope) ends with its step.
  phase_.store(Phase::kNone, std::memory_order_relaxed);
  if (!on()) return;
  ProbeTimer timer(this);
  // Before SetStep: what is held or owed belongs to the last step.
  collective_steps_->BeginStep(this);
  pre_step_repeats_.WriteOwed(this);
  epoch_ = epoch;
  phase_ns_.fill(0);
  phase_cpu_ns_.fill(0);
  phase_runq_ns_.fill(0);
  cpu_known_ = runq_known_ = false;
  coll_ = CollectiveTotals();
  step_start_ns_ = trace::MonotonicNs();
  writer_->SetStep(step);
  {
    trace::records::StepBeginRecord begin;
    begin.epoch = epoch;
    auto r = writer_->BeginAt(begin.kType, step_start_ns_);
    AppendFields(begin, &r.line());
  }
  char name[32];
  std::snprintf(name, sizeof name, "step %lld", static_cast<long long>(step));
  nvtx::PushRange(name);  // closed by EndStep (or End); phases nest inside
  step_range_open_ = true;
  // On disk before the step runs: a rank killed mid-step still says which step it was in.
  writer_->Flush();
}

void Session::EndStep(const StepSummary& s) noexcept {
  if (!on()) return;
  ProbeTimer timer(this);  // counted in the next step's probe_ns (this one's is being written)
  const int64_t now = trace::MonotonicNs();
  const int64_t compacted = collective_steps_->EndStep(this);
  const int64_t probe_ns = probe_ns_.load(std::memory_order_relaxed);
  {
    trace::records::PhaseTime phases[kPhaseCount - 1], cpu[kPhaseCount - 1], runq[kPhaseCount - 1];
    for (int p = 1; p < kPhaseCount; ++p) {
      const char* name = PhaseName(static_cast<Phase>(p));
      phases[p - 1] = {name, phase_ns_[p]};
      cpu[p - 1] = {name, phase_cpu_ns_[p]};
      runq[p - 1] = {name, phase_runq_ns_[p]};
    }
    trace::records::StepRecord step;
    step.dur = trace::records::RoundUpToUs(now - step_start_ns_);
    step.epoch = epoch_;
    step.loss = s.loss;
    step.gloss = s.global_loss;
    step.lr = s.lr;
    step.samples = s.samples;
    step.phases = phases;
    step.phase_count = kPhaseCount - 1;
    using Written = trace::records::StepCollTotals::Written;
    // Every op in this step's `colls` records: they sum to the rest (trace v2).
    step.coll.written = coll_.n == 0           ? Written::kNone
                        : compacted == coll_.n ? Written::kWaitOnly
                                               : Written::kAll;
    step.coll.n = coll_.n;
    step.coll.bytes = coll_.bytes;
    step.coll.dur = coll_.dur_ns;
    step.coll.wait = trace::records::RoundUpToUs(coll_.wait_ns);
    const std::string owed = pre_step_repeats_.TakeOwed();
    step.pre_step_fp = owed;
    // Rounded up to a µs; the excess counts against the next step, so that the steps' sum
    // stays the run's total (the `end` record's).
    step.probe_ns =
        trace::records::RoundUpToUs(std::max<int64_t>(0, probe_ns - probe_ns_at_last_step_));
    if (cpu_known_) step.cpu = cpu;
    if (runq_known_) step.runq = runq;
    // Two decimals: a load average is no finer, and the line stays short.
    if (const double load = HostLoadPerCpu(); load >= 0) step.load = std::round(load * 100) / 100;
    step.dev = s.device;
    probe_ns_at_last_step_ += step.probe_ns;
    step.previous = &step_repeats_;  // trace v3: what did not change since is left out
    auto r = writer_->BeginAt(step.kType, step_start_ns_);
    AppendFields(step, &r.line());
    step_repeats_ = trace::records::RepeatsOf(step);
  }
  if (step_range_open_) nvtx::PopRange();
  step_range_open_ = false;
  writer_->EndOfStep();  // step boundary: plain traces are whole up to here
}

void Session::CountCollective(int64_t bytes, int64_t dur_ns, int64_t wait_ns) noexcept {
  if (!on()) return;
  ProbeTimer timer(this);
  ++coll_.n;
  coll_.bytes += bytes;
  coll_.dur_ns += dur_ns;
  coll_.wait_ns += wait_ns;
}

void Session::FlushHeldRecords() noexcept {
  if (!on()) return;
  collective_steps_->FlushHeld(this);
  pre_step_repeats_.WriteOwed(this);
}

void Session::EnterPhase(Phase phase, int64_t /*start_ns*/) noexcept {
  phase_.store(phase, std::memory_order_relaxed);
}

void Session::ExitPhase(Phase phase, Phase previous, int64_t start_ns, const ThreadCpu& start_cpu,
                        bool unwinding) noexcept {
  const int64_t dur = trace::MonotonicNs() - start_ns;
  phase_ns_[static_cast<int>(phase)] += dur;
  const ThreadCpu end_cpu = ReadThreadCpu();
  if (start_cpu.cpu_ns >= 0 && end_cpu.cpu_ns >= start_cpu.cpu_ns) {
    phase_cpu_ns_[static_cast<int>(phase)] += end_cpu.cpu_ns - start_cpu.cpu_ns;
    cpu_known_ = true;
  }
  if (start_cpu.runq_ns >= 0 && end_cpu.runq_ns >= start_cpu.runq_ns) {
    phase_runq_ns_[static_cast<int>(phase)] += end_cpu.runq_ns - start_cpu.runq_ns;
    runq_known_ = true;
  }
  if (!unwinding) phase_.store(previous, std::memory_order_relaxed);
  // Light mode (trace v2): the step record's phase totals only, no record per phase.
  if (!full()) return;
  trace::records::PhaseRecord record;
  record.name = PhaseName(phase);
  record.dur = dur;
  auto r = writer_->BeginAt(record.kType, start_ns);
  AppendFields(record, &r.line());
}

void Session::RecordError(std::string_view where, std::string_view message) noexcept {
  if (!on()) return;
  ProbeTimer timer(this);
  FlushHeldRecords();
  {
    trace::records::ErrorRecord error;
    error.where = where;
    error.message = message;
    auto r = writer_->Begin(error.kType);
    AppendFields(error, &r.line());
  }
  writer_->Flush();
}

void Session::RecordSignal(int signo) noexcept {
  if (!on()) return;
  ProbeTimer timer(this);
  FlushHeldRecords();
  {
    const std::string name = trace::SignalName(signo);
    trace::records::SignalRecord signal;
    signal.signal = name;
    signal.signo = signo;
    auto r = writer_->Begin(signal.kType);
    AppendFields(signal, &r.line());
  }
  writer_->Flush();
}

void Session::RecordClock(std::string_view when, int64_t offset_ns, int64_t err_ns,
                          int64_t rtt_ns) noexcept {
  if (!on()) return;
  ProbeTimer timer(this);
  trace::records::ClockRecord clock;
  clock.when = when;
  clock.offset = offset_ns;
  clock.offset_err = err_ns;
  clock.rtt = rtt_ns;
  auto r = writer_->Begin(clock.kType);
  AppendFields(clock, &r.line());
}

void Session::Mark(std::string_view name, std::string_view message) noexcept {
  ProbeTimer timer(this);
  nvtx::Mark(std::string(name).c_str());
  if (!on()) return;
  trace::records::MarkRecord mark;
  mark.name = name;
  mark.message = message;
  auto r = writer_->Begin(mark.kType);
  AppendFields(mark, &r.line());
}

void Session::End(std::string_view reason, int status, std::string_view detail) noexcept {
  // A step the job began and never ended (the loop's last collective opened it, or the job
  // stops mid-step): its range ends with the trace, not at the process's exit.
  if (step_range_open_) {
    step_range_open_ = false;
    nvtx::PopRange();
  }
  trace::records::EndRecord end;
  end.reason = reason;
  end.status = status;
  end.detail = detail;
  WriteEnd(end);
}

void Session::EndByFatalSignal(int signo, const trace::records::FatalSignalFields& how) noexcept {
  const std::string name = trace::SignalName(signo);
  trace::records::EndRecord end;
  end.reason = trace::records::end_reason::kSignal;
  end.status = 128 + signo;
  end.detail = name;
  end.fatal = &how;
  WriteEnd(end);
}

void Session::WriteEnd(const trace::records::EndRecord& end) noexcept {
  if (ended_.exchange(true) || !on()) return;
  FlushHeldRecords();
  {
    trace::records::EndRecord record = end;
    record.probe_ns = probe_ns();
    auto r = writer_->Begin(record.kType);
    AppendFields(record, &r.line());
  }
  writer_->Flush();
}

void Session::FlushFromSignal() noexcept {
  if (writer_) writer_->FlushFromSignal();
}

// With probes off the scope is one branch: no clock read, no record, no NVTX range.
PhaseScope::PhaseScope(Session* session, Phase phase) noexcept
    : session_(session && session->on() ? session : nullptr),
      phase_(phase),
      previous_(Phase::kNone),
      start_ns_(0),
      exceptions_at_entry_(0) {
  if (!session_) return;
  ProbeTimer timer(session_);
  exceptions_at_entry_ = std::uncaught_exceptions();
  previous_ = session_->current_phase();
  start_cpu_ = ReadThreadCpu();
  start_ns_ = trace::MonotonicNs();
  nvtx::PushRange(PhaseName(phase));
  session_->EnterPhase(phase, start_ns_);
}

PhaseScope::~PhaseScope() {
  if (!session_) return;
  ProbeTimer timer(session_);
  session_->ExitPhase(phase_, previous_, start_ns_, start_cpu_,
                      left_by_exception_ || std::uncaught_exceptions() > exceptions_at_entry_);
  nvtx::PopRange();
}

}  // namespace dsdiag::probes
