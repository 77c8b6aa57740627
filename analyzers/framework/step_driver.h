// Step driver: streams every analysed rank's trace to the analyzers in windows of steps
// (see analyzer.h for the order of calls).
//
// A window is the step range [s, s+K): s is the lowest step any rank has pending (the step
// of the record it has looked at ahead), so steps no rank has a record for are skipped and
// a resumed run may start at step 1000. Each rank in turn delivers its records while their
// step is below s+K; then OnStepDone follows, in order, for every step of the window that
// some rank reached. K=1 is lockstep (all ranks one step at a time); K at least the run's
// steps reads each rank whole, one after another. The analyzers hold about K steps of every
// rank, so K comes from a budget of rank-steps, and is short whatever the budget allows:
// K = clamp(kRankStepBudget / ranks, 1, kMaxAutoWindowSteps), or DriveOptions::step_window,
// or $DSDIAG_STEP_WINDOW (a positive integer, or "all": the whole run) for tests and
// benchmarks.
//
// Between its visits a rank's reader is suspended (trace/reader_pool.h): its line buffer
// and JSON parser go back to a pool shared by all, and it rewinds to the start of its
// looked-ahead record's line, so memory is one reader's buffers plus one record per rank,
// not ~70 KB per open file. Open files are bounded by `max_open_files` (default: 512, or
// RLIMIT_NOFILE less a reserve): past it, the files of the ranks over the budget are closed
// between visits and reopened by path (DriveResult::files_kept_open false).
// Compressed traces (.jsonl.zst) cannot seek: their readers stay open and keep their
// buffers; when there are more of them than open files allowed, the whole run is one window
// (each rank read whole, one after another, as the old per-rank fallback did: analyzers
// then hold every step).
//
// Lockstep (K=1) parses on reader threads when `jobs` allows (more than one rank, jobs > 1),
// the window is automatic or 1, every file can stay open and the ranks are at most
// kMaxThreadedRanks (each keeps its reader's buffers and a few queued steps of records):
// see threaded_lockstep.h. Otherwise, with jobs > 1 (automatic on 2 or 3 CPUs), the windows
// are read on one thread ahead of the driver thread (parse_ahead.h). Either way the driver
// thread alone calls the analyzers, in exactly the serial order, so the findings are the
// same. jobs 1 reads on the driver thread.
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
  int64_t step = 0;        // the last step done
  int64_t bytes_read = 0;  // over every rank's file so far
};

// Rank-steps the analyzers may hold at once: what chooses the automatic window. Measured
// at 16,384 ranks x 100 steps (2 cores): K=8 (this budget) compare 249 MB peak RSS, K=16
// 318 MB, K=32 453 MB, K=1 188 MB but twice the time; timeline and report hold more.
inline constexpr int64_t kRankStepBudget = int64_t{1} << 17;
// The longest automatic window. An analyzer's state for a step (a collective's slots, a
// fingerprint point's) is touched once per rank in a window, a whole window of records
// apart: the longer the window, the more of that state is out of the caches by the next
// rank's turn, and every record's first touch of it is a miss. Measured on 2 cores, same
// findings (compare wall, the budget's window against 8 steps): 16 ranks x 4,000 steps
// 0.34 -> 0.25 s; 128 x 1,000 0.78-0.81 -> 0.50-0.56 s (peak RSS 95 -> 13 MB); 1,024 x 100
// 0.63-0.71 -> 0.52-0.56 s; `timeline` at 128 x 1,000 1.31-1.46 -> 0.87-1.00 s. From
// 16,384 ranks on, the budget's window is this one or shorter.
inline constexpr int64_t kMaxAutoWindowSteps = 8;
// A window as long as the run: each rank read whole, one after another.
inline constexpr int64_t kWholeRun = INT64_MAX;
// More ranks than this are read on the driver thread (windows, suspended readers).
inline constexpr size_t kMaxThreadedRanks = 4096;

struct DriveOptions {
  size_t max_open_files = 0;  // 0: automatic (see above)
  // Steps per window: 0 automatic ($DSDIAG_STEP_WINDOW, else from kRankStepBudget), 1
  // lockstep, kWholeRun one rank after another.
  int64_t step_window = 0;
  // Threads that read traces: 1 reads on the driver thread (the serial path); 0: automatic —
  // $DSDIAG_JOBS when set to a positive integer, else the CPUs when there are 4 or more,
  // else 2 on 2 or 3 CPUs (one reading thread ahead of the driver: threaded lockstep was
  // measured to cost more than it gains there), else 1.
  int jobs = 0;
  // Read ahead on one thread (parse_ahead.h) whatever `jobs` and the CPUs say, in any
  // window (tests: the serial drive's sequence must come out the same).
  bool force_parse_ahead = false;
  // Called after each window (each step in lockstep); may be empty. The callee throttles:
  // it is called often.
  std::function<void(const DriveProgress&)> progress;
};

struct DriveResult {
  std::vector<RankEnd> ends;  // aligned with RunContext::ranks
  int64_t steps_done = 0;     // OnStepDone calls
  int64_t step_window = 1;    // K, the steps of a window (kWholeRun: one rank after another)
  // False when there were more ranks than open files allowed: files were closed between
  // windows and reopened, or (compressed traces) each rank was read whole in turn.
  bool files_kept_open = true;
  int reader_threads = 0;    // threads that parsed (0: the driver thread read)
  bool parse_ahead = false;  // one thread read ahead of the driver thread (parse_ahead.h)
};

// Calls Begin, the record/step/rank-end stream, but not Finish. Throws RunInputError when
// a trace that was readable at load time cannot be opened any more, or $DSDIAG_STEP_WINDOW
// is not a window. A trace that cannot be reopened after a suspension becomes that rank's
// read-error issue (trace-corrupt), saying which limit to raise when it is the open files.
DriveResult DriveRun(const RunContext& run, const std::vector<std::unique_ptr<Analyzer>>& analyzers,
                     const DriveOptions& options = {});

}  // namespace dsdiag::analyzers
