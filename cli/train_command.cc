// `dsdiag train`: picks the role (launcher or rank), resolves the run directory and hands
// over to the launcher or to the trainer. The launcher path is torch-free; a rank runs in
// dsdiag-torch (cli/torch_part.h), which only a build with LibTorch has.
#include "cli/train_command.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "cli/commands.h"
#include "cli/launch_run_dir.h"
#include "cli/torch_part.h"
#include "cli/train_options.h"
#include "launch/dist_env.h"
#include "launch/launcher.h"
#include "trace/run_files.h"
#include "trace/signal_name.h"

namespace dsdiag::cli {
namespace {

namespace fs = std::filesystem;

// A rank started by `dsdiag train --nproc` must not launch ranks of its own.
bool InsideLaunchedRank() {
  return std::getenv("DSDIAG_RUN_ID") != nullptr && std::getenv("RANK") != nullptr;
}

int LaunchRanks(TrainArgs& parsed, const std::string& rank_executable) {
  trainer::TrainConfig& config = parsed.config;
  if (!parsed.out_given) config.out = FreshRunDir();
  if (const int removed = RemoveEarlierTraces(config.out); removed > 0) {
    std::cerr << "dsdiag train: removed " << removed << " trace file" << (removed == 1 ? "" : "s")
              << " of an earlier run from " << config.out << "\n";
  }

  launch::LaunchSpec spec;
  spec.executable = rank_executable;
  spec.args = {"train"};
  spec.args.insert(spec.args.end(), parsed.rank_args.begin(), parsed.rank_args.end());
  spec.args.insert(spec.args.end(), {"--out", config.out});
  spec.nproc = config.nproc;
  spec.run_dir = config.out;
  spec.log = &std::cerr;

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

  for (const std::string& line : report.FailureLines())
    std::cerr << "dsdiag train: " << line << "\n";
  std::string outcome = "finished cleanly";
  if (report.launcher_signal != 0) {
    outcome = "stopped by " + trace::SignalName(report.launcher_signal);
  } else if (report.first_failure) {
    outcome = "FAILED (rank " + std::to_string(*report.first_failure) + " first)";
  } else if (status != 0) {
    outcome = "FAILED";
  }
  std::printf("dsdiag train: %s: %d rank%s, %s, exit %d (%.1f s)\n", config.out.c_str(),
              config.nproc, config.nproc == 1 ? "" : "s", outcome.c_str(), status, seconds);
  std::printf("  next: dsdiag compare %s\n", config.out.c_str());
  std::fflush(stdout);
  return status;
}

int RunOneRank(TrainArgs& parsed, const launch::DistEnv& env, const TorchPart& torch) {
  trainer::TrainConfig& config = parsed.config;
  if (!parsed.out_given) config.out = SharedRunDir(env, std::time(nullptr));
  std::error_code ec;
  fs::create_directories(config.out, ec);
  if (ec) throw InputError("cannot create run directory " + config.out + ": " + ec.message());
  return torch.run_rank(config, env);
}

}  // namespace

std::string_view TrainCommand::description() const {
  return "run the instrumented reference trainer (--nproc N: N local ranks)";
}

std::string TrainCommand::Usage() const { return TrainUsage(); }

int TrainCommand::Run(const std::vector<std::string>& args) {
  std::optional<launch::DistEnv> env;
  std::string env_error;
  try {
    env = launch::ReadDistEnv();
  } catch (const std::invalid_argument& e) {
    env_error = e.what();
  }
  const int env_world_size = !env_error.empty() ? -1 : env ? env->world_size : 0;
  TrainArgs parsed = ParseTrainArgs(args, env_world_size);
  if (parsed.help) {
    std::cout << Help();
    return 0;
  }
  if (parsed.config.nproc > 0 && InsideLaunchedRank()) {
    throw UsageError(
        "--nproc inside a rank that `dsdiag train --nproc` started "
        "(RANK and DSDIAG_RUN_ID are set); ranks do not launch ranks");
  }
  if (parsed.config.nproc == 0 && !env_error.empty()) {
    throw InputError("cannot tell which rank this is: " + env_error);
  }
  // The launcher is torch-free; its ranks run the executable with the trainer.
  const std::string rank_executable = TorchExecutable();
  if (parsed.config.nproc > 0 && !rank_executable.empty())
    return LaunchRanks(parsed, rank_executable);
  if (const TorchPart* torch = LinkedTorchPart()) return RunOneRank(parsed, *env, *torch);
  // In dsdiag, which does not link LibTorch: this rank becomes dsdiag-torch (or says why not).
  return ExecTorchPart("train", args);
}

std::unique_ptr<Subcommand> CreateTrainCommand() { return std::make_unique<TrainCommand>(); }

}  // namespace dsdiag::cli
