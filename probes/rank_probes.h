// RankProbes: everything one rank's probes need, started in one call — the trace session,
// the flight recorder, the collective probe, the watchdog, the stop-signal handlers, the
// terminate handler and the fatal-signal handlers —
// with the two things the ranks must agree on settled through the job's store first: one
// run id, and this rank's clock offset to rank 0 (in the header and a `clock` record).
//
//   auto config = dsdiag::probes::RankProbesConfig::FromEnvironment();  // RANK, DSDIAG_OUT, ...
//   auto probes = dsdiag::probes::RankProbes::Start(config, &store, &error);
//   ... probes->session(), probes->collectives() in the loop ...
//   probes->Finish();  // every rank: the end clock offset, then the `end` record "ok"
//
// A LibTorch loop passes its c10d store through probes/torch/rank_probes_torch.h, which
// also records the LibTorch versions and determinism switches in the header.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "probes/clock_offset.h"
#include "probes/collective_probe.h"
#include "probes/fatal_signals.h"
#include "probes/flight_recorder.h"
#include "probes/key_value_store.h"
#include "probes/mode.h"
#include "probes/session.h"
#include "probes/stop_signals.h"
#include "probes/terminate_recorder.h"
#include "probes/watchdog.h"
#include "trace/trace_header.h"
#include "trace/trace_writer.h"

namespace dsdiag::probes {

struct RankProbesConfig {
  Mode mode = Mode::kLight;
  // rank-<R>.jsonl and flight-rank-<R>.json go here; empty: runs/<run id>.
  std::string run_dir;
  int rank = 0;
  int world_size = 1;
  int local_rank = -1;  // -1: the rank
  // The same on every rank. Empty: rank 0 makes one and shares it through the store.
  std::string run_id;
  // Watchdog: a collective pending longer than this is a hang — `error` record and flight
  // dump (the job goes on; its backend's timeout ends it). <= 0: no timeout check.
  double collective_timeout_s = 300;
  // And then end the process (Watchdog::EndProcessOnTimeout): for jobs whose backend would
  // otherwise wait far longer (Gloo's default is 30 minutes).
  bool end_on_collective_timeout = false;
  // SIGTERM / SIGINT write the dump and the end record, SIGUSR1 the dump (StopSignals).
  bool stop_signals = true;
  // An uncaught exception (std::terminate) writes an `error` record, the dump and the end
  // record before the process aborts (TerminateRecorder).
  bool record_terminate = true;
  // SIGSEGV, SIGBUS, SIGFPE, SIGILL and an abort() outside std::terminate write the held
  // records, the end record (how the rank died) and the dump, then the process dies by the
  // signal as it would have (FatalSignals).
  bool record_fatal_signals = true;
  trace::TraceCompression compression = trace::TraceCompression::kNone;
  // Anything else for the header: `config` (the run's settings, compared across ranks by
  // config-mismatch), versions, sections. rank, world size and run id come from above.
  trace::TraceHeader header;
  // The wall clock (CLOCK_REALTIME ns) for the header's clock pair and the offset; empty:
  // the system's.
  std::function<int64_t()> wall_clock;

  // The settings `dsdiag run` and torchrun hand each rank (a cluster job exports them
  // itself): RANK, WORLD_SIZE, LOCAL_RANK; DSDIAG_OUT (run_dir), DSDIAG_PROBES
  // (off|light|full), DSDIAG_TIMEOUT (seconds), DSDIAG_RUN_ID. Unset ones keep the
  // defaults. A value that does not parse is kept in `environment_error`, and Start fails
  // with it.
  static RankProbesConfig FromEnvironment();
  std::string environment_error;
};

class RankProbes {
 public:
  // Settles the run id and measures the clock offset through `store` (which must outlive
  // the probes; null only for a one-rank job or when run_id is given — the offset is then
  // not measured), then starts the probes. Null, with *error saying why, when the store
  // failed or the trace cannot be written.
  static std::unique_ptr<RankProbes> Start(RankProbesConfig config, KeyValueStore* store,
                                           std::string* error);
  // The same, the probes owning the store's adapter.
  static std::unique_ptr<RankProbes> Start(RankProbesConfig config,
                                           std::unique_ptr<KeyValueStore> store,
                                           std::string* error);
  // Handlers, watchdog, then the session (its `end` record is "destroyed"
  // unless Finish or Session::End came first).
  ~RankProbes();
  RankProbes(const RankProbes&) = delete;
  RankProbes& operator=(const RankProbes&) = delete;

  Session* session() noexcept { return session_.get(); }
  CollectiveProbe* collectives() noexcept { return collectives_.get(); }
  FlightRecorder* recorder() noexcept { return recorder_.get(); }
  Watchdog* watchdog() noexcept { return watchdog_.get(); }
  const std::string& run_dir() const noexcept { return run_dir_; }
  const std::string& run_id() const noexcept { return run_id_; }

  // Measures the clock offset to rank 0 again and records it (`when`: "end"); a
  // collective over the store, as at Start. A store failure becomes an `error` record.
  void MeasureClock(std::string_view when) noexcept;
  // The clean end of the run, on every rank: MeasureClock("end"), then the `end` record
  // with reason "ok" and `status`.
  void Finish(int status = 0) noexcept;

 private:
  RankProbes() = default;

  RankProbesConfig config_;
  KeyValueStore* store_ = nullptr;
  std::unique_ptr<KeyValueStore> owned_store_;  // when Start was handed it
  std::string run_dir_;
  std::string run_id_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<FlightRecorder> recorder_;
  std::unique_ptr<CollectiveProbe> collectives_;
  std::unique_ptr<Watchdog> watchdog_;
  std::unique_ptr<StopSignals> stop_signals_;
  std::unique_ptr<TerminateRecorder> terminate_recorder_;
  std::unique_ptr<FatalSignals> fatal_signals_;  // first to go: its handler reads the session
};

}  // namespace dsdiag::probes
