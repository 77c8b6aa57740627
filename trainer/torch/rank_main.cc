// RunRank: the life of one rank process around the training loop —
//   parse the fault plan -> rendezvous (TCPStore, process group) -> agree on the run id
//   -> measure the clock offset to rank 0 -> start the probes (header, flight recorder,
//   watchdog, collective probe) -> train -> end-of-run clock and barrier -> `end` record.
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
#include <torch/version.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <thread>

#include "inject/inject_spec.h"
#include "launch/rendezvous.h"
#include "probes/collective_probe.h"
#include "probes/flight_recorder.h"
#include "probes/session.h"
#include "probes/torch/torch_info.h"
#include "probes/watchdog.h"
#include "trace/clock.h"
#include "trace/record_types.h"
#include "trace/signal_name.h"
#include "trace/trace_writer.h"
#include "trainer/torch/clock_sync.h"
#include "trainer/torch/comm.h"
#include "trainer/torch/error_text.h"
#include "trainer/torch/faults.h"
#include "trainer/torch/run_control.h"
#include "trainer/torch/trainer.h"

namespace dsdiag::trainer {
namespace {

constexpr const char* kRunIdKey = "dsdiag/run_id";
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

// The launcher's DSDIAG_RUN_ID, else one made by rank 0 and shared through the store.
std::string ResolveRunId(const launch::DistEnv& env, c10d::Store& store, const WallClock& clock) {
  if (!env.run_id.empty()) return env.run_id;
  if (env.rank == 0) {
    const std::string id = launch::MakeRunId(clock.Now());
    store.set(kRunIdKey, std::vector<uint8_t>(id.begin(), id.end()));
    return id;
  }
  const std::vector<uint8_t> id = store.get(kRunIdKey);
  return std::string(id.begin(), id.end());
}

bool LooksLikePeerLoss(const std::string& message) {
  for (const char* sign : {"Connection closed by peer", "Connection reset by peer", "Broken pipe",
                           "lost the rendezvous store"}) {
    if (message.find(sign) != std::string::npos) return true;
  }
  return false;
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
  {
    auto r = writer->Begin(trace::rec::kError);
    r.line()
        .Field("where", "store")
        .Field("message", "could not reach the rendezvous store at " + store +
                              " to publish this rank's error (gave up after " + tried + ")")
        .Field("store_unreachable", true)
        .Field("store", store)
        .Field("tried_ms", static_cast<int64_t>(outcome.tried.count()));
    if (!outcome.error.empty()) r.line().Field("store_error", outcome.error);
  }
  writer->Flush();
}

// Everything that lives as long as the probes do.
struct Probes {
  std::unique_ptr<probes::Session> session;
  std::unique_ptr<probes::FlightRecorder> recorder;
  std::unique_ptr<probes::Watchdog> watchdog;
  std::unique_ptr<probes::CollectiveProbe> collectives;
};

Probes StartProbes(const TrainConfig& config, const launch::DistEnv& env, const std::string& run_id,
                   const WallClock& clock, const ClockOffset& offset) {
  probes::SessionConfig session_config;
  session_config.mode = probes::ParseMode(config.probes).value_or(probes::Mode::kLight);
  session_config.run_dir = config.out.empty() ? "runs/" + run_id : config.out;
  session_config.compression =
      trace::ParseTraceCompression(config.trace_compress).value_or(trace::TraceCompression::kNone);
  trace::TraceHeader& header = session_config.header;
  header.run_id = run_id;
  header.rank = env.rank;
  header.world_size = env.world_size;
  header.local_rank = env.local_rank;
  header.config = config.ToJson();
  // The clock pair goes through WallClock: a skewed host's header is skewed too.
  header.clock.mono_ns = trace::MonotonicNs();
  header.clock.wall_ns = clock.Now();
  header.clock.offset_ns = offset.offset_ns;
  header.clock.offset_err_ns = offset.err_ns;
  probes::DescribeTorch(&header);
  if (!header.versions.count("libtorch")) header.versions["libtorch"] = TORCH_VERSION;

  Probes p;
  std::string error;
  p.session = probes::Session::Start(session_config, &error);
  if (!p.session) throw std::runtime_error("cannot start the trace: " + error);
  p.session->RecordClock("start", offset.offset_ns, offset.err_ns, offset.rtt_ns);
  p.recorder = std::make_unique<probes::FlightRecorder>(header, session_config.run_dir);
  p.watchdog =
      std::make_unique<probes::Watchdog>(p.session.get(), p.recorder.get(), config.timeout_s);
  probes::Watchdog::InstallSigusr1Handler(p.watchdog.get());
  p.collectives = std::make_unique<probes::CollectiveProbe>(p.session.get(), p.recorder.get());
  return p;
}

// The clean end: a last clock measurement, then a barrier so that rank 0 (the store's
// host) leaves last.
void FinishRun(const launch::DistEnv& env, Comm& comm, const WallClock& clock,
               probes::Session* session, RunControl& control) {
  const ClockOffset end = MeasureClockOffset(comm.store(), env.rank, env.world_size, clock, "end");
  session->RecordClock("end", end.offset_ns, end.err_ns, end.rtt_ns);
  control.Finishing();
  comm.Barrier("final");
}

[[noreturn]] void EndAfterFailure(const std::exception& e, const launch::DistEnv& env, Comm& comm,
                                  Probes& p, RunControl& control) {
  control.Finishing();
  const std::string message = ErrorText(e);
  if (LooksLikePeerLoss(message)) {
    // A vanished peer is often the first sign of a job being torn down: the signal the
    // launcher sent this rank may be a moment behind the one that stopped the peer.
    for (int i = 0; i < 10 && control.pending_signal() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  if (const int signo = control.pending_signal()) {
    // The failure is the signal's doing (a peer stopped first and closed its sockets).
    p.session->RecordSignal(signo);
    p.watchdog->DumpNow(trace::SignalName(signo).c_str());
    p.session->End("signal", 128 + signo, trace::SignalName(signo));
    std::_Exit(128 + signo);
  }
  if (control.peer_failed() || LooksLikePeerLoss(message)) {
    const std::string detail = control.peer_failed() ? control.peer_error() : message;
    p.session->RecordError(probes::PhaseName(p.session->current_phase()), message);
    p.watchdog->DumpNow("error");
    p.session->End("peer-failure", 1, detail);
    Fail("stopping after a peer failed", env, detail);
    std::_Exit(1);
  }
  // This rank's own error first (RecordError flushes): whatever happens while it tells
  // the others, the trace says why it stopped.
  p.session->RecordError(probes::PhaseName(p.session->current_phase()), message);
  // Then the others, likely blocked waiting for this rank; bounded, so that a rank cut off
  // from the store's host ends a few seconds after its timeout, not a minute.
  const RunControl::PublishOutcome published = RunControl::PublishError(
      comm.store_host(), comm.store_port(), env.rank, message, StoreProbeTimeout(comm));
  if (published.unreachable) RecordStoreUnreachable(p.session.get(), comm, published);
  p.watchdog->DumpNow("error");
  p.session->End("error", 1, message);
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
  std::string run_id;
  ClockOffset offset;
  try {
    comm = Comm::Connect(env, comm_options);
    run_id = ResolveRunId(env, comm->store(), clock);
    offset = MeasureClockOffset(comm->store(), env.rank, env.world_size, clock, "start");
  } catch (const std::exception& e) {
    Fail("startup failed", env, ErrorText(e));
    return control.pending_signal() ? 128 + control.pending_signal() : 1;
  }

  Probes p;
  try {
    p = StartProbes(config, env, run_id, clock, offset);
  } catch (const std::exception& e) {
    RunControl::PublishError(comm->store_host(), comm->store_port(), env.rank, ErrorText(e),
                             StoreProbeTimeout(*comm));
    Fail("startup failed", env, ErrorText(e));
    return 1;
  }
  comm->set_probe(p.collectives.get());
  control.AttachSession(p.session.get());
  // Declared after `p`, so it runs before the probes are destroyed.
  struct DetachOnReturn {
    RunControl& control;
    ~DetachOnReturn() { control.Detach(); }
  } detach_on_return{control};
  probes::Watchdog* watchdog = p.watchdog.get();
  control.SetForceExitHook(
      [watchdog](const std::string& reason) { watchdog->DumpNow(reason.c_str()); });
  control.StartWatcher(comm->store_host(), comm->store_port(), env.rank, StoreProbeTimeout(*comm),
                       kForceExitGrace);

  try {
    {
      Trainer trainer(config, env, faults, *comm, p.session.get(), control);
      trainer.Run();
    }
    FinishRun(env, *comm, clock, p.session.get(), control);
  } catch (const StopRun& stop) {
    control.Finishing();
    if (stop.signo() != 0) p.session->RecordSignal(stop.signo());
    p.watchdog->DumpNow(stop.signo() != 0 ? trace::SignalName(stop.signo()).c_str() : "error");
    p.session->End(stop.reason(), stop.status(), stop.detail());
    if (stop.reason() != "signal") Fail("stopping after a peer failed", env, stop.detail());
    return stop.status();  // stopped between phases: the process group is idle, leave cleanly
  } catch (const std::exception& e) {
    EndAfterFailure(e, env, *comm, p, control);
  }
  p.session->End("ok", 0);
  return 0;
}

}  // namespace dsdiag::trainer
