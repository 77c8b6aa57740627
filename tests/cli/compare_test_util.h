// Runs the built `dsdiag` binary (DSDIAG_BINARY) from the repo root (DSDIAG_SOURCE_DIR),
// so that run dirs are given relative to it and `run.dir` in the output is stable.
#pragma once

#include <string>

#include "tests/support/files.h"
#include "tests/support/shell.h"

namespace dsdiag::cli::testing {

using test_support::CommandResult;

using test_support::ReadFile;

// `args` is appended to the command line as is (quote what needs quoting).
inline CommandResult RunDsdiag(const std::string& args) {
  return test_support::RunShell("cd " + test_support::Quote(DSDIAG_SOURCE_DIR) + " && " +
                                test_support::Quote(DSDIAG_BINARY) + " " + args);
}

}  // namespace dsdiag::cli::testing
