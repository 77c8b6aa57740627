// Fuzzes the torch-free command lines: the option parsing of train, compare, timeline,
// report, synth and loader-sweep (each command's Parse*Args, which checks everything without
// reading, writing or launching), and the launcher environment of `train` (ReadDistEnv,
// SharedRunDir).
//
// Input: one selector byte, then the words, one per line. The selector's low 3 bits pick the
// surface; for train its high bits give the launcher's world size (-1: unreadable, 0: none).
// For the environment, each word is NAME=VALUE for one of the launcher variables.
//
// Every rejection must be a UsageError (or, for the environment, std::invalid_argument) with
// a message; any other exception, exit() or usage printed is a bug. What is accepted must
// honour the documented ranges, and a `train` command line accepted by the launcher must be
// accepted by the ranks it would start.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cli/compare_command.h"
#include "cli/loader_sweep_command.h"
#include "cli/report_command.h"
#include "cli/subcommand.h"
#include "cli/synth_command.h"
#include "cli/timeline_command.h"
#include "cli/train_options.h"
#include "fuzz/fuzz_check.h"
#include "inject/inject_spec.h"
#include "launch/dist_env.h"
#include "synth/faults.h"

namespace {

using dsdiag::cli::UsageError;
using Words = std::vector<std::string>;

// Words come from argv (or the environment), which cannot hold a NUL: a NUL ends a word
// like a newline does.
Words SplitLines(std::string_view text) {
  Words words;
  if (text.empty()) return words;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t nl = std::min(text.find_first_of(std::string_view("\n\0", 2), begin), text.size());
    words.emplace_back(text.substr(begin, nl - begin));
    begin = nl + 1;
  }
  return words;
}

void CheckUsageError(const UsageError& e) {
  FUZZ_CHECK(e.what()[0] != '\0', "UsageError without a message");
}

void FuzzTrain(const Words& args, int env_world_size) {
  dsdiag::cli::TrainArgs parsed;
  try {
    parsed = dsdiag::cli::ParseTrainArgs(args, env_world_size);
  } catch (const UsageError& e) {
    return CheckUsageError(e);
  }
  if (parsed.help) return;
  const dsdiag::trainer::TrainConfig& c = parsed.config;
  FUZZ_CHECK(c.nproc >= 0 && c.nproc <= 1024, "nproc %d", c.nproc);
  FUZZ_CHECK(env_world_size != 0 || c.nproc >= 1, "no launcher and no --nproc: nproc %d", c.nproc);
  FUZZ_CHECK(c.steps >= 1 || c.epochs >= 1, "neither steps nor epochs bound the run");
  if (c.nproc == 0) return;
  // What `train --nproc N` hands each rank (launched with WORLD_SIZE=N) must parse there.
  Words rank_args = parsed.rank_args;
  rank_args.insert(rank_args.end(), {"--out", "runs/fuzz"});
  dsdiag::cli::TrainArgs rank;
  try {
    rank = dsdiag::cli::ParseTrainArgs(rank_args, c.nproc);
  } catch (const UsageError& e) {
    FUZZ_CHECK(false, "a rank rejects what its launcher accepted: %s", e.what());
  }
  FUZZ_CHECK(!rank.help && rank.config.nproc == 0, "a rank would launch ranks");
  FUZZ_CHECK(rank.config.steps == c.steps && rank.config.epochs == c.epochs &&
                 rank.config.seed == c.seed && rank.config.inject.texts() == c.inject.texts() &&
                 rank.config.batch_size == c.batch_size,
             "a rank's config differs from its launcher's");
}

void FuzzCompare(const Words& args) {
  dsdiag::cli::CompareArgs parsed;
  try {
    if (!dsdiag::cli::ParseCompareArgs(args, &parsed)) return;
  } catch (const UsageError& e) {
    return CheckUsageError(e);
  }
}

void FuzzTimeline(const Words& args) {
  dsdiag::cli::TimelineArgs parsed;
  try {
    if (!dsdiag::cli::ParseTimelineArgs(args, &parsed)) return;
  } catch (const UsageError& e) {
    return CheckUsageError(e);
  }
  FUZZ_CHECK(!parsed.output.empty(), "empty -o accepted");
  const dsdiag::timeline::StepRange& s = parsed.selection.steps;
  FUZZ_CHECK(!s.first || !s.last || *s.first <= *s.last, "backwards step range accepted");
  // The normalised rank list, as messages print it, must parse back to itself.
  const dsdiag::timeline::RankSet& ranks = parsed.selection.ranks;
  if (!ranks.all()) {
    std::string error;
    const auto again = dsdiag::timeline::RankSet::Parse(ranks.ToString(), &error);
    FUZZ_CHECK(again && again->ToString() == ranks.ToString(), "rank set %s does not round-trip",
               ranks.ToString().c_str());
  }
}

void FuzzReport(const Words& args) {
  dsdiag::cli::ReportArgs parsed;
  try {
    if (!dsdiag::cli::ParseReportArgs(args, &parsed)) return;
  } catch (const UsageError& e) {
    return CheckUsageError(e);
  }
  FUZZ_CHECK(!parsed.output.empty() && parsed.output != "-", "report -o '%s' accepted",
             parsed.output.c_str());
}

void FuzzSynth(const Words& args) {
  dsdiag::cli::SynthArgs parsed;
  try {
    if (!dsdiag::cli::ParseSynthArgs(args, &parsed)) return;
  } catch (const UsageError& e) {
    return CheckUsageError(e);
  }
  FUZZ_CHECK(!parsed.write.out_dir.empty(), "empty --out accepted");
  FUZZ_CHECK(parsed.write.threads >= 1 && parsed.write.threads <= 256, "threads %d",
             parsed.write.threads);
  // synth's own check of the --inject specs (SynthRun does it before writing anything).
  const dsdiag::synth::SynthConfig& c = parsed.config;
  if (c.ranks < 1 || c.ranks > (1 << 20) || c.steps < 1) return;
  try {
    const auto plan = dsdiag::inject::InjectPlan::Parse(c.injects, c.ranks);
    (void)dsdiag::synth::Faults::FromPlan(plan, c.ranks, c.steps);
  } catch (const dsdiag::inject::InjectSpecError& e) {
    FUZZ_CHECK(e.what()[0] != '\0', "InjectSpecError without a message");
  } catch (const dsdiag::synth::SynthSpecError& e) {
    FUZZ_CHECK(e.what()[0] != '\0', "SynthSpecError without a message");
  }
}

void FuzzLoaderSweep(const Words& args) {
  dsdiag::cli::LoaderSweepArgs parsed;
  try {
    if (!dsdiag::cli::ParseLoaderSweepArgs(args, &parsed)) return;
  } catch (const UsageError& e) {
    return CheckUsageError(e);
  }
  FUZZ_CHECK(!parsed.workers.empty() && !parsed.batch_sizes.empty(), "an empty list accepted");
  for (int w : parsed.workers) FUZZ_CHECK(w >= 0, "workers %d", w);
  for (int b : parsed.batch_sizes) FUZZ_CHECK(b >= 1, "batch size %d", b);
  FUZZ_CHECK(parsed.batches >= 1 && parsed.warmup >= 1 && parsed.repeats >= 1 &&
                 parsed.dataset_size >= 1 && parsed.seconds >= 0,
             "a count below its minimum accepted");
}

// The variables ReadDistEnv and SharedRunDir read; only these are set, so that the
// sanitizers' own settings are left alone.
constexpr const char* kLauncherVariables[] = {
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_LOCALID",
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "DSDIAG_RUN_ID",
    "TORCHELASTIC_RUN_ID",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
};

void FuzzEnvironment(const Words& assignments) {
  for (const char* name : kLauncherVariables) unsetenv(name);
  for (const std::string& a : assignments) {
    const size_t eq = a.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = a.substr(0, eq);
    for (const char* known : kLauncherVariables) {
      if (name == known) setenv(known, a.c_str() + eq + 1, 1);
    }
  }
  std::optional<dsdiag::launch::DistEnv> env;
  try {
    env = dsdiag::launch::ReadDistEnv();
  } catch (const std::invalid_argument& e) {
    FUZZ_CHECK(e.what()[0] != '\0', "invalid_argument without a message");
    return;
  }
  if (!env) return;
  FUZZ_CHECK(env->world_size >= 1 && env->rank >= 0 && env->rank < env->world_size,
             "rank %d of %d accepted", env->rank, env->world_size);
  FUZZ_CHECK(env->local_rank >= 0, "local rank %d", env->local_rank);
  FUZZ_CHECK(env->master_port >= 1 && env->master_port <= 65535, "port %d", env->master_port);
  FUZZ_CHECK(!env->source.empty() && !env->master_addr.empty(), "launcher or address missing");
  try {
    const std::string dir = dsdiag::cli::SharedRunDir(*env, 0);
    FUZZ_CHECK(dir.size() > sizeof("runs/") - 1, "run dir '%s'", dir.c_str());
  } catch (const UsageError& e) {
    CheckUsageError(e);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Words words =
      SplitLines(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  switch (data[0] & 7) {
    case 0:
      FuzzTrain(words, (data[0] >> 3) - 1);
      break;
    case 1:
      FuzzCompare(words);
      break;
    case 2:
      FuzzTimeline(words);
      break;
    case 3:
      FuzzReport(words);
      break;
    case 4:
      FuzzSynth(words);
      break;
    case 5:
      FuzzLoaderSweep(words);
      break;
    default:
      FuzzEnvironment(words);
      break;
  }
  return 0;
}
