#include "cli/run_command.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/launch_run_dir.h"
#include "cli/options.h"
#include "cli/train_options.h"
#include "launch/launcher.h"
#include "trace/run_files.h"
#include "trace/run_id.h"
#include "trace/signal_name.h"

namespace dsdiag::cli {
namespace {

namespace fs = std::filesystem;

po::options_description VisibleOptions() {
  po::options_description options("options");
  // clang-format off
  options.add_options()
      ("nproc", po::value<int>()->value_name("N"),
       "start N copies of COMMAND on this host with torchrun's variables (RANK, WORLD_SIZE, "
       "LOCAL_RANK, MASTER_ADDR, MASTER_PORT); without it COMMAND runs once and starts its "
       "ranks itself")
      ("out", po::value<std::string>()->value_name("RUN_DIR"),
       "where every rank writes rank-<R>.jsonl (default runs/<timestamp>)")
      ("probes", po::value<std::string>()->default_value("light")->value_name("MODE"),
       "off, light or full")
      ("timeout", po::value<double>()->default_value(300)->value_name("SECONDS"),
       "the collective watchdog: a collective pending longer is a hang");
  // clang-format on
  return options;
}

// The folder `dsdiag run` puts on the job's PYTHONPATH: the one holding the start-up hook
// (sitecustomize.py) for the dsdiag package beside this executable. A build tree:
// <dir>/python (the package and the hook); an install: <dir>/../lib/dsdiag/python; a pip
// install (the wheel's layout, python/wheel_install.cmake): this executable is
// <site-packages>/dsdiag/bin/dsdiag and the folder is dsdiag/_startup alone, the package
// being importable from the job's environment already. Empty when none holds it.
std::string PythonStartupDir() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path bin = self.parent_path();
  for (const fs::path& dir : {bin / "python", bin.parent_path() / "lib/dsdiag/python"}) {
    if (fs::exists(dir / "dsdiag" / "__init__.py", ec)) return dir.string();
  }
  const fs::path startup = bin.parent_path() / "_startup";
  if (fs::exists(startup / "sitecustomize.py", ec) &&
      fs::exists(bin.parent_path() / "__init__.py", ec)) {
    return startup.string();
  }
  return "";
}

std::string FormatSeconds(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

}  // namespace

bool ParseRunArgs(const std::vector<std::string>& args, RunArgs* out) {
  // Everything after the first "--" is the job's command line, untouched.
  std::vector<std::string> own;
  size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) own.push_back(args[i]);
  if (i < args.size()) out->command.assign(args.begin() + static_cast<long>(i) + 1, args.end());
  po::options_description options = VisibleOptions();
  po::positional_options_description positional;
  positional.add("command", -1);
  options.add_options()("command", po::value<std::vector<std::string>>(), "");
  po::variables_map vm;
  if (ParseArgs(own, options, positional, &vm)) return false;
  if (vm.count("command")) {
    const auto& words = vm["command"].as<std::vector<std::string>>();
    out->command.insert(out->command.begin(), words.begin(), words.end());
  }
  if (out->command.empty()) throw UsageError("no command to run: dsdiag run [options] -- COMMAND");
  if (vm.count("nproc")) {
    out->nproc = vm["nproc"].as<int>();
    if (out->nproc < 1 || out->nproc > 4096)
      throw UsageError("--nproc must be 1..4096, got " + std::to_string(out->nproc));
  }
  if (vm.count("out")) {
    out->out = vm["out"].as<std::string>();
    out->out_given = true;
    if (out->out.empty()) throw UsageError("--out must name a directory");
  }
  out->probes = vm["probes"].as<std::string>();
  if (out->probes != "off" && out->probes != "light" && out->probes != "full")
    throw UsageError("--probes must be off, light or full, got '" + out->probes + "'");
  out->timeout_s = vm["timeout"].as<double>();
  if (!(out->timeout_s > 0)) throw UsageError("--timeout must be a positive number of seconds");
  return true;
}

std::string_view RunCommand::description() const {
  return "run your own PyTorch job with every rank instrumented (--nproc N: N local ranks)";
}

std::string RunCommand::Usage() const {
  std::ostringstream out;
  out << "usage: dsdiag run [--nproc N] [--out RUN_DIR] [--probes off|light|full] "
         "[--timeout SECONDS] -- COMMAND [ARGS...]\n\n"
         "Runs COMMAND (e.g. python3 train.py) with dsdiag's probes in every Python process\n"
         "that imports torch and creates a default process group; then `dsdiag compare\n"
         "RUN_DIR` names what went wrong. The job's exit status is dsdiag run's.\n\n"
      << VisibleOptions();
  return out.str();
}

int RunCommand::Run(const std::vector<std::string>& args) {
  RunArgs parsed;
  if (!ParseRunArgs(args, &parsed)) {
    std::cout << Help();
    return 0;
  }
  if (!parsed.out_given) parsed.out = FreshRunDir();
  RemoveEarlierTraces(parsed.out);

  launch::LaunchSpec spec;
  spec.executable = parsed.command.front();
  spec.args.assign(parsed.command.begin() + 1, parsed.command.end());
  spec.assign_ranks = parsed.nproc > 0;
  spec.nproc = parsed.nproc > 0 ? parsed.nproc : 1;
  spec.run_dir = parsed.out;
  spec.run_id = trace::MakeRunId();
  spec.log = &std::cerr;
  spec.log_prefix = "dsdiag run";
  spec.env = {{"DSDIAG_OUT", fs::absolute(parsed.out).string()},
              {"DSDIAG_PROBES", parsed.probes},
              {"DSDIAG_TIMEOUT", FormatSeconds(parsed.timeout_s)},
              {"DSDIAG_RUN_ID", spec.run_id}};
  const std::string python = PythonStartupDir();
  if (python.empty()) {
    std::cerr << "dsdiag run: this dsdiag was built without its Python package (pybind11 and "
                 "python3-torch were not found): the job runs uninstrumented\n";
  } else {
    const char* path = std::getenv("PYTHONPATH");
    spec.env.push_back({"PYTHONPATH", python + (path && *path ? ":" + std::string(path) : "")});
  }

  const auto start = std::chrono::steady_clock::now();
  launch::LaunchReport report;
  int status = 0;
  try {
    status = launch::Launch(spec, &report);
  } catch (const launch::LaunchError& e) {
    throw InputError(e.what());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const std::string& line : report.FailureLines()) std::cerr << "dsdiag run: " << line << "\n";
  std::string outcome = "finished cleanly";
  if (report.launcher_signal != 0) {
    outcome = "stopped by " + trace::SignalName(report.launcher_signal);
  } else if (report.first_failure) {
    outcome = "FAILED (rank " + std::to_string(*report.first_failure) + " first)";
  } else if (status != 0) {
    outcome = "FAILED";
  }
  const int shown = parsed.nproc > 0 ? parsed.nproc : 1;
  std::fprintf(stderr, "dsdiag run: %s: %d process%s, %s, exit %d (%.1f s)\n", parsed.out.c_str(),
               shown, shown == 1 ? "" : "es", outcome.c_str(), status, seconds);
  std::fprintf(stderr, "  next: dsdiag compare %s\n", parsed.out.c_str());
  return status;
}

std::unique_ptr<Subcommand> CreateRunCommand() { return std::make_unique<RunCommand>(); }

}  // namespace dsdiag::cli
