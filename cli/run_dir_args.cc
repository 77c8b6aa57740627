#include "cli/run_dir_args.h"

#include <sys/resource.h>

#include "cli/subcommand.h"

namespace dsdiag::cli {

bool ParseRunDirArgs(const std::vector<std::string>& args, po::options_description& options,
                     const std::string& purpose, po::variables_map* vm, std::string* run_dir) {
  options.add_options()("run-dir", po::value<std::string>(), "the run directory");
  po::positional_options_description positional;
  positional.add("run-dir", 1);
  if (ParseArgs(args, options, positional, vm)) return true;
  if (!vm->count("run-dir")) throw UsageError("missing RUN_DIR, the run directory to " + purpose);
  *run_dir = (*vm)["run-dir"].as<std::string>();
  return false;
}

void RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);  // a refusal only costs the fallback
}

}  // namespace dsdiag::cli
