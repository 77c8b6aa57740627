// `dsdiag train` flags → TrainConfig. The flags write straight into a TrainConfig, so the
// defaults shown by --help are the struct's own; everything boost cannot check (ranges,
// enums, flags that only make sense together, --inject specs) is checked after parsing,
// each with a UsageError that names the flag and the accepted values.
#include "cli/train_options.h"

#include <boost/program_options.hpp>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <sstream>

#include "cli/options.h"
#include "cli/subcommand.h"
#include "inject/inject_spec.h"
#include "trace/compression.h"

namespace dsdiag::cli {
namespace {

namespace po = boost::program_options;

constexpr int64_t kDefaultSteps = 50;
constexpr int kMaxLocalRanks = 1024;  // a typo guard: --nproc 40000 would fork-bomb the host

// One option per paragraph: the formatter's call chains would hide which help goes with
// which flag.
// clang-format off
po::options_description RunOptions(trainer::TrainConfig* c, std::vector<std::string>* injects) {
  po::options_description o("run");
  o.add_options()
      ("nproc", po::value<int>()->value_name("N"),
       "launch N local ranks, like torchrun --standalone --nproc-per-node N")
      ("steps", po::value<int64_t>(&c->steps)->value_name("N"),
       "stop after N optimizer steps (default 50 when --epochs is not given either)")
      ("epochs", po::value<int64_t>(&c->epochs)->value_name("N"),
       "stop after N epochs; with --steps too, whichever comes first")
      ("batch-size", po::value<int>(&c->batch_size)->default_value(c->batch_size)
                         ->value_name("N"),
       "samples per rank per step")
      ("workers", po::value<int>(&c->workers)->default_value(c->workers)->value_name("N"),
       "data-loader worker threads per rank (0: load on the training thread)")
      ("seed", po::value<int64_t>(&c->seed)->default_value(c->seed)->value_name("N"),
       "seed of the model, the data order and dropout")
      ("amp", po::value<std::string>(&c->amp)->default_value(c->amp)
                  ->value_name("off|bf16|fp16"),
       "mixed precision (fp16 adds a gradient scaler)")
      ("clip-norm", po::value<double>(&c->clip_norm)->default_value(c->clip_norm, "0")
                        ->value_name("X"),
       "clip the global gradient norm to X (0: no clipping)")
      ("ckpt-every", po::value<int64_t>(&c->ckpt_every)->default_value(c->ckpt_every)
                         ->value_name("N"),
       "write a checkpoint every N steps (0: never)")
      ("resume", po::value<std::string>(&c->resume)->value_name("PATH"),
       "resume from this checkpoint")
      ("out", po::value<std::string>(&c->out)->value_name("RUN_DIR"),
       "run directory for the traces (default runs/<YYYYmmdd-HHMMSS>); with --nproc, "
       "rank traces and flight dumps an earlier run left there are removed first")
      ("timeout", po::value<double>(&c->timeout_s)->default_value(c->timeout_s, "60")
                      ->value_name("SECONDS"),
       "collective watchdog: a collective slower than this dumps the flight recorder")
      ("device", po::value<std::string>(&c->device)->default_value(c->device)
                     ->value_name("cpu|cuda"),
       "where each rank trains (cuda: GPU LOCAL_RANK)")
      ("backend", po::value<std::string>(&c->backend)->value_name("gloo|nccl"),
       "process-group backend (default gloo on cpu, nccl on cuda)")
      ("probes", po::value<std::string>(&c->probes)->default_value(c->probes)
                     ->value_name("off|light|full"),
       "how much the probes record")
      ("trace-compress", po::value<std::string>(&c->trace_compress)
                             ->default_value(c->trace_compress)->value_name("none|zstd"),
       "zstd: write rank-<R>.jsonl.zst, 3-5x smaller; every dsdiag reader decodes it")
      ("inject", po::value<std::vector<std::string>>(injects)->composing()
                     ->value_name("SPEC"),
       "inject a fault, KIND[:key=value,...] (repeatable; kinds below)")
      ("dataset-size", po::value<int64_t>(&c->dataset_size)->default_value(c->dataset_size)
                           ->value_name("N"),
       "samples in the synthetic corpus (one epoch = N / (ranks x batch-size) steps)");
  return o;
}

po::options_description ModelOptions(trainer::TrainConfig* c) {
  po::options_description o("model (a DeepSeek-style MoE decoder)");
  o.add_options()
      ("layers", po::value<int>(&c->n_layers)->default_value(c->n_layers)->value_name("N"),
       "decoder blocks")
      ("d-model", po::value<int>(&c->d_model)->default_value(c->d_model)->value_name("N"),
       "hidden size (a multiple of --heads)")
      ("heads", po::value<int>(&c->n_heads)->default_value(c->n_heads)->value_name("N"),
       "attention heads")
      ("experts", po::value<int>(&c->n_experts)->default_value(c->n_experts)->value_name("N"),
       "routed experts per MoE layer")
      ("top-k", po::value<int>(&c->top_k)->default_value(c->top_k)->value_name("K"),
       "experts each token is routed to (1..--experts)")
      ("d-ff", po::value<int>(&c->d_ff)->default_value(c->d_ff)->value_name("N"),
       "hidden size of each expert")
      ("seq-len", po::value<int>(&c->seq_len)->default_value(c->seq_len)->value_name("N"),
       "tokens per sample")
      ("vocab", po::value<int>(&c->vocab)->default_value(c->vocab)->value_name("N"),
       "vocabulary size")
      ("lr", po::value<double>(&c->lr)->default_value(c->lr, "0.003")->value_name("X"),
       "learning rate")
      ("dropout", po::value<double>(&c->dropout)->default_value(c->dropout, "0.1")
                      ->value_name("P"),
       "dropout probability, 0 <= P < 1")
      ("health-every", po::value<int64_t>(&c->health_every)->default_value(c->health_every)
                           ->value_name("N"),
       "steps between cross-rank health checks")
      ("log-every", po::value<int64_t>(&c->log_every)->default_value(c->log_every)
                        ->value_name("N"),
       "steps between progress lines");
  return o;
}
// clang-format on

po::options_description AllOptions(trainer::TrainConfig* c, std::vector<std::string>* injects) {
  po::options_description all;
  all.add(RunOptions(c, injects)).add(ModelOptions(c));
  all.add_options()("help,h", "show this help");
  return all;
}

// ---- checks ----

template <typename T>
void AtLeast(const char* flag, T value, T min) {
  if (value < min) {
    std::ostringstream os;
    os << "--" << flag << " must be >= " << min << ", got " << value;
    throw UsageError(os.str());
  }
}

void InRange(const char* flag, int64_t value, int64_t min, int64_t max) {
  if (value < min || value > max) {
    throw UsageError("--" + std::string(flag) + " must be " + std::to_string(min) + ".." +
                     std::to_string(max) + ", got " + std::to_string(value));
  }
}

void OneOf(const char* flag, const std::string& value, std::initializer_list<const char*> ok) {
  std::string list;
  for (const char* v : ok) {
    if (value == v) return;
    list += list.empty() ? v : std::string(", ") + v;
  }
  throw UsageError("--" + std::string(flag) + " must be one of " + list + ", got '" + value + "'");
}

void Finite(const char* flag, double value) {
  if (!std::isfinite(value)) {
    throw UsageError("--" + std::string(flag) + " must be a finite number");
  }
}

void CheckRun(const trainer::TrainConfig& c, int world_size) {
  AtLeast("batch-size", c.batch_size, 1);
  InRange("workers", c.workers, 0, 256);
  AtLeast<int64_t>("seed", c.seed, 0);
  OneOf("amp", c.amp, {"off", "bf16", "fp16"});
  Finite("clip-norm", c.clip_norm);
  AtLeast("clip-norm", c.clip_norm, 0.0);
  AtLeast<int64_t>("ckpt-every", c.ckpt_every, 0);
  Finite("timeout", c.timeout_s);
  if (c.timeout_s <= 0) throw UsageError("--timeout must be > 0 seconds");
  OneOf("device", c.device, {"cpu", "cuda"});
  if (!c.backend.empty()) OneOf("backend", c.backend, {"gloo", "nccl"});
  if (c.backend == "nccl" && c.device != "cuda") {
    throw UsageError("--backend nccl needs --device cuda (NCCL only moves GPU tensors)");
  }
  OneOf("probes", c.probes, {"off", "light", "full"});
  OneOf("trace-compress", c.trace_compress, {"none", "zstd"});
  if (c.trace_compress == "zstd" && !trace::ZstdAvailable())
    throw UsageError("--trace-compress zstd: this dsdiag was built without libzstd");
  AtLeast<int64_t>("dataset-size", c.dataset_size, 1);
  const int64_t one_batch_each = int64_t{world_size} * c.batch_size;
  if (c.dataset_size < one_batch_each) {
    throw UsageError("--dataset-size " + std::to_string(c.dataset_size) +
                     " is too small: " + std::to_string(world_size) + " ranks x --batch-size " +
                     std::to_string(c.batch_size) + " need at least " +
                     std::to_string(one_batch_each) + " samples for one step");
  }
}

void CheckModel(const trainer::TrainConfig& c) {
  AtLeast("layers", c.n_layers, 1);
  AtLeast("d-model", c.d_model, 1);
  AtLeast("heads", c.n_heads, 1);
  if (c.d_model % c.n_heads != 0) {
    throw UsageError("--d-model " + std::to_string(c.d_model) + " is not a multiple of --heads " +
                     std::to_string(c.n_heads));
  }
  AtLeast("experts", c.n_experts, 1);
  InRange("top-k", c.top_k, 1, c.n_experts);
  AtLeast("d-ff", c.d_ff, 1);
  AtLeast("seq-len", c.seq_len, 1);
  AtLeast("vocab", c.vocab, 2);
  Finite("lr", c.lr);
  if (c.lr <= 0) throw UsageError("--lr must be > 0");
  Finite("dropout", c.dropout);
  if (c.dropout < 0 || c.dropout >= 1) throw UsageError("--dropout must be in [0, 1)");
  AtLeast<int64_t>("health-every", c.health_every, 1);
  AtLeast<int64_t>("log-every", c.log_every, 1);
}

// Parses every spec against the run's world size into c->inject, the plan the rank runs
// with (nothing parses the specs again); a step the run never reaches is an error too, since
// the fault would silently not happen, and so is a kind only synth imitates.
void ParseInjects(const std::vector<std::string>& texts, int world_size, trainer::TrainConfig* c) {
  try {
    c->inject = inject::InjectPlan::Parse(texts, world_size);
    for (const inject::InjectSpec& spec : c->inject.specs()) {
      if (inject::SynthOnly(spec.kind)) {
        throw UsageError("--inject " + spec.text +
                         ": the trainer cannot inject this, only synth imitates it (use dsdiag "
                         "synth --inject " +
                         spec.text + ")");
      }
      if (spec.step && c->steps > 0 && *spec.step >= c->steps) {
        throw UsageError("--inject " + spec.text + ": step " + std::to_string(*spec.step) +
                         " is never reached: the run stops after --steps " +
                         std::to_string(c->steps) + " (steps 0.." + std::to_string(c->steps - 1) +
                         ")");
      }
    }
  } catch (const inject::InjectSpecError& e) {
    throw UsageError(e.what());
  }
}

// The original tokens of every option but --nproc and --out. Taken from boost's parse (not
// by matching strings) so that abbreviations like --npr 4 are dropped too: a rank that saw
// --nproc would launch ranks of its own.
std::vector<std::string> RankArgs(const po::parsed_options& parsed) {
  std::vector<std::string> out;
  for (const po::option& o : parsed.options) {
    if (o.string_key == "nproc" || o.string_key == "out") continue;
    out.insert(out.end(), o.original_tokens.begin(), o.original_tokens.end());
  }
  return out;
}

// Boost keeps a word that is no option (and every word after "--") as a nameless option,
// which store() skips: `train --nproc 2 junk` used to run, ignoring "junk", and the ranks,
// handed the words without the "--", then failed on them (found by fuzz/options_fuzzer).
void RejectPositionals(const po::parsed_options& parsed) {
  for (const po::option& o : parsed.options) {
    if (!o.string_key.empty()) continue;
    const std::string word = o.original_tokens.empty() ? "" : o.original_tokens.front();
    throw UsageError("unexpected argument '" + word + "': dsdiag train takes options only");
  }
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

}  // namespace

TrainArgs ParseTrainArgs(const std::vector<std::string>& args, int env_world_size) {
  TrainArgs result;
  trainer::TrainConfig& c = result.config;
  std::vector<std::string> injects;
  po::options_description options = AllOptions(&c, &injects);
  po::variables_map vm;
  try {
    const po::parsed_options parsed = po::command_line_parser(args).options(options).run();
    po::store(parsed, vm);
    if (vm.count("help")) {
      result.help = true;
      return result;
    }
    RejectPositionals(parsed);
    po::notify(vm);
    result.rank_args = RankArgs(parsed);
  } catch (po::error& e) {
    throw UsageError(ParseErrorMessage(e));
  }

  if (vm.count("nproc")) {
    c.nproc = vm["nproc"].as<int>();
    InRange("nproc", c.nproc, 1, kMaxLocalRanks);
  } else if (env_world_size == 0) {
    c.nproc = 1;  // no launcher around us: be our own, with one rank
  }
  const int world_size = c.nproc > 0 ? c.nproc : env_world_size;

  if (vm.count("steps")) AtLeast<int64_t>("steps", c.steps, 1);
  if (vm.count("epochs")) AtLeast<int64_t>("epochs", c.epochs, 1);
  if (!vm.count("steps") && !vm.count("epochs")) c.steps = kDefaultSteps;
  result.out_given = vm.count("out") > 0;
  if (result.out_given && c.out.empty()) throw UsageError("--out must name a directory");

  CheckRun(c, world_size);
  CheckModel(c);
  ParseInjects(injects, world_size, &c);
  return result;
}

std::string TrainUsage() {
  trainer::TrainConfig defaults;
  std::ostringstream os;
  os << "usage: dsdiag train [options]\n"
        "\n"
        "Trains the instrumented reference model (a small DeepSeek-style MoE decoder on a\n"
        "synthetic corpus) with DistributedDataParallel and writes one trace per rank,\n"
        "RUN_DIR/rank-<R>.jsonl, for `dsdiag compare RUN_DIR`.\n"
        "\n"
        "Who runs:\n"
        "  --nproc N         launches N local ranks and supervises them; when one fails,\n"
        "                    the others get SIGTERM, then SIGKILL 5 s later\n"
        "  under a launcher  RANK/WORLD_SIZE (torchrun), SLURM_PROCID/SLURM_NTASKS (srun) or\n"
        "                    OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE (mpirun) set: runs as\n"
        "                    that one rank and joins MASTER_ADDR:MASTER_PORT (give every\n"
        "                    rank the same --out)\n"
        "  neither           as --nproc 1\n"
        "\n"
     << AllOptions(&defaults, nullptr)
     << "\n"
        "Fault injection, --inject KIND[:key=value,...]: each reproduces a real failure;\n"
        "rank R is 0..ranks-1, step S is 0-based, MS in milliseconds.\n"
     << inject::DescribeKinds()
     << "\n"
        "Exit status: 0 when every rank finished cleanly; with --nproc, the failing rank's\n"
        "status (128+N when it died of signal N) or 128+N when this launcher got signal N;\n"
        "2 for bad usage.\n"
        "\n"
        "Example:\n"
        "  dsdiag train --nproc 4 --steps 50 --inject straggler:rank=2,ms=40 --out runs/demo\n"
        "  dsdiag compare runs/demo\n";
  return os.str();
}

std::string TimestampRunDir(std::time_t now) {
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  return std::string("runs/") + stamp;
}

std::string SharedRunDir(const launch::DistEnv& env, std::time_t now) {
  if (!env.run_id.empty()) return "runs/" + env.run_id;
  const std::string elastic = Env("TORCHELASTIC_RUN_ID");
  if (!elastic.empty() && elastic != "none") return "runs/" + elastic;
  const std::string job = Env("SLURM_JOB_ID");
  if (!job.empty()) {
    const std::string step = Env("SLURM_STEP_ID");
    return "runs/slurm-" + job + (step.empty() ? "" : "." + step);
  }
  if (env.world_size == 1) return TimestampRunDir(now);
  throw UsageError("running as rank " + std::to_string(env.rank) + " of " +
                   std::to_string(env.world_size) + " under " + env.source +
                   ", the ranks cannot agree on a default run directory: pass the same "
                   "--out RUN_DIR to every rank (or export DSDIAG_RUN_ID)");
}

}  // namespace dsdiag::cli
