#include "cli/synth_command.h"

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/options.h"
#include "synth/synth_run.h"
#include "synth/torch_fr_dumps.h"

namespace dsdiag::cli {
namespace {

po::options_description VisibleOptions() {
  po::options_description options("options");
  // One option per line reads better than the formatter's chain.
  // clang-format off
  options.add_options()
      ("ranks", po::value<int>()->required()->value_name("R"), "number of ranks (world size)")
      ("steps", po::value<int64_t>()->required()->value_name("S"), "optimizer steps per rank")
      ("out", po::value<std::string>()->required()->value_name("RUN_DIR"),
       "directory to write rank-<R>.jsonl files into (created; must be empty)")
      ("inject", po::value<std::vector<std::string>>()->composing()->value_name("SPEC"),
       "imitate a fault (repeatable); kinds below")
      ("seed", po::value<int64_t>()->default_value(1234)->value_name("N"),
       "the same seed gives the same bytes")
      ("force", po::bool_switch(), "write into a non-empty RUN_DIR, replacing its rank traces")
      ("threads", po::value<int>()->default_value(2)->value_name("N"),
       "worker threads (the output does not depend on it)")
      ("torch-fr", po::bool_switch(),
       "write PyTorch Flight Recorder dumps (nccl_trace_rank_<R>, torch 2.13's pickle) "
       "instead of the rank traces: the same job run without dsdiag")
      ("fr-entries", po::value<int>()->default_value(synth::kDefaultFrEntries)->value_name("N"),
       "with --torch-fr: each rank's last N collectives (TORCH_FR_BUFFER_SIZE)");
  // clang-format on
  return options;
}

}  // namespace

bool ParseSynthArgs(const std::vector<std::string>& args, SynthArgs* out) {
  po::options_description options = VisibleOptions();
  po::variables_map vm;
  if (ParseArgs(args, options, po::positional_options_description(), &vm)) return false;
  out->config.ranks = vm["ranks"].as<int>();
  out->config.steps = vm["steps"].as<int64_t>();
  const int64_t seed = vm["seed"].as<int64_t>();
  if (seed < 0)
    throw UsageError("--seed must be a non-negative integer, got " + std::to_string(seed));
  out->config.seed = static_cast<uint64_t>(seed);
  if (vm.count("inject")) out->config.injects = vm["inject"].as<std::vector<std::string>>();
  out->write.out_dir = vm["out"].as<std::string>();
  if (out->write.out_dir.empty()) throw UsageError("--out must name a directory");
  out->write.force = vm["force"].as<bool>();
  out->write.threads = vm["threads"].as<int>();
  out->torch_fr = vm["torch-fr"].as<bool>();
  out->fr_entries = vm["fr-entries"].as<int>();
  if (!out->torch_fr && !vm["fr-entries"].defaulted())
    throw UsageError("--fr-entries needs --torch-fr");
  if (out->fr_entries < 1) {
    throw UsageError("--fr-entries must be at least 1, got " + std::to_string(out->fr_entries));
  }
  if (out->write.threads < 1 || out->write.threads > 256) {
    throw UsageError("--threads must be 1..256, got " + std::to_string(out->write.threads));
  }
  return true;
}

namespace {

// "\rsynth: 512/1024 ranks" on a terminal, redrawn at each whole percent.
std::function<void(int, int)> TerminalProgress() {
  if (!StderrIsTerminal()) return nullptr;
  return [last = -1](int done, int total) mutable {
    const int percent = static_cast<int>(int64_t{done} * 100 / total);
    if (percent == last) return;
    last = percent;
    std::fprintf(stderr, "\rsynth: %d/%d ranks (%d%%)", done, total, percent);
    if (done == total) std::fputc('\n', stderr);
    std::fflush(stderr);
  };
}

}  // namespace

std::string_view SynthCommand::description() const {
  return "write synthetic traces at any scale (tests, benchmarks)";
}

std::string SynthCommand::Usage() const {
  std::ostringstream os;
  os << "usage: dsdiag synth --ranks R --steps S --out RUN_DIR [--inject SPEC]... [--seed N]\n"
        "                    [--torch-fr [--fr-entries N]]\n"
        "\n"
        "Writes one schema-valid trace per rank (rank-<R>.jsonl), shaped like the reference\n"
        "trainer's: header, params, then per step its phases, one allreduce per gradient\n"
        "bucket, the gradient and parameter fingerprints and the step summary. No LibTorch\n"
        "needed; the same arguments give the same bytes.\n"
        "\n"
        "With --torch-fr it writes instead one PyTorch Flight Recorder dump per rank\n"
        "(nccl_trace_rank_<R>, torch 2.13's pickle, format \"2.10\"): the last --fr-entries\n"
        "allreduces of each rank, as a job run without dsdiag but with TORCH_FR_BUFFER_SIZE\n"
        "set would leave them. A hang leaves the others' last allreduce started or scheduled\n"
        "and the hung rank's dump shorter; a crashed rank leaves no dump; a\n"
        "collective-mismatch halves that rank's allreduce size.\n\n"
     << VisibleOptions()
     << "  -h [ --help ]                         show this help\n"
        "\n"
        "faults synth imitates (--inject):\n"
        "  straggler:rank=R,ms=MS   that rank's backward takes MS longer; the others wait\n"
        "  clock-skew:rank=R,ms=MS  that rank's wall clock runs MS ahead (and its measured\n"
        "                           offset says so)\n"
        "  unused-param:rank=R      blocks.1.moe.experts.2.* get no gradient on that rank\n"
        "  grad-desync:rank=R,step=S  that rank's gradient hash differs after step S's\n"
        "                           sync, and its parameter hashes from then on\n"
        "  no-broadcast             every rank but 0 starts with its own parameter hashes\n"
        "  config-mismatch:rank=R   that rank was launched with other settings: its header\n"
        "                           says batch_size doubled, OMP_NUM_THREADS 4 and an extra\n"
        "                           NCCL_DEBUG INFO (synth only)\n"
        "  crash:rank=R,step=S      that rank dies in step S; the others fail in the\n"
        "                           pending allreduce (end reason peer-failure)\n"
        "  hang:rank=R,step=S       that rank stops in step S; the others time out in the\n"
        "                           pending allreduce and dump their flight recorders\n"
        "Other kinds need real tensor values and RNG state: use 'dsdiag train --inject'.\n"
        "\nexit status: 0 written; 2 bad usage or an output directory that cannot be written\n";
  return os.str();
}

int SynthCommand::Run(const std::vector<std::string>& args) {
  SynthArgs parsed;
  if (!ParseSynthArgs(args, &parsed)) {
    std::cout << Help();
    return 0;
  }
  try {
    parsed.write.progress = TerminalProgress();
    if (parsed.torch_fr) {
      const synth::TorchFrDumps dumps(parsed.config, parsed.fr_entries);
      const synth::WriteResult result = synth::WriteTorchFrDumps(dumps, parsed.write);
      std::printf(
          "synth: wrote %d Flight Recorder dumps (%.1f MB, last %d collectives each) for %d "
          "ranks x %lld steps to %s\n",
          result.files, static_cast<double>(result.bytes) / 1e6, parsed.fr_entries, dumps.ranks(),
          static_cast<long long>(parsed.config.steps), parsed.write.out_dir.c_str());
      return 0;
    }
    const synth::SynthRun run(parsed.config);
    const synth::WriteResult result = synth::WriteRun(run, parsed.write);
    std::printf("synth: wrote %d files (%.1f MB) for %d ranks x %lld steps to %s (run %s)\n",
                result.files, static_cast<double>(result.bytes) / 1e6, run.ranks(),
                static_cast<long long>(parsed.config.steps), parsed.write.out_dir.c_str(),
                run.run_id().c_str());
    return 0;
  } catch (const synth::SynthSpecError& e) {
    throw UsageError(e.what());
  } catch (const synth::SynthIoError& e) {
    throw InputError(e.what());
  }
}

std::unique_ptr<Subcommand> CreateSynthCommand() { return std::make_unique<SynthCommand>(); }

}  // namespace dsdiag::cli
