// The run directory of a launched job (`dsdiag train --nproc`, `dsdiag run`): a fresh one
// when --out is not given, and, when it is, the earlier run's rank traces and flight dumps
// cleared from it (compare would read them as part of this run).
#pragma once

#include <string>

namespace dsdiag::cli {

// runs/<timestamp>, with -2, -3... when a run of the same second already has it.
std::string FreshRunDir();

// Removes rank-<R>.jsonl[.zst] and flight-rank-<R>.json files from `dir` (nothing when it
// does not exist); returns how many. Throws InputError when the directory cannot be read.
int RemoveEarlierTraces(const std::string& dir);

}  // namespace dsdiag::cli
