// FatalSignals: a rank that dies by SIGSEGV, SIGBUS, SIGFPE, SIGILL or a SIGABRT that did
// not come through std::terminate (abort() in a C library, a failed CHECK, glibc's "double
// free") still says how it died: the records the probes hold (light mode's held
// collectives) are written, then the flight dump (reason: the signal's name) and the `end`
// record — reason "signal", status 128 + signo, the signal's name, where it came from
// (a fault, the process itself, another process) and, for a fault, its si_code, address
// and the code that faulted (docs/trace-format.md, "`end`"). Then the process dies exactly
// as it would have without dsdiag: the previous disposition is put back (a handler that was
// there before — Python's faulthandler — still runs and prints its traceback) and the
// signal is delivered again, so the exit status and any core dump are unchanged.
//
//   auto fatal = dsdiag::probes::FatalSignals::Install(session.get(), &recorder);
//
// A signal handler may do almost nothing safely, and this one runs on a thread that may
// hold any lock (malloc's, after a heap corruption; the trace writer's; Python's GIL). So
// the handler writes nothing itself: it hands the signal to a thread of its own (a byte
// through a pipe), waits for it at most kWriteWait (poll(2) on a second pipe), flushes
// what the trace buffered (async-signal-safe, never waits for the buffer's lock) and lets
// the signal go on. The writer thread does what no handler may — formatting, malloc, the
// dump's file and locks — which is accepted because the process is dying anyway: at worst
// it blocks on a lock the faulting thread holds, and the bounded wait ends the process
// without that evidence. The dump asks for no stacks (Python's provider needs the GIL the
// faulting thread may hold).
//
// Written once: a second fatal signal (another thread faulting meanwhile, the writer
// faulting while it writes) writes nothing and waits for the first to end the process,
// bounded too. An alternate signal stack on the installing thread (the loop's) lets a stack
// overflow there still be recorded; other threads' overflows are not (sigaltstack is per
// thread). A trace that has ended already (its `end` written, e.g. by the terminate
// handler, which then aborts) gets nothing more: that SIGABRT is std::terminate's and was
// recorded there. A forked child (a DataLoader worker) inherits the handler but not the
// writer thread: there it only passes the signal on.
//
// One per process: a second Install returns null. The destructor puts the previous
// dispositions back; call it (or let the object go) before the session goes away.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <csignal>
#include <future>
#include <memory>
#include <thread>

#include "probes/flight_recorder.h"
#include "probes/session.h"

namespace dsdiag::probes {

class FatalSignals {
 public:
  // How long the faulting thread waits for the writer thread before the process dies
  // without the rest of the evidence (the writer blocked on a lock the faulting thread
  // holds).
  static constexpr int kWriteWaitMs = 5000;

  // `recorder` may be null (no dump). With the session off, installs nothing. Null when
  // another FatalSignals is installed or no pipe / thread could be had.
  static std::unique_ptr<FatalSignals> Install(Session* session, FlightRecorder* recorder);
  ~FatalSignals();
  FatalSignals(const FatalSignals&) = delete;
  FatalSignals& operator=(const FatalSignals&) = delete;

  bool installed() const noexcept { return installed_any_; }
  // The signals this installed a handler for (an ignored one is left alone).
  bool handles(int signo) const noexcept;

 private:
  FatalSignals(Session* session, FlightRecorder* recorder);
  static void OnSignal(int signo, siginfo_t* info, void* context);
  // The first fatal signal, on the thread it hit: hand it to the writer, wait, flush.
  void Record() noexcept;
  // Puts the previous disposition back and has the signal delivered to it.
  void Chain(int signo, const siginfo_t* info) const noexcept;
  void WriterLoop(std::promise<void> started);
  void WriteEvidence();

  static constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
  static constexpr int kSignalCount = 5;
  static int Slot(int signo) noexcept;

  Session* session_;
  FlightRecorder* recorder_;
  const pid_t pid_;                   // the process whose trace this is (not a fork's)
  int wake_fds_[2] = {-1, -1};        // handler -> writer: 1 a signal to record, 0 stop
  int done_fds_[2] = {-1, -1};        // writer -> handler: the evidence is written
  std::atomic<pthread_t> writer_id_;  // to tell the writer's own fault
  struct sigaction previous_[kSignalCount] = {};
  bool installed_[kSignalCount] = {};
  bool installed_any_ = false;
  void* alt_stack_ = nullptr;  // the alternate stack this gave the installing thread
  std::thread::id alt_stack_thread_;
  std::thread writer_;
};

}  // namespace dsdiag::probes
