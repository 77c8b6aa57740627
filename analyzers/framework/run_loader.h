// Run loader: turns RUN_DIR into a RunContext from file names and headers alone.
//
// A run dir holds `rank-<R>.jsonl` traces and `flight-rank-<R>.json` dumps; any other file
// is ignored. The loader reads line 1 of every trace and decides:
//   - world_size and run_id: what most headers say (ties go to the lowest rank's value);
//   - which traces are analysed: a valid header of schema major 1, the run's run_id and a
//     rank below world_size; the others are listed in `excluded` (reported as trace-corrupt
//     errors naming file and line) and take no further part;
//   - which ranks are missing: 0..world_size-1 with no trace file at all (rank-died).
// It throws RunInputError when there is nothing to analyse or the files contradict each
// other about who is who: the dir is missing or holds no trace, two file names give the
// same rank, or a header's rank differs from its file name's.
#pragma once

#include <string>

#include "analyzers/framework/run_context.h"

namespace dsdiag::analyzers {

// Throws RunInputError (see above). Never reads past line 1 of a trace.
RunContext LoadRun(const std::string& dir);

}  // namespace dsdiag::analyzers
