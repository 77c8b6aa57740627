// What every command that reads a run directory (compare, timeline, report) does before it
// reads: take RUN_DIR as its one positional argument, and lift the open-file limit so the
// step driver can hold every rank's trace open at once.
#pragma once

#include <string>
#include <vector>

#include "cli/options.h"

namespace dsdiag::cli {

// ParseArgs with RUN_DIR as the positional argument, stored in *run_dir. Throws UsageError
// "missing RUN_DIR, the run directory to <purpose>" when it is not given. Returns true when
// --help was asked for (then *run_dir may be empty).
bool ParseRunDirArgs(const std::vector<std::string>& args, po::options_description& options,
                     const std::string& purpose, po::variables_map* vm, std::string* run_dir);

// The step driver keeps one file open per rank to read them side by side; past the
// open-file limit it falls back to one rank at a time (slower; the timeline and report
// lose the waits between ranks). Most systems allow far more than their default soft limit
// of 1024: raise it to the hard limit, best effort.
void RaiseOpenFileLimit();

}  // namespace dsdiag::cli
