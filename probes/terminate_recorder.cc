#include "probes/terminate_recorder.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>

#include "trace/flight_dump_keys.h"
#include "trace/records/end_record.h"

namespace dsdiag::probes {
namespace {

std::atomic<TerminateRecorder*> g_installed{nullptr};

// The message of the exception being handled, if any.
std::string CurrentExceptionText() {
  const std::exception_ptr current = std::current_exception();
  if (!current) return "std::terminate without an active exception";
  try {
    std::rethrow_exception(current);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception of unknown type";
  }
}

}  // namespace

std::unique_ptr<TerminateRecorder> TerminateRecorder::Install(Session* session,
                                                              FlightRecorder* recorder) {
  std::unique_ptr<TerminateRecorder> self(new TerminateRecorder(session, recorder));
  if (!session || !session->on()) return self;
  TerminateRecorder* expected = nullptr;
  if (!g_installed.compare_exchange_strong(expected, self.get())) return nullptr;
  self->previous_ = std::set_terminate(&TerminateRecorder::OnTerminate);
  self->installed_ = true;
  return self;
}

TerminateRecorder::~TerminateRecorder() {
  if (!installed_) return;
  std::set_terminate(previous_);
  g_installed.store(nullptr);
}

void TerminateRecorder::OnTerminate() {
  // Only the first thread in here writes; a second terminating thread gives it time to
  // finish (its abort ends both).
  static std::atomic<bool> entered{false};
  TerminateRecorder* self = g_installed.load();
  std::terminate_handler previous = self ? self->previous_ : nullptr;
  const bool first = !entered.exchange(true);
  if (self && !first) std::this_thread::sleep_for(std::chrono::seconds(2));
  // A trace that ended already ended well: the process dies after it (torch's Gloo threads at
  // interpreter shutdown, say), and the abort is no part of the run it recorded.
  if (self && first && !self->session_->ended()) {
    const std::string what = CurrentExceptionText();
    Session* session = self->session_;
    session->RecordError("terminate", what);
    if (self->recorder_) {
      std::string error;
      self->recorder_->Dump(trace::flight_dump_reason::kTerminate, session->current_step(),
                            session->current_phase(), &error);
    }
    session->End(trace::records::end_reason::kError, 128 + SIGABRT, what);
  }
  if (previous) previous();
  std::abort();
}

}  // namespace dsdiag::probes
