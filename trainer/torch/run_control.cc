#include "trainer/torch/run_control.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <vector>

#include "probes/session.h"
#include "trace/clock.h"
#include "trainer/launcher.h"  // SignalName
#include "trainer/torch/error_text.h"

namespace dsdiag::trainer {
namespace {

// Handler state: a signal handler can only touch lock-free atomics.
std::atomic<int> g_signal{0};
std::atomic<probes::Session*> g_session{nullptr};
std::atomic<RunControl*> g_control{nullptr};
std::terminate_handler g_old_terminate = nullptr;
struct sigaction g_old_term;
struct sigaction g_old_int;

void OnSignal(int signo) {
  int expected = 0;
  g_signal.compare_exchange_strong(expected, signo);
  if (probes::Session* session = g_session.load()) session->FlushFromSignal();
}

constexpr auto kPollInterval = std::chrono::milliseconds(100);

}  // namespace

RunControl::RunControl() {
  g_signal.store(0);
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  // Restart interrupted system calls: Gloo's and the store's socket loops are not all
  // EINTR-safe, and the loop notices the flag at its next check anyway.
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, &g_old_term);
  sigaction(SIGINT, &action, &g_old_int);
  g_control.store(this);
  g_old_terminate = std::set_terminate(&RunControl::OnTerminate);
}

RunControl::~RunControl() {
  Detach();
  g_control.store(nullptr);
  std::set_terminate(g_old_terminate);
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGINT, &g_old_int, nullptr);
}

void RunControl::OnTerminate() {
  std::string what = "std::terminate without an active exception";
  if (std::exception_ptr current = std::current_exception()) {
    try {
      std::rethrow_exception(current);
    } catch (const std::exception& e) {
      what = ErrorText(e);
    } catch (...) {
      what = "unknown exception";
    }
  }
  std::fprintf(stderr, "dsdiag: terminate called: %s\n", what.c_str());
  if (probes::Session* session = g_session.load()) {
    session->RecordError("terminate", what);
    RunControl* control = g_control.load();
    if (control && control->force_exit_hook_) control->force_exit_hook_("error");
    session->End("error", 128 + SIGABRT, what);
  }
  std::abort();
}

void RunControl::AttachSession(probes::Session* session) { g_session.store(session); }

void RunControl::Detach() {
  stop_watcher_.store(true);
  if (watcher_.joinable()) watcher_.join();
  g_session.store(nullptr);
}

int RunControl::pending_signal() const { return g_signal.load(); }

std::string RunControl::peer_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peer_error_;
}

void RunControl::Check() const {
  if (const int signo = g_signal.load()) {
    throw StopRun("signal", 128 + signo, SignalName(signo), signo);
  }
  if (peer_failed_.load()) throw StopRun("peer-failure", 1, peer_error());
}

void RunControl::PublishError(c10d::Store& store, int rank, const std::string& message) noexcept {
  try {
    // First failure wins: a later one is usually a consequence of it.
    if (store.check({kErrorKey})) return;
    const std::string value = "rank " + std::to_string(rank) + ": " + message;
    store.set(kErrorKey, std::vector<uint8_t>(value.begin(), value.end()));
  } catch (const std::exception&) {
    // The store is gone (rank 0 died): the others will notice that instead.
  }
}

void RunControl::StartWatcher(const std::string& host, int port, int rank,
                              std::chrono::milliseconds store_timeout,
                              std::chrono::milliseconds grace) {
  rank_ = rank;
  watcher_ = std::thread(&RunControl::WatchLoop, this, host, port, store_timeout, grace);
}

void RunControl::WatchLoop(std::string host, int port, std::chrono::milliseconds store_timeout,
                           std::chrono::milliseconds grace) {
  std::unique_ptr<c10d::TCPStore> store;
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(port);
    options.isServer = false;
    options.waitWorkers = false;
    options.timeout = store_timeout;
    store = std::make_unique<c10d::TCPStore>(host, options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dsdiag: rank %d: failure watcher could not reach the store: %s\n", rank_,
                 ErrorText(e).c_str());
  }
  int64_t stop_since = 0;
  while (!stop_watcher_.load()) {
    std::this_thread::sleep_for(kPollInterval);
    if (store && !peer_failed_.load() && !finishing_.load()) {
      try {
        if (store->check({kErrorKey})) {
          std::vector<uint8_t> value = store->get(kErrorKey);
          std::lock_guard<std::mutex> lock(mutex_);
          peer_error_.assign(value.begin(), value.end());
          peer_failed_.store(true);
        }
      } catch (const std::exception&) {
        if (!finishing_.load()) {
          std::lock_guard<std::mutex> lock(mutex_);
          peer_error_ = "lost the rendezvous store at " + host + ":" + std::to_string(port) +
                        " (rank 0 is gone)";
          peer_failed_.store(true);
        }
        store.reset();
      }
    }
    const bool stopping = g_signal.load() != 0 || peer_failed_.load();
    if (!stopping || finishing_.load()) {
      stop_since = 0;
      continue;
    }
    const int64_t now = trace::MonotonicNs();
    if (stop_since == 0) stop_since = now;
    if (now - stop_since >= std::chrono::nanoseconds(grace).count()) ForceExit();
  }
}

void RunControl::ForceExit() noexcept {
  // The main thread is stuck (in a collective, or hung): end the trace from here.
  const int signo = g_signal.load();
  if (force_exit_hook_) force_exit_hook_(signo != 0 ? SignalName(signo) : "peer-failure");
  int status = 1;
  if (probes::Session* session = g_session.load()) {
    if (signo != 0) {
      status = 128 + signo;
      session->RecordSignal(signo);
      session->End("signal", status, SignalName(signo));
    } else {
      session->End("peer-failure", status, peer_error());
    }
  } else if (signo != 0) {
    status = 128 + signo;
  }
  std::fflush(stderr);
  std::_Exit(status);
}

}  // namespace dsdiag::trainer
