// A `dsdiag synth` run written in process into a test's directory, for the analyzer tests
// that compare ways of reading one run (threaded_compare_synth_test, step_window_test).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dsdiag::analyzers::testing {

// Writes a synth run of `ranks` x `steps` with the given --inject specs into `dir`
// (replacing what is there).
void WriteSynth(const std::string& dir, int ranks, int64_t steps, std::vector<std::string> injects);

}  // namespace dsdiag::analyzers::testing
