// Lockstep with reader threads: the step driver's path when `jobs` allows more than one
// thread (step_driver.h). Each reader thread owns the files of some ranks and queues, per
// rank, the records of a few steps ahead, parsed ("segments": the records one lockstep turn
// delivers). The driver thread alone calls the analyzers, in exactly the serial order, so
// the findings are the same; memory stays a few steps of records per rank.
#pragma once

#include "analyzers/framework/record_dispatch.h"
#include "analyzers/framework/run_context.h"
#include "analyzers/framework/step_driver.h"

namespace dsdiag::analyzers {

// The driver thread is the bottleneck past this many reader threads.
inline constexpr int kMaxReaderThreads = 4;

// Opens every rank of `run`, drives them in lockstep with `threads` reader threads, and
// fills result->ends and steps_done. Throws RunInputError when a trace cannot be opened.
void DriveLockstepThreaded(const RunContext& run, const Dispatch& dispatch,
                           const DriveOptions& options, int threads, DriveResult* result);

}  // namespace dsdiag::analyzers
