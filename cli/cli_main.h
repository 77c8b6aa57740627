// RunCli: one command, many subcommands (docs/contract.md). Dispatches to the subcommand and
// maps typed errors to exit statuses: 2 for bad usage or unreadable input, 3 for an
// internal error. The `main` of both dsdiag and dsdiag-torch.
#pragma once

namespace dsdiag::cli {

int RunCli(int argc, char** argv);

}  // namespace dsdiag::cli
