#include "probes/watchdog.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "trace/clock.h"
#include "trace/flight_dump_keys.h"
#include "trace/records/end_record.h"

namespace dsdiag::probes {
namespace {

std::atomic<Watchdog*> g_sigusr1_watchdog{nullptr};

void OnSigusr1(int) {
  if (Watchdog* w = g_sigusr1_watchdog.load()) w->RequestDump(Watchdog::DumpReason::kSigusr1);
}

const char* ReasonName(Watchdog::DumpReason r) {
  switch (r) {
    case Watchdog::DumpReason::kSigusr1:
      return "SIGUSR1";
    case Watchdog::DumpReason::kSigterm:
      return "SIGTERM";
    case Watchdog::DumpReason::kError:
      return trace::flight_dump_reason::kError.data();
    case Watchdog::DumpReason::kNone:
      break;
  }
  return "request";
}

}  // namespace

Watchdog::Watchdog(Session* session, FlightRecorder* recorder, double timeout_s,
                   int poll_interval_ms)
    : session_(session),
      recorder_(recorder),
      timeout_ns_(static_cast<int64_t>(timeout_s * 1e9)),
      poll_interval_ms_(poll_interval_ms) {
  if (!session_->on() || !recorder_) return;
  thread_ = std::thread([this] { Loop(); });
  // Wait until the thread has named itself: its `thread` record must come before anything
  // the loop writes later (an `end` record written right after this returns included).
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return named_; });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  Watchdog* self = this;
  g_sigusr1_watchdog.compare_exchange_strong(self, nullptr);
}

void Watchdog::InstallSigusr1Handler(Watchdog* watchdog) {
  g_sigusr1_watchdog.store(watchdog);
  struct sigaction sa {};
  sa.sa_handler = OnSigusr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
}

void Watchdog::DumpNow(const char* reason) noexcept {
  if (!session_->on() || !recorder_) return;
  session_->FlushHeldRecords();  // the trace up to now, for what the dump says
  std::string error;
  if (recorder_->Dump(reason, session_->current_step(), session_->current_phase(), &error))
    ++dumps_;
  else
    session_->RecordError("flight-recorder", error);
}

void Watchdog::Loop() {
  session_->writer()->NameThisThread("watchdog");
  std::unique_lock<std::mutex> lock(mu_);
  named_ = true;
  cv_.notify_all();
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(poll_interval_ms_));
    if (stop_) break;
    lock.unlock();
    const int requested = requested_.exchange(0);
    if (requested != 0) DumpNow(ReasonName(static_cast<DumpReason>(requested)));
    CheckTimeout();
    lock.lock();
  }
}

bool Watchdog::PendingPastTimeout(FlightEntry* e, int64_t* waited) const {
  if (!recorder_->OldestPending(e) || e->id == last_timed_out_id_) return false;
  // A message times out from when the rank began to wait in it, a collective from its issue.
  *waited = trace::MonotonicNs() - (e->p2p ? e->t_started : e->t_issued);
  return *waited >= timeout_ns_;
}

void Watchdog::CheckTimeout() {
  if (timeout_ns_ <= 0) return;
  FlightEntry e;
  int64_t waited = 0;
  if (!PendingPastTimeout(&e, &waited)) return;
  recorder_->Refresh();  // a collective queued on a device may have completed there unseen
  if (!PendingPastTimeout(&e, &waited)) return;
  last_timed_out_id_ = e.id;
  timed_out_ = true;
  char message[192];
  if (e.p2p) {
    // Not "pg N seq M": that names a collective to the analyzers (watchdog_message.h).
    const bool send = e.what.op == "send";
    std::snprintf(message, sizeof message,
                  "point-to-point %.15s %s rank %lld on group %d (message %lld of the pair, %.31s) "
                  "waited on for %.1f s, past the %.1f s timeout",
                  e.what.op.c_str(), send ? "to" : "from", static_cast<long long>(e.peer), e.pg,
                  static_cast<long long>(e.seq), e.what.tag.c_str(), waited / 1e9,
                  timeout_ns_ / 1e9);
  } else {
    std::snprintf(
        message, sizeof message,
        "collective pg %d seq %lld (%.15s, %.31s) pending for %.1f s, past the %.1f s timeout",
        e.pg, static_cast<long long>(e.seq), e.what.op.c_str(), e.what.tag.c_str(), waited / 1e9,
        timeout_ns_ / 1e9);
  }
  session_->RecordError("watchdog", message);
  DumpNow(trace::flight_dump_reason::kTimeout.data());
  if (end_on_timeout_.load()) {
    session_->End(trace::records::end_reason::kError, 1, message);
    std::fprintf(stderr, "dsdiag: rank %d: %s; ending the rank\n", session_->rank(), message);
    std::fflush(stderr);
    std::_Exit(1);
  }
}

}  // namespace dsdiag::probes
