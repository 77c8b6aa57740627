#include "tests/analyzers/synth_test_run.h"

#include <utility>

#include "synth/synth_run.h"

namespace dsdiag::analyzers::testing {

void WriteSynth(const std::string& dir, int ranks, int64_t steps,
                std::vector<std::string> injects) {
  synth::SynthConfig config;
  config.ranks = ranks;
  config.steps = steps;
  config.injects = std::move(injects);
  synth::WriteOptions write;
  write.out_dir = dir;
  write.force = true;
  synth::WriteRun(synth::SynthRun(config), write);
}

}  // namespace dsdiag::analyzers::testing
