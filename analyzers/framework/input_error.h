// RunInputError: a run directory that cannot be analysed at all — it does not exist, holds
// no rank trace, two files claim the same rank, a file cannot be opened. The message names
// the directory or files concerned; the CLI turns it into exit status 2. Damage inside a
// readable trace is never an error of this kind: it becomes a trace-corrupt finding.
#pragma once

#include <stdexcept>

namespace dsdiag::analyzers {

class RunInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dsdiag::analyzers
