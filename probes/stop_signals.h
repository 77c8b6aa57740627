// StopSignals: one call that makes SIGTERM and SIGINT leave the evidence before a rank goes
// — the flight dump (reason "SIGTERM"), a `signal` record and the `end` record (reason
// "signal", status 128 + signo) — and then lets happen what would have happened without
// dsdiag:
//   - the default action (the usual case in C++): the process ends by the signal, so a
//     launcher still sees "killed by SIGTERM";
//   - a handler that was installed before (the loop's own, Python's): it runs, at once;
//     the process carries on as it decides, so the `end` record is left to the loop
//     (Session::End, or the session's destructor) and only the dump and the `signal`
//     record are written;
//   - a signal that was ignored (a background job's SIGINT) stays ignored: no handler.
// SIGUSR1 writes the flight dump and nothing else (the job goes on).
//
//   auto stop_signals = dsdiag::probes::StopSignals::Install(session.get(), &recorder);
//
// A signal handler may do almost nothing safely: it flushes the trace (async-signal-safe),
// wakes a thread of its own through a pipe and returns; that thread writes the dump and the
// records, then ends the process with the signal when the default action was to end it.
// A previous handler that ends the process at once may therefore end it before the dump
// is written. The thread blocks every signal, so a signal never lands on it.
//
// One per process: a second Install returns null. The destructor puts the previous
// handlers back; call it (or let the object go) before the session goes away.
#pragma once

#include <csignal>
#include <future>
#include <memory>
#include <thread>

#include "probes/flight_recorder.h"
#include "probes/session.h"

namespace dsdiag::probes {

class StopSignals {
 public:
  // `recorder` may be null (no dump). Null when another StopSignals is installed or no
  // pipe / thread could be had.
  static std::unique_ptr<StopSignals> Install(Session* session, FlightRecorder* recorder);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signals this installed a handler for (an ignored one is left alone).
  bool handles(int signo) const noexcept;

 private:
  StopSignals(Session* session, FlightRecorder* recorder);
  static void OnSignal(int signo, siginfo_t* info, void* context);
  void WriterLoop(std::promise<void> named);
  // What the writer thread does for one signal; true when the process should now end by it.
  bool WriteEvidence(int signo);
  void Chain(int signo, siginfo_t* info, void* context) const;

  static constexpr int kSignals[] = {SIGTERM, SIGINT, SIGUSR1};
  static constexpr int kSignalCount = 3;
  static int Slot(int signo) noexcept;

  Session* session_;
  FlightRecorder* recorder_;
  int wake_fds_[2] = {-1, -1};  // the handler writes the signal number, the thread reads it
  struct sigaction previous_[kSignalCount] = {};
  bool installed_[kSignalCount] = {};
  std::thread writer_;
};

}  // namespace dsdiag::probes
