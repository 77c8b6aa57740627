// RunRank: the life of one rank process around the training loop —
//   parse the fault plan -> rendezvous (TCPStore, process group) -> start the probes
//   (RankProbes: run id and clock offset to rank 0 through the store, header, flight
//   recorder, watchdog, collective probe) -> train -> end-of-run clock and barrier -> `end`
//   record.
//
// How a rank ends, and what its `end` record says:
//   ok            training finished; exit 0
//   signal        SIGTERM / SIGINT: stopped at the next phase boundary (or by the watcher
//                 when stuck); exit 128 + signo
//   peer-failure  another rank failed (its error in the store, its connection gone, the
//                 health check); exit 1
//   error         this rank failed; its error record is written (flushed), then published
//                 for the others (bounded: a rank cut off from the store's host records
//                 that it could not reach it), then the dump and the end record; exit 1
// Failures end the process with _Exit after the trace is flushed: a process group with a
// dead peer can block in its destructor, and nothing else is left to clean up.
#include "trainer/rank_main.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <thread>

#include "inject/inject_spec.h"
#include "probes/rank_probes.h"
#include "probes/torch/rank_probes_torch.h"
#include "trace/clock.h"
#include "trace/flight_dump_keys.h"
#include "trace/peer_loss.h"
#include "trace/record_types.h"
#include "trace/records/end_record.h"
#include "trace/records/error_record.h"
#include "trace/signal_name.h"
#include "trace/trace_writer.h"
#include "trainer/torch/comm.h"
#include "trainer/torch/error_text.h"
#include "trainer/torch/faults.h"
#include "trainer/torch/run_control.h"
#include "trainer/torch/trainer.h"
#include "trainer/torch/wall_clock.h"

namespace dsdiag::trainer {
namespace {

namespace end_reason = trace::records::end_reason;

// Shorter than the launcher's SIGTERM -> SIGKILL grace, so that a stuck rank still writes
// its own end record.
constexpr auto kForceExitGrace = std::chrono::seconds(2);
// The longest a failing rank tries to publish its error, and the watcher's store client
// waits for an answer: a store host behind a cut link must not hold a rank for the
// store's connect timeout (60 s). At most --timeout, but not so short that a loaded but
// healthy store misses it.
constexpr auto kStoreProbeTimeout = std::chrono::milliseconds(2000);
constexpr auto kStoreProbeTimeoutMin = std::chrono::milliseconds(500);

std::chrono::milliseconds StoreProbeTimeout(const Comm& comm) {
  return std::clamp(comm.timeout(), kStoreProbeTimeoutMin, kStoreProbeTimeout);
}

void Fail(const char* what, const launch::DistEnv& env, const std::string& message) {
  std::fprintf(stderr, "dsdiag train: rank %d: %s: %s\n", env.rank, what, message.c_str());
}

// The second `error` record of a rank whose failure could not be published: the store's
// host did not answer, the sign (for the hang analyzer) of a link cut on this rank's side
// when the other ranks reached it.
void RecordStoreUnreachable(probes::Session* session, const Comm& comm,
                            const RunControl::PublishOutcome& outcome) {
  trace::TraceWriter* writer = session->writer();
  if (!writer) return;
  const std::string store = comm.store_host() + ":" + std::to_string(comm.store_port());
  char tried[32];
  std::snprintf(tried, sizeof tried, "%.1f s", static_cast<double>(outcome.tried.count()) / 1e3);
  const std::string message = "could not reach the rendezvous store at " + store +
                              " to publish this rank's error (gave up after " + tried + ")";
  trace::records::StoreUnreachableRecord error;
  error.message = message;
  error.store = store;
  error.tried_ms = static_cast<int64_t>(outcome.tried.count());
  error.store_error = outcome.error;
  {
    auto r = writer->Begin(error.kType);
    AppendFields(error, &r.line());
  }
  writer->Flush();
}

// The probes of this rank: the run id and the clock offset settled through the store, the
// trace, flight recorder, watchdog and collective probe. SIGTERM / SIGINT and std::terminate
// stay RunControl's (it stops the loop between phases and tells the other ranks); SIGUSR1
// asks the watchdog for a dump.
std::unique_ptr<probes::RankProbes> StartProbes(const TrainConfig& config,
                                                const launch::DistEnv& env, Comm& comm,
                                                const WallClock& clock) {
  probes::RankProbesConfig probe_config;
  probe_config.mode = probes::ParseMode(config.probes).value_or(probes::Mode::kLight);
  probe_config.run_dir = config.out;  // empty: runs/<run id>
  probe_config.compression =
      trace::ParseTraceCompression(config.trace_compress).value_or(trace::TraceCompression::kNone);
  probe_config.rank = env.rank;
  probe_config.world_size = env.world_size;
  probe_config.local_rank = env.local_rank;
  probe_config.run_id = env.run_id;  // the launcher's DSDIAG_RUN_ID; else rank 0's
  probe_config.collective_timeout_s = config.timeout_s;
  probe_config.stop_signals = false;
  probe_config.record_terminate = false;  // RunControl's terminate handler does this
  probe_config.header.config = config.ToJson();
  // Through WallClock: a skewed host's header and offset are skewed too.
  probe_config.wall_clock = [clock] { return clock.Now(); };
  std::string error;
  std::unique_ptr<probes::RankProbes> p =
      probes::StartRankProbes(std::move(probe_config), comm.store(), &error);
  if (!p) throw std::runtime_error(error);
  probes::Watchdog::InstallSigusr1Handler(p->watchdog());
  return p;
}

// The clean end: a last clock measurement, then a barrier so that rank 0 (the store's
// host) leaves last.
void FinishRun(Comm& comm, probes::RankProbes& p, RunControl& control) {
  p.MeasureClock("end");
  control.Finishing();
  comm.Barrier("final");
}

[[noreturn]] void EndAfterFailure(const std::exception& e, const launch::DistEnv& env, Comm& comm,
                                  probes::RankProbes& p, RunControl& control) {
  control.Finishing();
  const std::string message = ErrorText(e);
  if (trace::LooksLikePeerLoss(message)) {
    // A vanished peer is often the first sign of a job being torn down: the signal the
    // launcher sent this rank may be a moment behind the one that stopped the peer.
    for (int i = 0; i < 10 && control.pending_signal() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  if (const int signo = control.pending_signal()) {
    // The failure is the signal's doing (a peer stopped first and closed its sockets).
    p.session()->RecordSignal(signo);
    p.watchdog()->DumpNow(trace::SignalName(signo).c_str());
    p.session()->End(end_reason::kSignal, 128 + signo, trace::SignalName(signo));
    std::_Exit(128 + signo);
  }
  if (control.peer_failed() || trace::LooksLikePeerLoss(message)) {
    const std::string detail = control.peer_failed() ? control.peer_error() : message;
    p.session()->RecordError(probes::PhaseName(p.session()->current_phase()), message);
    p.watchdog()->DumpNow(trace::flight_dump_reason::kError.data());
    p.session()->End(end_reason::kPeerFailure, 1, detail);
    Fail("stopping after a peer failed", env, detail);
    std::_Exit(1);
  }
  // This rank's own error first (RecordError flushes): whatever happens while it tells
  // the others, the trace says why it stopped.
  p.session()->RecordError(probes::PhaseName(p.session()->current_phase()), message);
  // Then the others, likely blocked waiting for this rank; bounded, so that a rank cut off
  // from the store's host ends a few seconds after its timeout, not a minute.
  const RunControl::PublishOutcome published = RunControl::PublishError(
      comm.store_host(), comm.store_port(), env.rank, message, StoreProbeTimeout(comm));
  if (published.unreachable) RecordStoreUnreachable(p.session(), comm, published);
  p.watchdog()->DumpNow(trace::flight_dump_reason::kError.data());
  p.session()->End(end_reason::kError, 1, message);
  Fail("failed", env, message);
  std::fflush(stderr);
  std::_Exit(1);
}

}  // namespace

int RunRank(const TrainConfig& config, const launch::DistEnv& env) {
  torch::set_num_threads(1);  // ranks share the cores; intra-op threads would fight
  const Faults faults(config.inject, env.rank);  // parsed and checked by the CLI
  const WallClock clock(faults.clock_skew_ns());
  RunControl control;  // signals are caught from here on

  CommOptions comm_options;
  comm_options.timeout =
      std::chrono::milliseconds(static_cast<int64_t>(std::max(config.timeout_s, 0.001) * 1000));
  comm_options.backend = config.backend;
  comm_options.device = config.device;
  std::unique_ptr<Comm> comm;
  try {
    comm = Comm::Connect(env, comm_options);
  } catch (const std::exception& e) {
    Fail("startup failed", env, ErrorText(e));
    return control.pending_signal() ? 128 + control.pending_signal() : 1;
  }

  std::unique_ptr<probes::RankProbes> p;
  try {
    p = StartProbes(config, env, *comm, clock);
  } catch (const std::exception& e) {
    if (control.pending_signal()) {
      Fail("startup failed", env, ErrorText(e));
      return 128 + control.pending_signal();
    }
    RunControl::PublishError(comm->store_host(), comm->store_port(), env.rank, ErrorText(e),
                             StoreProbeTimeout(*comm));
    Fail("startup failed", env, ErrorText(e));
    return 1;
  }
  comm->set_probe(p->collectives());
  control.AttachSession(p->session());
  // Declared after `p`, so it runs before the probes are destroyed.
  struct DetachOnReturn {
    RunControl& control;
    ~DetachOnReturn() { control.Detach(); }
  } detach_on_return{control};
  probes::Watchdog* watchdog = p->watchdog();
  control.SetForceExitHook(
      [watchdog](const std::string& reason) { watchdog->DumpNow(reason.c_str()); });
  control.StartWatcher(comm->store_host(), comm->store_port(), env.rank, StoreProbeTimeout(*comm),
                       kForceExitGrace);

  try {
    {
      Trainer trainer(config, env, faults, *comm, p->session(), control);
      trainer.Run();
    }
    FinishRun(*comm, *p, control);
  } catch (const StopRun& stop) {
    control.Finishing();
    if (stop.signo() != 0) p->session()->RecordSignal(stop.signo());
    p->watchdog()->DumpNow(stop.signo() != 0 ? trace::SignalName(stop.signo()).c_str()
                                             : trace::flight_dump_reason::kError.data());
    p->session()->End(stop.reason(), stop.status(), stop.detail());
    if (stop.reason() != end_reason::kSignal)
      Fail("stopping after a peer failed", env, stop.detail());
    return stop.status();  // stopped between phases: the process group is idle, leave cleanly
  } catch (const std::exception& e) {
    EndAfterFailure(e, env, *comm, *p, control);
  }
  p->session()->End(end_reason::kOk, 0);
  return 0;
}

}  // namespace dsdiag::trainer
