// TerminateRecorder: when the process is about to die in std::terminate — an exception
// nobody caught (a collective's "Connection reset by peer" thrown out of main), or Gloo
// aborting from one of its threads when ranks disagree on a collective — the rank's trace
// still says why: an `error` record with the exception's message, the flight dump
// (reason "terminate") and the `end` record (reason "error", status 134, as SIGABRT). Then
// the handler that was there before runs (by default std::abort).
//
//   auto on_terminate = dsdiag::probes::TerminateRecorder::Install(session.get(), &recorder);
//
// One per process: a second Install returns null. The destructor puts the previous
// handler back.
#pragma once

#include <exception>
#include <memory>

#include "probes/flight_recorder.h"
#include "probes/session.h"

namespace dsdiag::probes {

class TerminateRecorder {
 public:
  // `recorder` may be null (no dump). With the session off, installs nothing.
  static std::unique_ptr<TerminateRecorder> Install(Session* session, FlightRecorder* recorder);
  ~TerminateRecorder();
  TerminateRecorder(const TerminateRecorder&) = delete;
  TerminateRecorder& operator=(const TerminateRecorder&) = delete;

  bool installed() const noexcept { return installed_; }

 private:
  TerminateRecorder(Session* session, FlightRecorder* recorder)
      : session_(session), recorder_(recorder) {}
  static void OnTerminate();

  Session* session_;
  FlightRecorder* recorder_;
  std::terminate_handler previous_ = nullptr;
  bool installed_ = false;
};

}  // namespace dsdiag::probes
