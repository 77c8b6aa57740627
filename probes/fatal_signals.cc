#include "probes/fatal_signals.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "trace/signal_name.h"

namespace dsdiag::probes {
namespace {

// The handler can only reach the instance through a lock-free atomic.
std::atomic<FatalSignals*> g_installed{nullptr};
// Set by the first fatal signal of the process: the evidence is written once.
std::atomic<bool> g_entered{false};

// What the handler learnt of the signal, for the writer thread. Written by the handler
// before it wakes the writer through the pipe (the write/read pair orders the two).
struct CapturedSignal {
  int signo = 0;
  int code = 0;
  bool fault = false;  // the CPU raised it (si_code > 0): the faulting instruction re-runs
  pid_t sender = 0;    // si_pid, for a signal a process sent
  uintptr_t addr = 0;  // si_addr, for a fault
  uintptr_t pc = 0;    // the faulting instruction, where the context has it
};
CapturedSignal g_captured;

constexpr size_t kAltStackBytes = 64 * 1024;

bool IsIgnored(const struct sigaction& action) {
  return !(action.sa_flags & SA_SIGINFO) && action.sa_handler == SIG_IGN;
}

// A signal the CPU raised for the instruction it was running (si_code > 0; SI_KERNEL
// included) rather than one a process sent (kill, raise, abort: si_code <= 0).
bool RaisedByTheCpu(int signo, const siginfo_t* info) {
  if (!info || info->si_code <= 0) return false;
  return signo == SIGSEGV || signo == SIGBUS || signo == SIGFPE || signo == SIGILL;
}

uintptr_t ProgramCounter(void* context) {
  if (!context) return 0;
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.pc);
#else
  (void)uc;
  return 0;
#endif
}

int64_t MonotonicMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// Waits for `fd` to become readable, at most `ms`; async-signal-safe.
void WaitReadable(int fd, int ms) {
  const int64_t deadline = MonotonicMs() + ms;
  for (;;) {
    const int64_t left = deadline - MonotonicMs();
    if (left <= 0) return;
    pollfd p{fd, POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(left));
    if (n != 0 && !(n < 0 && errno == EINTR)) return;
  }
}

// Sleeps about `ms` whatever signals come; async-signal-safe.
void SleepMs(int ms) {
  timespec left{ms / 1000, static_cast<long>(ms % 1000) * 1000000};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

// The si_code of a fault, by name (<asm-generic/siginfo.h>); empty for others.
const char* FaultCodeName(int signo, int code) {
  switch (signo) {
    case SIGSEGV:
      switch (code) {
        case SEGV_MAPERR:
          return "SEGV_MAPERR";  // address not mapped
        case SEGV_ACCERR:
          return "SEGV_ACCERR";  // no permission for the access
      }
      break;
    case SIGBUS:
      switch (code) {
        case BUS_ADRALN:
          return "BUS_ADRALN";
        case BUS_ADRERR:
          return "BUS_ADRERR";  // no such physical address: a truncated mapped file
        case BUS_OBJERR:
          return "BUS_OBJERR";
      }
      break;
    case SIGFPE:
      switch (code) {
        case FPE_INTDIV:
          return "FPE_INTDIV";
        case FPE_INTOVF:
          return "FPE_INTOVF";
        case FPE_FLTDIV:
          return "FPE_FLTDIV";
        case FPE_FLTINV:
          return "FPE_FLTINV";
      }
      break;
    case SIGILL:
      switch (code) {
        case ILL_ILLOPC:
          return "ILL_ILLOPC";  // illegal opcode: code built for another CPU
        case ILL_ILLOPN:
          return "ILL_ILLOPN";
        case ILL_PRVOPC:
          return "ILL_PRVOPC";
      }
      break;
  }
  return code == SI_KERNEL ? "SI_KERNEL" : "";
}

std::string Hex(uintptr_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIxPTR, v);
  return buf;
}

// "libc.so.6 (__memmove_avx_unaligned_erms+0x3b)", "libfoo.so+0x1c20", or the bare address.
// dladdr takes the dynamic loader's lock: on the writer thread, under the handler's bound.
std::string DescribeCode(uintptr_t pc) {
  Dl_info info{};
  if (pc == 0) return {};
  if (dladdr(reinterpret_cast<void*>(pc), &info) == 0 || !info.dli_fname) return Hex(pc);
  std::string module = info.dli_fname;
  const size_t slash = module.rfind('/');
  if (slash != std::string::npos) module.erase(0, slash + 1);
  if (module.empty()) module = "the executable";
  if (!info.dli_sname || !info.dli_saddr)
    return module + "+" + Hex(pc - reinterpret_cast<uintptr_t>(info.dli_fbase));
  std::string symbol = info.dli_sname;
  int status = 0;
  if (char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status)) {
    if (status == 0) symbol = demangled;
    std::free(demangled);
  }
  constexpr size_t kMaxSymbol = 160;
  if (symbol.size() > kMaxSymbol) symbol = symbol.substr(0, kMaxSymbol) + "...";
  return module + " (" + symbol + "+" + Hex(pc - reinterpret_cast<uintptr_t>(info.dli_saddr)) + ")";
}

}  // namespace

int FatalSignals::Slot(int signo) noexcept {
  for (int i = 0; i < kSignalCount; ++i) {
    if (kSignals[i] == signo) return i;
  }
  return -1;
}

FatalSignals::FatalSignals(Session* session, FlightRecorder* recorder)
    : session_(session), recorder_(recorder), pid_(getpid()), writer_id_(pthread_t{}) {}

std::unique_ptr<FatalSignals> FatalSignals::Install(Session* session, FlightRecorder* recorder) {
  std::unique_ptr<FatalSignals> self(new FatalSignals(session, recorder));
  if (!session || !session->on()) return self;  // off: nothing to write, nothing installed
  FatalSignals* expected = nullptr;
  if (!g_installed.compare_exchange_strong(expected, self.get())) return nullptr;
  if (pipe2(self->wake_fds_, O_CLOEXEC) != 0 || pipe2(self->done_fds_, O_CLOEXEC) != 0) {
    g_installed.store(nullptr);
    return nullptr;  // the destructor closes what was opened
  }
  // The writer thread blocks every signal but the fatal ones: its own fault must come to
  // the handler (which waits for the first thread to end the process by its signal), not
  // be a kernel kill by another signal than the one the process is dying of.
  sigset_t mask, before;
  sigfillset(&mask);
  for (int signo : kSignals) sigdelset(&mask, signo);
  pthread_sigmask(SIG_SETMASK, &mask, &before);
  std::promise<void> started;
  std::future<void> writer_started = started.get_future();
  try {
    self->writer_ = std::thread(&FatalSignals::WriterLoop, self.get(), std::move(started));
  } catch (const std::exception&) {
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    g_installed.store(nullptr);
    return nullptr;
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  writer_started.wait();  // writer_id_ is set before a signal can come to the handler

  // A stack overflow leaves no stack to run a handler on: give this thread (the loop's)
  // another, unless it has one already (Python's faulthandler sets its own). Freed by the
  // destructor when it runs on this thread; otherwise left (64 KiB) rather than pulled
  // from under a thread that may still use it.
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE)) {
    stack_t alt{};
    alt.ss_sp = std::malloc(kAltStackBytes);
    alt.ss_size = kAltStackBytes;
    if (alt.ss_sp && sigaltstack(&alt, nullptr) == 0) {
      self->alt_stack_ = alt.ss_sp;
      self->alt_stack_thread_ = std::this_thread::get_id();
    } else {
      std::free(alt.ss_sp);
    }
  }

  struct sigaction action = {};
  action.sa_sigaction = &FatalSignals::OnSignal;
  sigemptyset(&action.sa_mask);
  // Another fatal signal on this thread while the handler runs (a fault in the handler
  // itself) is then a kernel kill by that signal, not a second entry.
  for (int signo : kSignals) sigaddset(&action.sa_mask, signo);
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  for (int i = 0; i < kSignalCount; ++i) {
    struct sigaction previous = {};
    sigaction(kSignals[i], nullptr, &previous);
    if (IsIgnored(previous)) continue;
    self->previous_[i] = previous;
    self->installed_[i] = sigaction(kSignals[i], &action, nullptr) == 0;
    self->installed_any_ = self->installed_any_ || self->installed_[i];
  }
  return self;
}

FatalSignals::~FatalSignals() {
  for (int i = 0; i < kSignalCount; ++i) {
    if (installed_[i]) sigaction(kSignals[i], &previous_[i], nullptr);
  }
  if (alt_stack_ && alt_stack_thread_ == std::this_thread::get_id()) {
    stack_t current{};
    if (sigaltstack(nullptr, &current) == 0 && current.ss_sp == alt_stack_ &&
        !(current.ss_flags & SS_ONSTACK)) {
      stack_t off{};
      off.ss_flags = SS_DISABLE;
      if (sigaltstack(&off, nullptr) == 0) std::free(alt_stack_);
    }
  }
  if (writer_.joinable()) {
    const unsigned char stop = 0;
    if (write(wake_fds_[1], &stop, 1) == 1)
      writer_.join();
    else
      writer_.detach();
  }
  for (int fd : {wake_fds_[0], wake_fds_[1], done_fds_[0], done_fds_[1]}) {
    if (fd >= 0) close(fd);
  }
  FatalSignals* self = this;
  g_installed.compare_exchange_strong(self, nullptr);
}

bool FatalSignals::handles(int signo) const noexcept {
  const int slot = Slot(signo);
  return slot >= 0 && installed_[slot];
}

void FatalSignals::OnSignal(int signo, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  FatalSignals* self = g_installed.load();
  if (!self) {
    // Uninstalled while this signal was on its way: the default action, as without dsdiag.
    signal(signo, SIG_DFL);
    if (!RaisedByTheCpu(signo, info)) raise(signo);
    errno = saved_errno;
    return;
  }
  if (self->pid_ == getpid()) {
    if (!g_entered.exchange(true)) {
      g_captured.signo = signo;
      g_captured.code = info ? info->si_code : 0;
      g_captured.fault = RaisedByTheCpu(signo, info);
      g_captured.sender = info && !g_captured.fault ? info->si_pid : 0;
      g_captured.addr = g_captured.fault ? reinterpret_cast<uintptr_t>(info->si_addr) : 0;
      g_captured.pc = g_captured.fault ? ProgramCounter(context) : 0;
      self->Record();
    } else {
      // A second fatal signal. The writer's own (it faulted while writing): tell the
      // thread waiting for it that nothing more comes. Then wait, bounded, for the first
      // thread to end the process by its signal; past that, this one does it by its own.
      if (pthread_equal(pthread_self(), self->writer_id_.load())) {
        const unsigned char failed = 2;
        if (write(self->done_fds_[1], &failed, 1) != 1) {
          // The first thread's wait is bounded: it goes on without this word.
        }
      }
      SleepMs(kWriteWaitMs + 2000);
    }
  }
  // A forked child (a DataLoader worker) inherited the handler, not the trace: it only
  // passes the signal on.
  self->Chain(signo, info);
  errno = saved_errno;
}

void FatalSignals::Record() noexcept {
  // Ended already: this is std::terminate's abort (recorded there), or a death after the
  // run's end (torch's threads at interpreter shutdown), no part of the run it recorded.
  if (session_->ended()) return;
  const unsigned char record = 1;
  if (!pthread_equal(pthread_self(), writer_id_.load()) && write(wake_fds_[1], &record, 1) == 1) {
    WaitReadable(done_fds_[0], kWriteWaitMs);
  }
  // What the writer formatted but could not flush (it blocked, or timed out), unless
  // another thread holds the buffer at this instant.
  session_->FlushFromSignal();
}

void FatalSignals::Chain(int signo, const siginfo_t* info) const noexcept {
  const int slot = Slot(signo);
  struct sigaction previous = {};
  if (slot >= 0 && installed_[slot]) {
    previous = previous_[slot];
  } else {
    previous.sa_handler = SIG_DFL;
    sigemptyset(&previous.sa_mask);
  }
  sigaction(signo, &previous, nullptr);
  // A fault happens again when the faulting instruction re-runs, now to the previous
  // disposition with its own siginfo (the core dump, faulthandler's traceback). A signal
  // that was sent (abort(), kill) is sent again: blocked while this handler runs, it is
  // delivered to the previous disposition as the handler returns.
  if (!RaisedByTheCpu(signo, info)) raise(signo);
}

void FatalSignals::WriterLoop(std::promise<void> started) {
  writer_id_.store(pthread_self());
  started.set_value();
  for (;;) {
    unsigned char byte = 0;
    const ssize_t n = read(wake_fds_[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1 || byte == 0) return;
    WriteEvidence();
    const unsigned char done = 1;
    if (write(done_fds_[1], &done, 1) != 1) {
      // The handler's wait is bounded: it goes on without this word.
    }
  }
}

// On the writer thread, while the faulting thread waits in the handler: the held records
// and the `end` record first (the trace says how the rank died even if the dump then
// blocks), then the dump.
void FatalSignals::WriteEvidence() {
  const CapturedSignal c = g_captured;
  if (trace::TraceWriter* writer = session_->writer()) writer->NameThisThread("fatal-signal");
  const std::string code = c.fault ? FaultCodeName(c.signo, c.code) : "";
  const std::string addr = c.fault ? Hex(c.addr) : "";
  const std::string pc = c.fault ? DescribeCode(c.pc) : "";
  trace::records::FatalSignalFields how;
  if (c.fault) {
    how.origin = "fault";
  } else if (c.sender == pid_ || c.sender == 0) {
    how.origin = "raise";
  } else {
    how.origin = "kill";
    how.sender = c.sender;
  }
  how.code = code;
  how.addr = addr;
  how.pc = pc;
  const int64_t step = session_->current_step();
  const Phase phase = session_->current_phase();
  session_->EndByFatalSignal(c.signo, how);
  if (recorder_) {
    std::string error;  // the trace has ended: a dump that fails is not recorded
    recorder_->Dump(trace::SignalName(c.signo), step, phase, &error, /*ask_stacks=*/false);
  }
}

}  // namespace dsdiag::probes
