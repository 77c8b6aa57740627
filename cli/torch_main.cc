// dsdiag-torch: the dsdiag command line with the reference trainer linked in. `dsdiag`
// hands ranks and loader sweeps over to it (cli/torch_part.h); run by hand, it behaves as
// dsdiag does.
#include "cli/cli_main.h"
#include "cli/torch_part.h"
#include "trainer/rank_main.h"
#include "trainer/torch/loader_sweep.h"

int main(int argc, char** argv) {
  dsdiag::cli::TorchPart part;
  part.run_rank = dsdiag::trainer::RunRank;
  part.loader_sweep = dsdiag::trainer::RunLoaderSweep;
  dsdiag::cli::SetLinkedTorchPart(std::move(part));
  return dsdiag::cli::RunCli(argc, argv);
}
