// `dsdiag train` option parsing: every flag lands in its TrainConfig field, every bad value
// is a UsageError naming the flag, and launched ranks get the arguments minus --nproc/--out.
#include "cli/train_options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cli/compare_command.h"
#include "cli/subcommand.h"
#include "trace/compression.h"

namespace dsdiag::cli {
namespace {

using Args = std::vector<std::string>;

// The UsageError message of parsing `args` ("" when it parses).
std::string ErrorOf(const Args& args, int env_world_size = 0) {
  try {
    ParseTrainArgs(args, env_world_size);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(TrainOptionsTest, DefaultsWithoutALauncher) {
  const TrainArgs a = ParseTrainArgs({}, 0);
  EXPECT_FALSE(a.help);
  EXPECT_EQ(a.config.nproc, 1);  // neither --nproc nor a launcher: one local rank
  EXPECT_EQ(a.config.steps, 50);
  EXPECT_EQ(a.config.epochs, -1);
  EXPECT_EQ(a.config.probes, "light");
  EXPECT_EQ(a.config.trace_compress, "none");
  EXPECT_EQ(a.config.amp, "off");
  EXPECT_EQ(a.config.backend, "");
  EXPECT_FALSE(a.out_given);
  EXPECT_EQ(a.config.out, "");
  EXPECT_TRUE(a.rank_args.empty());
}

TEST(TrainOptionsTest, UnderALauncherRunsAsOneRank) {
  EXPECT_EQ(ParseTrainArgs({}, 4).config.nproc, 0);
  EXPECT_EQ(ParseTrainArgs({"--nproc", "2"}, 4).config.nproc, 2);  // --nproc wins
  EXPECT_EQ(ParseTrainArgs({}, -1).config.nproc, 0);  // unreadable env: the caller reports it
}

TEST(TrainOptionsTest, EveryFlagLandsInItsField) {
  const TrainArgs a = ParseTrainArgs({"--nproc",        "4",
                                      "--steps",        "20",
                                      "--epochs",       "3",
                                      "--batch-size",   "4",
                                      "--workers",      "2",
                                      "--seed",         "7",
                                      "--amp",          "fp16",
                                      "--clip-norm",    "1.5",
                                      "--ckpt-every",   "5",
                                      "--resume",       "ck.pt",
                                      "--out",          "runs/x",
                                      "--timeout",      "12.5",
                                      "--device",       "cuda",
                                      "--backend",      "nccl",
                                      "--probes",       "full",
                                      "--inject",       "no-set-epoch",
                                      "--inject",       "straggler:rank=3,ms=9",
                                      "--dataset-size", "512",
                                      "--layers",       "3",
                                      "--d-model",      "48",
                                      "--heads",        "4",
                                      "--experts",      "8",
                                      "--top-k",        "1",
                                      "--d-ff",         "96",
                                      "--seq-len",      "12",
                                      "--vocab",        "100",
                                      "--lr",           "0.01",
                                      "--dropout",      "0",
                                      "--health-every", "4",
                                      "--log-every",    "2"},
                                     0);
  const trainer::TrainConfig& c = a.config;
  EXPECT_EQ(c.nproc, 4);
  EXPECT_EQ(c.steps, 20);
  EXPECT_EQ(c.epochs, 3);
  EXPECT_EQ(c.batch_size, 4);
  EXPECT_EQ(c.workers, 2);
  EXPECT_EQ(c.seed, 7);
  EXPECT_EQ(c.amp, "fp16");
  EXPECT_EQ(c.clip_norm, 1.5);
  EXPECT_EQ(c.ckpt_every, 5);
  EXPECT_EQ(c.resume, "ck.pt");
  EXPECT_EQ(c.out, "runs/x");
  EXPECT_TRUE(a.out_given);
  EXPECT_EQ(c.timeout_s, 12.5);
  EXPECT_EQ(c.device, "cuda");
  EXPECT_EQ(c.backend, "nccl");
  EXPECT_EQ(c.probes, "full");
  EXPECT_EQ(c.inject.texts(), (std::vector<std::string>{"no-set-epoch", "straggler:rank=3,ms=9"}));
  EXPECT_EQ(c.dataset_size, 512);
  EXPECT_EQ(c.n_layers, 3);
  EXPECT_EQ(c.d_model, 48);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_experts, 8);
  EXPECT_EQ(c.top_k, 1);
  EXPECT_EQ(c.d_ff, 96);
  EXPECT_EQ(c.seq_len, 12);
  EXPECT_EQ(c.vocab, 100);
  EXPECT_EQ(c.lr, 0.01);
  EXPECT_EQ(c.dropout, 0.0);
  EXPECT_EQ(c.health_every, 4);
  EXPECT_EQ(c.log_every, 2);
}

// zstd is optional at build time: without libzstd the flag is refused up front.
TEST(TrainOptionsTest, TraceCompressZstdWhenBuiltWithLibzstd) {
  if (trace::ZstdAvailable()) {
    EXPECT_EQ(ParseTrainArgs({"--trace-compress", "zstd"}, 0).config.trace_compress, "zstd");
  } else {
    EXPECT_THROW(ParseTrainArgs({"--trace-compress", "zstd"}, 0), UsageError);
  }
  EXPECT_EQ(ParseTrainArgs({"--trace-compress", "none"}, 0).config.trace_compress, "none");
}

TEST(TrainOptionsTest, StepsAndEpochs) {
  TrainArgs a = ParseTrainArgs({"--epochs", "2"}, 0);
  EXPECT_EQ(a.config.steps, -1);  // only --epochs: steps do not bound the run
  EXPECT_EQ(a.config.epochs, 2);
  a = ParseTrainArgs({"--steps", "7"}, 0);
  EXPECT_EQ(a.config.steps, 7);
  EXPECT_EQ(a.config.epochs, -1);
}

TEST(TrainOptionsTest, RankArgsDropNprocAndOut) {
  const TrainArgs a = ParseTrainArgs({"--steps", "5", "--nproc", "2", "--inject",
                                      "crash:rank=1,step=3", "--out=runs/y", "--amp=bf16"},
                                     0);
  EXPECT_EQ(a.rank_args, (std::vector<std::string>{"--steps", "5", "--inject",
                                                   "crash:rank=1,step=3", "--amp=bf16"}));
  // An abbreviation boost accepts must not slip through to the ranks.
  EXPECT_EQ(ParseTrainArgs({"--npr", "2", "--seed", "3"}, 0).rank_args,
            (std::vector<std::string>{"--seed", "3"}));
  EXPECT_EQ(ParseTrainArgs({"--nproc=2"}, 0).rank_args, std::vector<std::string>{});
}

TEST(TrainOptionsTest, InjectSpecsAreCheckedAgainstTheWorldSize) {
  EXPECT_EQ(ErrorOf({"--nproc", "2", "--inject", "straggler:rank=2,ms=5"}),
            "--inject straggler:rank=2,ms=5: rank 2 is out of range for 2 ranks (0..1)");
  // Without --nproc: the launcher's world size, else one rank.
  EXPECT_EQ(ErrorOf({"--inject", "straggler:rank=2,ms=5"}, 4), "");
  EXPECT_EQ(ErrorOf({"--inject", "straggler:rank=2,ms=5"}, 0),
            "--inject straggler:rank=2,ms=5: rank 2 is out of range for 1 rank (0..0)");
  EXPECT_NE(ErrorOf({"--inject", "stragler:rank=0,ms=5"}).find("did you mean 'straggler'?"),
            std::string::npos);
  EXPECT_EQ(ErrorOf({"--nproc", "2", "--steps", "10", "--inject", "hang:rank=1,step=10"}),
            "--inject hang:rank=1,step=10: step 10 is never reached: the run stops after "
            "--steps 10 (steps 0..9)");
  EXPECT_EQ(ErrorOf({"--nproc", "2", "--steps", "10", "--inject", "hang:rank=1,step=9"}), "");
  EXPECT_EQ(ErrorOf({"--nproc", "2", "--epochs", "1", "--inject", "hang:rank=1,step=900"}), "");
  // A header-only fault is synth's (inject/inject_spec.h SynthOnly).
  EXPECT_EQ(ErrorOf({"--nproc", "2", "--inject", "config-mismatch:rank=1"}),
            "--inject config-mismatch:rank=1: the trainer cannot inject this, only synth imitates "
            "it (use dsdiag synth --inject config-mismatch:rank=1)");
}

TEST(TrainOptionsTest, BadValuesNameTheFlag) {
  const struct {
    Args args;
    const char* message;
  } cases[] = {
      {{"--nproc", "0"}, "--nproc must be 1..1024, got 0"},
      {{"--nproc", "5000"}, "--nproc must be 1..1024, got 5000"},
      {{"--steps", "0"}, "--steps must be >= 1, got 0"},
      {{"--epochs", "0"}, "--epochs must be >= 1, got 0"},
      {{"--batch-size", "0"}, "--batch-size must be >= 1, got 0"},
      {{"--workers", "300"}, "--workers must be 0..256, got 300"},
      {{"--seed=-1"}, "--seed must be >= 0, got -1"},
      {{"--amp", "fp8"}, "--amp must be one of off, bf16, fp16, got 'fp8'"},
      {{"--clip-norm=-1"}, "--clip-norm must be >= 0, got -1"},
      {{"--clip-norm", "nan"}, "--clip-norm must be a finite number"},
      {{"--ckpt-every=-2"}, "--ckpt-every must be >= 0, got -2"},
      {{"--timeout", "0"}, "--timeout must be > 0 seconds"},
      {{"--device", "tpu"}, "--device must be one of cpu, cuda, got 'tpu'"},
      {{"--backend", "mpi"}, "--backend must be one of gloo, nccl, got 'mpi'"},
      {{"--backend", "nccl"}, "--backend nccl needs --device cuda"},
      {{"--probes", "max"}, "--probes must be one of off, light, full, got 'max'"},
      {{"--trace-compress", "gzip"}, "--trace-compress must be one of none, zstd, got 'gzip'"},
      {{"--nproc", "4", "--dataset-size", "16"},
       "--dataset-size 16 is too small: 4 ranks x --batch-size 8 need at least 32 samples"},
      {{"--layers", "0"}, "--layers must be >= 1, got 0"},
      {{"--d-model", "30", "--heads", "4"}, "--d-model 30 is not a multiple of --heads 4"},
      {{"--top-k", "5"}, "--top-k must be 1..4, got 5"},
      {{"--vocab", "1"}, "--vocab must be >= 2, got 1"},
      {{"--lr", "0"}, "--lr must be > 0"},
      {{"--dropout", "1"}, "--dropout must be in [0, 1)"},
      {{"--health-every", "0"}, "--health-every must be >= 1, got 0"},
      {{"--out", ""}, "--out must name a directory"},
      {{"--steps", "abc"}, "the argument ('abc') for option '--steps' is invalid"},
      {{"--frobnicate"}, "unrecognised option '--frobnicate'"},
      // Words that are no option used to be dropped silently (found by fuzz/options_fuzzer).
      {{"--steps", "5", "junk"}, "unexpected argument 'junk': dsdiag train takes options only"},
      {{"--nproc", "2", "--", "-/amp"}, "unexpected argument '-/amp'"},
  };
  for (const auto& c : cases) {
    const std::string message = ErrorOf(c.args);
    EXPECT_NE(message.find(c.message), std::string::npos)
        << "args: " << ::testing::PrintToString(c.args) << "\nmessage: " << message;
  }
}

// Boost fills its message templates by replacing "%value%", "%canonical_option%"... until
// none is left: an argument holding one used to make the parse loop forever (found by
// fuzz/options_fuzzer). Every command parses through the same message helper.
TEST(TrainOptionsTest, ArgumentsHoldingBoostPlaceholdersAreQuotedAsGiven) {
  EXPECT_NE(ErrorOf({"--heads", "%value%'k"})
                .find("the argument ('%value%'k') for option '--heads' is invalid"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--steps", "%option%"})
                .find("the argument ('%option%') for option '--steps' is invalid"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--%canonical_option%"}).find("unrecognised option '--%canonical_option%'"),
            std::string::npos);
  CompareArgs compare;
  try {
    ParseCompareArgs({"run", "--x%original_token%"}, &compare);
    ADD_FAILURE() << "an unknown option was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("unrecognised option '--x%original_token%'"),
              std::string::npos)
        << e.what();
  }
}

TEST(TrainOptionsTest, Help) {
  EXPECT_TRUE(ParseTrainArgs({"--help"}, 0).help);
  EXPECT_TRUE(ParseTrainArgs({"-h"}, 0).help);
  const std::string usage = TrainUsage();
  for (const char* flag : {"--nproc",
                           "--steps",
                           "--epochs",
                           "--batch-size",
                           "--workers",
                           "--seed",
                           "--amp",
                           "--clip-norm",
                           "--ckpt-every",
                           "--resume",
                           "--out",
                           "--timeout",
                           "--device",
                           "--backend",
                           "--probes",
                           "--inject",
                           "--dataset-size",
                           "--layers",
                           "--d-model",
                           "--heads",
                           "--experts",
                           "--top-k",
                           "--seq-len",
                           "--vocab",
                           "--lr",
                           "--dropout",
                           "--health-every",
                           "default 50",
                           "runs/<YYYYmmdd-HHMMSS>",
                           "collective-mismatch:rank=R,step=S",
                           "overflow:step=S[,rank=R]"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
}

TEST(TrainOptionsTest, RunDirNames) {
  const std::string dir = TimestampRunDir(std::time(nullptr));
  ASSERT_EQ(dir.size(), std::string("runs/20261130-081500").size()) << dir;
  EXPECT_EQ(dir.rfind("runs/20", 0), 0u);
  EXPECT_EQ(dir[13], '-');
}

TEST(TrainOptionsTest, SharedRunDirComesFromALauncherId) {
  unsetenv("TORCHELASTIC_RUN_ID");
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_STEP_ID");
  launch::DistEnv env;
  env.rank = 1;
  env.world_size = 2;
  env.source = "torchrun";
  try {
    SharedRunDir(env, 0);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("pass the same --out RUN_DIR to every rank"),
              std::string::npos)
        << e.what();
  }
  setenv("SLURM_JOB_ID", "77", 1);
  setenv("SLURM_STEP_ID", "2", 1);
  EXPECT_EQ(SharedRunDir(env, 0), "runs/slurm-77.2");
  setenv("TORCHELASTIC_RUN_ID", "none", 1);  // torchrun's default when no id was given
  EXPECT_EQ(SharedRunDir(env, 0), "runs/slurm-77.2");
  setenv("TORCHELASTIC_RUN_ID", "abc", 1);
  EXPECT_EQ(SharedRunDir(env, 0), "runs/abc");
  env.run_id = "20261130-081500-4f2a9c1e";
  EXPECT_EQ(SharedRunDir(env, 0), "runs/20261130-081500-4f2a9c1e");
  unsetenv("TORCHELASTIC_RUN_ID");
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_STEP_ID");
  env.run_id.clear();
  env.world_size = 1;
  env.rank = 0;
  EXPECT_EQ(SharedRunDir(env, 0).rfind("runs/19", 0), 0u);  // the epoch, in local time
}

}  // namespace
}  // namespace dsdiag::cli
