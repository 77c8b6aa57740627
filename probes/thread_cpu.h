// ThreadCpu: what the scheduler says of the calling thread — the time it ran on a CPU and the
// time it was runnable but waited for one (the run queue). A phase that takes longer on one
// rank than on its peers took longer for one of three reasons, and these two numbers tell
// them apart: it computed more (more CPU time), it was starved of CPU by other processes on a
// shared host (more run-queue time), or it was blocked (neither: I/O, a lock, a sleep).
//
// cpu_ns is the thread's CPU clock (CLOCK_THREAD_CPUTIME_ID: exact when read, where
// schedstat's own on-CPU figure for a running thread lags by up to a scheduler tick); runq_ns
// is read from /proc/thread-self/schedstat ("<on-cpu ns> <run-queue ns> <timeslices>", Linux
// 2.6.23+, CONFIG_SCHED_INFO; current while the thread runs, as it is updated when the thread
// gets a CPU) through a file descriptor each thread opens once and re-reads with pread
// (~1 us). Where that file is missing, runq_ns is unknown (-1).
#pragma once

#include <cstdint>

namespace dsdiag::probes {

struct ThreadCpu {
  int64_t cpu_ns = -1;   // on a CPU, since the thread started; -1: unknown
  int64_t runq_ns = -1;  // runnable, waiting for a CPU; -1: unknown
};

ThreadCpu ReadThreadCpu() noexcept;

// The host's 1-minute load average per online CPU (1.0: as many runnable tasks as CPUs), read
// at most once a second (the last value otherwise); negative when unknown.
double HostLoadPerCpu() noexcept;

}  // namespace dsdiag::probes
