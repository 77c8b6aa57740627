#include "trainer/torch/run_control.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <vector>

#include "probes/session.h"
#include "trace/clock.h"
#include "trace/flight_dump_keys.h"
#include "trace/records/end_record.h"
#include "trace/signal_name.h"
#include "trainer/torch/error_text.h"

namespace dsdiag::trainer {
namespace {

namespace end_reason = trace::records::end_reason;

// Handler state: a signal handler can only touch lock-free atomics.
std::atomic<int> g_signal{0};
std::atomic<probes::Session*> g_session{nullptr};
std::atomic<RunControl*> g_control{nullptr};
std::terminate_handler g_old_terminate = nullptr;
struct sigaction g_old_term;
struct sigaction g_old_int;
struct sigaction g_old_pipe;

void OnSignal(int signo) {
  int expected = 0;
  g_signal.compare_exchange_strong(expected, signo);
  if (probes::Session* session = g_session.load()) session->FlushFromSignal();
}

constexpr auto kPollInterval = std::chrono::milliseconds(100);
constexpr auto kReconnectEvery = std::chrono::seconds(1);

// c10d 1.13 applies a client's timeout to its socket reads only in wait() and get():
// before that a check() on a link that went dead blocks until TCP gives up (minutes). One
// get() of a key the watcher sets itself arms the timeout for every later read.
void ArmReadTimeout(c10d::TCPStore* store) {
  const std::string key = "dsdiag/watcher/armed";
  store->set(key, std::vector<uint8_t>{'1'});
  store->get(key);
}

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
  // Gloo sends with writev(2), which cannot be told MSG_NOSIGNAL: writing to a peer that
  // just died raises SIGPIPE, whose default action kills this rank on the spot, without a
  // word in its trace. Python ignores SIGPIPE at start-up, so PyTorch users never see this;
  // a C++ rank must do the same, and then the write fails with EPIPE and Gloo throws
  // ("Broken pipe"), which ends the rank through its error path like any lost peer.
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &g_old_pipe);
  g_control.store(this);
  g_old_terminate = std::set_terminate(&RunControl::OnTerminate);
}

RunControl::~RunControl() {
  Detach();
  g_control.store(nullptr);
  std::set_terminate(g_old_terminate);
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGPIPE, &g_old_pipe, nullptr);
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
    if (control && control->force_exit_hook_)
      control->force_exit_hook_(std::string(trace::flight_dump_reason::kError));
    session->End(end_reason::kError, 128 + SIGABRT, what);
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
    throw StopRun(std::string(end_reason::kSignal), 128 + signo, trace::SignalName(signo), signo);
  }
  if (peer_failed_.load()) throw StopRun(std::string(end_reason::kPeerFailure), 1, peer_error());
}

namespace {

// A client of its own to the store at host:port (not a server, not counted as a worker).
// c10d rounds its connect timeout down to whole seconds: at least one, the callers bound
// the wait themselves.
std::unique_ptr<c10d::TCPStore> ConnectStore(const std::string& host, int port,
                                             std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(port);
  options.isServer = false;
  options.waitWorkers = false;
  options.timeout = std::max<std::chrono::milliseconds>(timeout, std::chrono::seconds(1));
  return std::make_unique<c10d::TCPStore>(host, options);
}

// c10d's socket reads end with "Socket Timeout" when SO_RCVTIMEO runs out.
bool IsStoreTimeout(const std::string& error) {
  return error.find("Socket Timeout") != std::string::npos ||
         error.find("timed out") != std::string::npos ||
         error.find("Timed out") != std::string::npos;
}

// What the publishing thread and the rank that waits for it share; the thread may outlive
// the wait, so it holds its own reference.
struct PublishState {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  bool published = false;
  std::string error;
};

void Publish(std::shared_ptr<PublishState> state, std::string host, int port, std::string value,
             std::chrono::milliseconds bound) {
  bool published = false;
  std::string error;
  try {
    std::unique_ptr<c10d::TCPStore> store = ConnectStore(host, port, bound);
    // First failure wins: a later one is usually a consequence of it.
    if (!store->check({kErrorKey})) {
      store->set(kErrorKey, std::vector<uint8_t>(value.begin(), value.end()));
    }
    published = true;
  } catch (const std::exception& e) {
    error = ErrorText(e);
  }
  std::lock_guard<std::mutex> lock(state->mutex);
  state->done = true;
  state->published = published;
  state->error = std::move(error);
  state->done_cv.notify_all();
}

}  // namespace

RunControl::PublishOutcome RunControl::PublishError(const std::string& host, int port, int rank,
                                                    const std::string& message,
                                                    std::chrono::milliseconds bound) noexcept {
  PublishOutcome outcome;
  const auto start = std::chrono::steady_clock::now();
  try {
    auto state = std::make_shared<PublishState>();
    std::thread(Publish, state, host, port, "rank " + std::to_string(rank) + ": " + message, bound)
        .detach();
    std::unique_lock<std::mutex> lock(state->mutex);
    state->done_cv.wait_for(lock, bound, [&] { return state->done; });
    outcome.published = state->done && state->published;
    outcome.unreachable = !outcome.published;
    outcome.error = state->done ? state->error : "no answer within the bound";
  } catch (const std::exception& e) {  // no thread to be had: nothing was published
    outcome.unreachable = true;
    outcome.error = ErrorText(e);
  }
  outcome.tried = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  return outcome;
}

void RunControl::StartWatcher(const std::string& host, int port, int rank,
                              std::chrono::milliseconds store_timeout,
                              std::chrono::milliseconds grace) {
  rank_ = rank;
  watcher_ = std::thread(&RunControl::WatchLoop, this, host, port, store_timeout, grace);
}

void RunControl::WatchLoop(std::string host, int port, std::chrono::milliseconds store_timeout,
                           std::chrono::milliseconds grace) {
  const std::string where = host + ":" + std::to_string(port);
  const int64_t reconnect_every = std::chrono::nanoseconds(kReconnectEvery).count();
  // A client whose reads time out; null (and `error` set) when the store cannot be reached.
  auto connect = [&](std::string* error) -> std::unique_ptr<c10d::TCPStore> {
    try {
      auto client = ConnectStore(host, port, store_timeout);
      ArmReadTimeout(client.get());
      return client;
    } catch (const std::exception& e) {
      if (error) *error = ErrorText(e);
      return nullptr;
    }
  };
  auto stopping = [&] { return g_signal.load() != 0 || peer_failed_.load(); };

  std::string error;
  std::unique_ptr<c10d::TCPStore> store = connect(&error);
  if (!store) {
    std::fprintf(stderr, "dsdiag: rank %d: failure watcher could not reach the store: %s\n", rank_,
                 error.c_str());
  }
  int64_t stop_since = 0;
  int64_t reconnect_at = 0;  // after the store stopped answering
  while (!stop_watcher_.load()) {
    std::this_thread::sleep_for(kPollInterval);
    if (!store && reconnect_at != 0 && trace::MonotonicNs() >= reconnect_at && !stopping() &&
        !finishing_.load()) {
      store = connect(nullptr);
      reconnect_at = store ? 0 : trace::MonotonicNs() + reconnect_every;
    }
    if (store && !peer_failed_.load() && !finishing_.load() && !PollStore(&store, where)) {
      reconnect_at = trace::MonotonicNs() + reconnect_every;
    }
    if (!stopping() || finishing_.load()) {
      stop_since = 0;
      continue;
    }
    const int64_t now = trace::MonotonicNs();
    if (stop_since == 0) stop_since = now;
    if (now - stop_since >= std::chrono::nanoseconds(grace).count()) ForceExit();
  }
}

bool RunControl::PollStore(std::unique_ptr<c10d::TCPStore>* store, const std::string& where) {
  try {
    if ((*store)->check({kErrorKey})) {
      std::vector<uint8_t> value = (*store)->get(kErrorKey);
      std::lock_guard<std::mutex> lock(mutex_);
      peer_error_.assign(value.begin(), value.end());
      peer_failed_.store(true);
    }
    return true;
  } catch (const std::exception& e) {
    const std::string error = ErrorText(e);
    // A reply cut short leaves the client's stream mid-message: start over either way.
    store->reset();
    if (IsStoreTimeout(error)) {
      // Silence is not a death: a cut link or a loaded host. This rank's own collective
      // timeout says what happened; the watcher tries again later.
      if (!silence_reported_) {
        silence_reported_ = true;
        std::fprintf(stderr,
                     "dsdiag: rank %d: failure watcher: the store at %s did not answer; "
                     "reconnecting\n",
                     rank_, where.c_str());
      }
      return false;
    }
    if (!finishing_.load()) {
      std::lock_guard<std::mutex> lock(mutex_);
      peer_error_ = "lost the rendezvous store at " + where + " (rank 0 is gone)";
      peer_failed_.store(true);
    }
    return true;
  }
}

void RunControl::ForceExit() noexcept {
  // The main thread is stuck (in a collective, or hung): end the trace from here.
  const int signo = g_signal.load();
  if (force_exit_hook_)
    force_exit_hook_(signo != 0 ? trace::SignalName(signo) : std::string(end_reason::kPeerFailure));
  int status = 1;
  if (probes::Session* session = g_session.load()) {
    if (signo != 0) {
      status = 128 + signo;
      session->RecordSignal(signo);
      session->End(end_reason::kSignal, status, trace::SignalName(signo));
    } else {
      session->End(end_reason::kPeerFailure, status, peer_error());
    }
  } else if (signo != 0) {
    status = 128 + signo;
  }
  std::fflush(stderr);
  std::_Exit(status);
}

}  // namespace dsdiag::trainer
