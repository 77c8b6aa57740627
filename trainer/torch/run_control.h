// RunControl: how a rank learns that it must stop — a signal (SIGTERM, SIGINT) or a
// failure on another rank — and stops promptly instead of waiting for a collective to
// time out.
//
// - SIGPIPE is ignored while a RunControl lives (as Python does): Gloo's writes to a dead
//   peer then fail with an error instead of killing the rank without a trace.
// - Signals: the handler only sets a flag and flushes the trace (async-signal-safe); the
//   training loop calls Check() between phases and unwinds with StopRun. Repeated signals
//   (a launcher forwarding what the terminal already sent the group) change nothing.
// - Peer failures: a rank that fails publishes "rank R: message" under kErrorKey in the
//   rendezvous store (PublishError, bounded: a rank cut off from the store's host gives up
//   after a couple of seconds and says so). A watcher thread polls that key through its
//   own store client (the main client may be blocked in a wait) and flags a peer failure;
//   losing the store (its connection closed or refused: rank 0 died) counts as one too. A
//   store that stops answering (a cut link) is not a peer failure: the rank's own
//   collective timeout tells that story, and the watcher only reconnects.
// - Blocked main thread: when a stop has been pending for `grace` and the main thread has
//   not unwound (it is stuck in a collective or a hang), the watcher writes the end
//   record itself and exits the process.
// - std::terminate (Gloo aborts from its own threads when peers disagree on a
//   collective's size): the handler records the exception as an `error`, writes the end
//   record, then aborts as the default handler would.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace c10d {
class TCPStore;
}
namespace dsdiag::probes {
class Session;
}

namespace dsdiag::trainer {

inline constexpr const char* kErrorKey = "dsdiag/error";

// Thrown by RunControl::Check(); caught by RunRank, which writes the end record.
class StopRun : public std::exception {
 public:
  StopRun(std::string reason, int status, std::string detail, int signo = 0)
      : reason_(std::move(reason)), status_(status), detail_(std::move(detail)), signo_(signo) {}
  const char* what() const noexcept override { return detail_.c_str(); }
  const std::string& reason() const { return reason_; }  // "signal", "peer-failure"
  int status() const { return status_; }
  const std::string& detail() const { return detail_; }
  int signo() const { return signo_; }

 private:
  std::string reason_;
  int status_;
  std::string detail_;
  int signo_;
};

class RunControl {
 public:
  // Installs the SIGTERM / SIGINT and terminate handlers and ignores SIGPIPE; the destructor stops
  // the watcher and puts the previous handlers back. One per process.
  RunControl();
  ~RunControl();
  RunControl(const RunControl&) = delete;
  RunControl& operator=(const RunControl&) = delete;

  // The session the signal handler flushes and the watcher ends; may be null.
  void AttachSession(probes::Session* session);

  // Starts the watcher thread with its own client of the store at host:port.
  void StartWatcher(const std::string& host, int port, int rank,
                    std::chrono::milliseconds store_timeout,
                    std::chrono::milliseconds grace = std::chrono::seconds(5));

  // Stops the watcher and detaches the session (before the session goes away).
  void Detach();

  // Main thread, between phases: throws StopRun when a signal arrived or a peer failed.
  void Check() const;
  int pending_signal() const;
  bool peer_failed() const { return peer_failed_.load(); }
  std::string peer_error() const;

  // Called just before the watcher forces the exit or the terminate handler aborts (e.g.
  // to dump the flight recorder), with "SIGTERM", "peer-failure", "error". Set before
  // StartWatcher.
  void SetForceExitHook(std::function<void(const std::string& reason)> hook) {
    force_exit_hook_ = std::move(hook);
  }

  // The run is over (or unwinding): store loss is expected from now on and the watcher
  // no longer forces an exit.
  void Finishing() { finishing_.store(true); }

  // What became of a PublishError.
  struct PublishOutcome {
    bool published = false;    // set, or another rank's failure was there first
    bool unreachable = false;  // no connection or no answer from the store within the bound
    std::chrono::milliseconds tried{0};  // how long it tried
    std::string error;                   // the store client's error, when it raised one
  };

  // Publishes this rank's failure for the others through a client of its own to the store
  // at host:port, giving up after `bound`; never throws. A thread does the talking: no
  // socket option of c10d bounds a connect plus a check plus a set, and a thread still
  // stuck past the bound is left behind (the caller is about to end the process).
  static PublishOutcome PublishError(const std::string& host, int port, int rank,
                                     const std::string& message,
                                     std::chrono::milliseconds bound) noexcept;

 private:
  static void OnTerminate();
  void WatchLoop(std::string host, int port, std::chrono::milliseconds store_timeout,
                 std::chrono::milliseconds grace);
  // One poll of kErrorKey. False when the store did not answer in time: `store` is then
  // dropped (its stream is mid-reply) and the watcher reconnects later.
  bool PollStore(std::unique_ptr<c10d::TCPStore>* store, const std::string& where);
  void ForceExit() noexcept;

  std::atomic<bool> peer_failed_{false};
  std::atomic<bool> finishing_{false};
  std::atomic<bool> stop_watcher_{false};
  bool silence_reported_ = false;  // watcher thread only
  mutable std::mutex mutex_;
  std::string peer_error_;  // guarded by mutex_
  int rank_ = 0;
  std::function<void(const std::string&)> force_exit_hook_;
  std::thread watcher_;
};

}  // namespace dsdiag::trainer
