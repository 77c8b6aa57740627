// TorchPart: the two things on the command line that need LibTorch — running one rank of
// `dsdiag train` and timing the data pipeline for `dsdiag loader-sweep`.
//
// `dsdiag` itself never links LibTorch: loading it runs LibTorch's operator registration
// before main (about 0.3 s and 130 MB), which every `compare`, `timeline` and `report` would
// pay for nothing. The build makes a second executable beside it, `dsdiag-torch`: the same
// command line with the trainer linked in (cli/torch_main.cc), which registers its TorchPart
// before running. `dsdiag` hands a rank or a sweep over to it with execv: the same pid,
// environment and descriptors, so launchers (torchrun, srun, --nproc) and signals see one
// process.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "launch/dist_env.h"
#include "trainer/torch/loader_sweep.h"  // LoaderSweepOptions: a torch-free header
#include "trainer/train_config.h"

namespace dsdiag::cli {

struct TorchPart {
  std::function<int(const trainer::TrainConfig&, const launch::DistEnv&)> run_rank;
  std::function<trace::LoaderSweep(const trainer::LoaderSweepOptions&)> loader_sweep;
};

// Called by dsdiag-torch's main before anything else.
void SetLinkedTorchPart(TorchPart part);
// The TorchPart linked into this executable, or null (in `dsdiag`).
const TorchPart* LinkedTorchPart();

// The executable that has the TorchPart: this one when it is linked in (dsdiag-torch), else
// dsdiag-torch beside it; empty when there is none (a build without LibTorch).
std::string TorchExecutable();

// Replaces this process by `dsdiag-torch COMMAND ARGS...`. Returns only when that is
// impossible: says why on stderr, naming `command`, and returns 2.
int ExecTorchPart(const std::string& command, const std::vector<std::string>& args);

}  // namespace dsdiag::cli
