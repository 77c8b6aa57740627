#include "probes/stop_signals.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <future>
#include <string>

#include "trace/records/end_record.h"
#include "trace/signal_name.h"

namespace dsdiag::probes {
namespace {

// The handler can only reach the instance through a lock-free atomic.
std::atomic<StopSignals*> g_installed{nullptr};

bool IsFunction(const struct sigaction& action) {
  if (action.sa_flags & SA_SIGINFO) return action.sa_sigaction != nullptr;
  return action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN;
}

bool IsIgnored(const struct sigaction& action) {
  return !(action.sa_flags & SA_SIGINFO) && action.sa_handler == SIG_IGN;
}

}  // namespace

int StopSignals::Slot(int signo) noexcept {
  for (int i = 0; i < kSignalCount; ++i) {
    if (kSignals[i] == signo) return i;
  }
  return -1;
}

std::unique_ptr<StopSignals> StopSignals::Install(Session* session, FlightRecorder* recorder) {
  std::unique_ptr<StopSignals> self(new StopSignals(session, recorder));
  if (!session || !session->on()) return self;  // off: nothing to write, nothing installed
  StopSignals* expected = nullptr;
  if (!g_installed.compare_exchange_strong(expected, self.get())) return nullptr;
  if (pipe2(self->wake_fds_, O_CLOEXEC) != 0) {
    g_installed.store(nullptr);
    return nullptr;
  }
  // The writer thread inherits a mask that blocks everything: no signal lands on it.
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before);
  std::promise<void> named;
  std::future<void> thread_named = named.get_future();
  try {
    self->writer_ = std::thread(&StopSignals::WriterLoop, self.get(), std::move(named));
  } catch (const std::exception&) {
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    g_installed.store(nullptr);
    return nullptr;
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  // Its `thread` record comes before anything the loop writes from here on.
  thread_named.wait();

  struct sigaction action = {};
  action.sa_sigaction = &StopSignals::OnSignal;
  sigemptyset(&action.sa_mask);
  // A stop signal arriving while another's handler runs waits for it to return.
  for (int signo : kSignals) sigaddset(&action.sa_mask, signo);
  // Restart interrupted system calls: collectives' and stores' socket loops are not all
  // EINTR-safe.
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  for (int i = 0; i < kSignalCount; ++i) {
    struct sigaction previous = {};
    sigaction(kSignals[i], nullptr, &previous);
    if (IsIgnored(previous)) continue;
    self->previous_[i] = previous;
    self->installed_[i] = sigaction(kSignals[i], &action, nullptr) == 0;
  }
  return self;
}

StopSignals::StopSignals(Session* session, FlightRecorder* recorder)
    : session_(session), recorder_(recorder) {}

StopSignals::~StopSignals() {
  for (int i = 0; i < kSignalCount; ++i) {
    if (installed_[i]) sigaction(kSignals[i], &previous_[i], nullptr);
  }
  if (writer_.joinable()) {
    const unsigned char stop = 0;
    if (write(wake_fds_[1], &stop, 1) == 1)
      writer_.join();
    else
      writer_.detach();
  }
  for (int fd : wake_fds_) {
    if (fd >= 0) close(fd);
  }
  StopSignals* self = this;
  g_installed.compare_exchange_strong(self, nullptr);
}

bool StopSignals::handles(int signo) const noexcept {
  const int slot = Slot(signo);
  return slot >= 0 && installed_[slot];
}

void StopSignals::OnSignal(int signo, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  if (StopSignals* self = g_installed.load()) {
    self->session_->FlushFromSignal();
    const unsigned char byte = static_cast<unsigned char>(signo);
    if (write(self->wake_fds_[1], &byte, 1) != 1) {
      // No way to reach the writer: nothing more this handler can do safely.
    }
    self->Chain(signo, info, context);
  }
  errno = saved_errno;
}

void StopSignals::Chain(int signo, siginfo_t* info, void* context) const {
  const int slot = Slot(signo);
  if (slot < 0) return;
  const struct sigaction& previous = previous_[slot];
  if (!IsFunction(previous)) return;  // the default action is the writer thread's to take
  if (previous.sa_flags & SA_SIGINFO) {
    previous.sa_sigaction(signo, info, context);
  } else {
    previous.sa_handler(signo);
  }
}

void StopSignals::WriterLoop(std::promise<void> named) {
  if (trace::TraceWriter* writer = session_->writer()) writer->NameThisThread("stop-signals");
  named.set_value();
  bool stop_written = false;  // evidence of a stop signal is written once
  for (;;) {
    unsigned char byte = 0;
    const ssize_t n = read(wake_fds_[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1 || byte == 0) return;
    const int signo = byte;
    const bool stop = signo != SIGUSR1;
    if (stop && stop_written) continue;
    stop_written = stop_written || stop;
    if (WriteEvidence(signo)) {
      // End the process the way the signal would have: default action, on this thread.
      struct sigaction default_action = {};
      default_action.sa_handler = SIG_DFL;
      sigemptyset(&default_action.sa_mask);
      sigaction(signo, &default_action, nullptr);
      sigset_t just_this;
      sigemptyset(&just_this);
      sigaddset(&just_this, signo);
      pthread_sigmask(SIG_UNBLOCK, &just_this, nullptr);
      raise(signo);
      _exit(128 + signo);  // not reached unless the signal could not end the process
    }
  }
}

bool StopSignals::WriteEvidence(int signo) {
  const std::string name = trace::SignalName(signo);
  if (recorder_) {
    std::string error;
    if (!recorder_->Dump(name, session_->current_step(), session_->current_phase(), &error)) {
      session_->RecordError("flight-recorder", error);
    }
  }
  if (signo == SIGUSR1) return false;
  session_->RecordSignal(signo);
  const int slot = Slot(signo);
  if (IsFunction(previous_[slot])) return false;  // the previous handler decides what follows
  session_->End(trace::records::end_reason::kSignal, 128 + signo, name);
  return true;
}

}  // namespace dsdiag::probes
