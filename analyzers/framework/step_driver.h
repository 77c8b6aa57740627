// Step driver: streams every analysed rank's trace to the analyzers, all ranks moving
// forward one step at a time (see analyzer.h for the order of calls).
//
// Each rank has one open reader and one record looked at ahead. For step s (the lowest step
// any rank has pending), each rank in turn delivers its records while their step is <= s;
// the record with a higher step waits for its turn. So memory is one record per rank plus
// what the analyzers keep per step, whatever the length of the run. Steps no rank has a
// record for are skipped (a resumed run may start at step 1000).
//
// Open files are bounded by `max_open_files` (default: 512, or more when RLIMIT_NOFILE
// allows). Above it the driver falls back to one pass per rank: each rank's records are
// delivered whole, rank after rank, and OnStepDone(s) follows once for every step seen, in
// order, at the end — analyzers then hold more than one step in memory. Lockstep for very
// large runs (reopening readers at saved offsets) is left for later.
//
// Lockstep parses on reader threads when `jobs` allows (more than one rank, jobs > 1):
// each reader thread owns the files of some ranks and queues, per rank, the records of a
// few steps ahead, parsed ("segments": the records one lockstep turn delivers). The driver
// thread alone calls the analyzers, in exactly the serial order, so the findings are the
// same; memory stays a few steps of records per rank. jobs 1 reads on the driver thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "analyzers/framework/analyzer.h"
#include "analyzers/framework/run_context.h"

namespace dsdiag::analyzers {

// Where a drive is, for a progress line on a terminal.
struct DriveProgress {
  int64_t step = 0;        // the last step done (lockstep), or the step reached (per rank)
  int64_t bytes_read = 0;  // over every rank's file so far
};

struct DriveOptions {
  size_t max_open_files = 0;  // 0: automatic (see above)
  // Threads that parse traces in lockstep: 1 reads on the driver thread (the serial path);
  // 0: automatic — $DSDIAG_JOBS when set to a positive integer, else the CPUs when there
  // are 4 or more (on fewer, shared ones, the threads were measured to cost more than they
  // gain), else 1.
  int jobs = 0;
  // Called after each step (lockstep) or each rank (per-rank fallback); may be empty. The
  // callee throttles: it is called often.
  std::function<void(const DriveProgress&)> progress;
};

struct DriveResult {
  std::vector<RankEnd> ends;  // aligned with RunContext::ranks
  int64_t steps_done = 0;     // OnStepDone calls
  bool lockstep = true;       // false when the per-rank fallback ran
  int reader_threads = 0;     // threads that parsed (0: the driver thread read)
};

// Calls Begin, the record/step/rank-end stream, but not Finish. Throws RunInputError when
// a trace that was readable at load time cannot be opened any more.
DriveResult DriveRun(const RunContext& run, const std::vector<std::unique_ptr<Analyzer>>& analyzers,
                     const DriveOptions& options = {});

}  // namespace dsdiag::analyzers
