// dsdiag: the torch-free command line (cli/cli_main.h). Commands that need LibTorch hand
// over to dsdiag-torch (cli/torch_part.h).
#include "cli/cli_main.h"

int main(int argc, char** argv) { return dsdiag::cli::RunCli(argc, argv); }
