// Watchdog: a thread that watches the flight recorder. When a collective has been pending
// longer than the timeout it dumps the recorder (reason "timeout") and records an `error`
// naming the collective; a dump can also be requested from a signal handler (SIGUSR1,
// SIGTERM) — the handler only sets a flag, the watchdog thread writes the file.
//
// It never aborts the process: the backend's own timeout (or the trainer) does that. Its
// job is to leave the evidence behind before the job is torn down.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "probes/flight_recorder.h"
#include "probes/session.h"

namespace dsdiag::probes {

class Watchdog {
 public:
  enum class DumpReason : int { kNone = 0, kSigusr1, kSigterm, kError };

  Watchdog(Session* session, FlightRecorder* recorder, double timeout_s, int poll_interval_ms = 50);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Async-signal-safe: asks the watchdog thread to dump soon.
  void RequestDump(DumpReason reason) noexcept {
    requested_.store(static_cast<int>(reason), std::memory_order_relaxed);
  }
  // Dumps now from the calling thread (a fatal error on the main thread).
  void DumpNow(const char* reason) noexcept;

  // After a timeout's dump and error record, also write the `end` record (reason "error")
  // and end the process with status 1: a job whose launcher then stops the other ranks ends
  // within the timeout instead of hanging until the backend's own (`dsdiag run`).
  void EndProcessOnTimeout(bool on) noexcept { end_on_timeout_.store(on); }

  // Installs a SIGUSR1 handler that asks `watchdog` for a dump (one watchdog per process).
  static void InstallSigusr1Handler(Watchdog* watchdog);

  bool timed_out() const noexcept { return timed_out_.load(); }
  int dumps_written() const noexcept { return dumps_.load(); }

 private:
  void Loop();
  void CheckTimeout();
  // The oldest pending entry, when it has waited past the timeout (and did not time out yet).
  bool PendingPastTimeout(FlightEntry* e, int64_t* waited) const;

  Session* session_;
  FlightRecorder* recorder_;
  const int64_t timeout_ns_;
  const int poll_interval_ms_;
  std::atomic<int> requested_{0};
  std::atomic<bool> timed_out_{false};
  std::atomic<bool> end_on_timeout_{false};
  std::atomic<int> dumps_{0};
  int64_t last_timed_out_id_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool named_ = false;  // the thread wrote its `thread` record (guarded by mu_)
  std::thread thread_;
};

}  // namespace dsdiag::probes
