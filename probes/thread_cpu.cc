#include "probes/thread_cpu.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "trace/clock.h"

namespace dsdiag::probes {
namespace {

constexpr int kNotOpened = -2;  // this thread has not tried yet
constexpr int kMissing = -1;    // no schedstat for this thread: the clock fallback

// Parses a non-negative decimal at *p, advancing past it and one separator.
int64_t ParseField(const char** p, const char* end) {
  int64_t v = 0;
  bool any = false;
  while (*p < end && **p >= '0' && **p <= '9') {
    v = v * 10 + (**p - '0');
    ++*p;
    any = true;
  }
  if (*p < end) ++*p;
  return any ? v : -1;
}

int ThisThreadsSchedstat() {
  // Each thread reads its own: /proc/thread-self resolves to the thread that opens it.
  thread_local int fd = kNotOpened;
  if (fd == kNotOpened) {
    fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) fd = kMissing;
  }
  return fd;
}

int64_t ThreadClockNs() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return -1;
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

ThreadCpu ReadThreadCpu() noexcept {
  ThreadCpu out;
  out.cpu_ns = ThreadClockNs();
  const int fd = ThisThreadsSchedstat();
  if (fd < 0) return out;
  char buf[96];
  const ssize_t n = pread(fd, buf, sizeof buf, 0);
  if (n <= 0) return out;
  const char* p = buf;
  const char* end = buf + n;
  ParseField(&p, end);  // on a CPU: the clock's figure is the exact one
  out.runq_ns = ParseField(&p, end);
  return out;
}

double HostLoadPerCpu() noexcept {
  static std::atomic<int64_t> read_at_ns{0};
  static std::atomic<double> last{-1.0};
  const int64_t now = trace::MonotonicNs();
  const int64_t then = read_at_ns.load(std::memory_order_relaxed);
  if (then != 0 && now - then < 1'000'000'000) return last.load(std::memory_order_relaxed);
  read_at_ns.store(now, std::memory_order_relaxed);
  const int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1.0;
  char buf[64];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (n <= 0 || cpus <= 0) return -1.0;
  buf[n] = '\0';
  const double load = std::strtod(buf, nullptr) / static_cast<double>(cpus);
  last.store(load, std::memory_order_relaxed);
  return load;
}

}  // namespace dsdiag::probes
