#include "cli/options.h"

#include <unistd.h>

#include "cli/subcommand.h"

namespace dsdiag::cli {

bool ParseArgs(const std::vector<std::string>& args, po::options_description& options,
               const po::positional_options_description& positional, po::variables_map* vm) {
  options.add_options()("help,h", "show this help");
  try {
    po::store(po::command_line_parser(args).options(options).positional(positional).run(), *vm);
    if (vm->count("help")) return true;
    po::notify(*vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return false;
}

bool StdoutIsTerminal() { return isatty(STDOUT_FILENO) == 1; }
bool StderrIsTerminal() { return isatty(STDERR_FILENO) == 1; }

}  // namespace dsdiag::cli
