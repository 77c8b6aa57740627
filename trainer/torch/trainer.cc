#include "trainer/torch/trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <limits>
#include <optional>
#include <thread>

#include "probes/loop_records.h"
#include "probes/probe_timer.h"
#include "probes/session.h"
#include "probes/torch/gradient_probe.h"
#include "trace/clock.h"
#include "trace/records/end_record.h"
#include "trace/records/fp_record.h"
#include "trainer/torch/batch_stream.h"
#include "trainer/torch/checkpoint.h"
#include "trainer/torch/comm.h"
#include "trainer/torch/faults.h"
#include "trainer/torch/grad_stats.h"
#include "trainer/torch/grad_sync.h"
#include "trainer/torch/mixed_precision.h"
#include "trainer/torch/moe_model.h"
#include "trainer/torch/run_control.h"
#include "trainer/torch/seeds.h"
#include "trainer/torch/tensor_hash.h"

namespace dsdiag::trainer {
namespace {

using probes::Phase;
using probes::PhaseScope;

constexpr int64_t kWarmupSteps = 5;
// Seeds the `sampler-seed` fault gives a rank: far from any seed a user would pick.
constexpr uint64_t kForeignSamplerSeed = 0x5eed0000;
// The parameter the `grad-desync` fault alters after the allreduce.
constexpr const char* kDesyncParam = "head.weight";

torch::Device DeviceFor(const TrainConfig& config, const launch::DistEnv& env) {
  if (config.device == "cuda") {
    if (!torch::cuda::is_available()) {
      throw std::runtime_error("--device cuda: this LibTorch sees no CUDA device");
    }
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
  }
  if (config.device != "cpu") {
    throw std::runtime_error("unknown device '" + config.device + "' (expected cpu or cuda)");
  }
  return torch::Device(torch::kCPU);
}

double LearningRate(const TrainConfig& config, int64_t step) {
  // A short linear warm-up, then constant: a pure function of the step, so resuming
  // needs no scheduler state.
  return config.lr * std::min(1.0, double(step + 1) / double(kWarmupSteps));
}

int FindParam(const ModelParams& params, const std::string& name) {
  for (size_t i = 0; i < params.size(); ++i) {
    if (params.names[i] == name) return static_cast<int>(i);
  }
  return static_cast<int>(params.size()) - 1;
}

uint64_t GeneratorHash(const torch::Generator& generator) {
  return HashTensors({generator.get_state()});
}

}  // namespace

struct Trainer::State {
  State(const TrainConfig& config, const launch::DistEnv& env, const Faults& faults, Comm& comm,
        probes::Session* session, RunControl& control)
      : config(config),
        env(env),
        faults(faults),
        comm(comm),
        session(session),
        control(control),
        device(DeviceFor(config, env)),
        scaler(config.amp == "fp16") {}

  void Setup();
  void BuildModel();
  void BuildData();
  void Resume();
  void TrainStep(int64_t step);
  // `rng` records of the generators a step draws from: the per-rank dropout stream and the
  // process-wide CPU generator, at each epoch start and every health_every steps.
  void RecordRngStreams(const char* why);
  torch::Tensor Forward(const Batch& batch, int64_t step);
  void Backward(const torch::Tensor& loss, int64_t step);
  // Returns whether this rank skips the optimizer step (fp16 overflow).
  bool Sync(int64_t step, double loss, double* global_loss);
  void OptimizerStep(int64_t step, bool skip);
  void SaveCheckpointNow(int64_t steps_done);
  void PrintProgress(int64_t step, double loss, int64_t step_start_ns) const;

  const TrainConfig& config;
  const launch::DistEnv& env;
  const Faults& faults;
  Comm& comm;
  probes::Session* session;
  RunControl& control;
  const torch::Device device;

  MoeDecoder model{nullptr};
  ModelParams params;
  std::unique_ptr<GradSync> grad_sync;
  std::unique_ptr<probes::GradientProbe> grad_probe;
  std::unique_ptr<torch::optim::Adam> optimizer;
  LossScaler scaler;
  std::unique_ptr<BatchStream> stream;
  torch::Generator dropout_rng = at::detail::createCPUGenerator(0);
  uint64_t dropout_seed = 0;
  int64_t rng_epoch_recorded = -1;
  int64_t start_step = 0;
  int64_t total_steps = 0;
  int64_t total_epochs = 0;
  // Per step, for the scaler record.
  bool inf_local = false;
  bool inf_global = false;
  double norm_scaled = 0;
  int64_t samples = 0;
};

Trainer::Trainer(const TrainConfig& config, const launch::DistEnv& env, const Faults& faults,
                 Comm& comm, probes::Session* session, RunControl& control)
    : state_(std::make_unique<State>(config, env, faults, comm, session, control)) {}

Trainer::~Trainer() = default;

void Trainer::Run() {
  State& s = *state_;
  s.Setup();
  for (int64_t step = s.start_step; step < s.total_steps; ++step) {
    s.control.Check();
    if (s.stream->next_epoch() >= s.total_epochs) break;
    s.TrainStep(step);
  }
  s.grad_probe->FingerprintParams(trace::records::fp_why::kFinal);
}

void Trainer::State::Setup() {
  const int64_t kUnbounded = std::numeric_limits<int64_t>::max();
  total_steps = config.steps >= 0 ? config.steps : kUnbounded;
  total_epochs = config.epochs >= 0 ? config.epochs : kUnbounded;
  if (config.steps < 0 && config.epochs < 0) total_steps = 50;
  BuildModel();
  BuildData();
  if (!config.resume.empty()) Resume();
}

void Trainer::State::BuildModel() {
  // Same seed everywhere, then the broadcast makes sure; `no-broadcast` reproduces the
  // script that seeds per rank and forgets to broadcast.
  const uint64_t init_seed =
      static_cast<uint64_t>(config.seed) + (faults.no_broadcast() ? env.rank : 0);
  torch::manual_seed(init_seed);
  probes::records::WriteRng(session, "cpu", "init", static_cast<int64_t>(init_seed),
                            GeneratorHash(at::detail::getDefaultCPUGenerator()));
  model = MoeDecoder(ModelOptionsFrom(config));
  model->to(device);
  params = CollectParams(*model);
  if (!faults.no_broadcast() && env.world_size > 1) BroadcastModuleState(comm, *model);

  grad_sync = std::make_unique<GradSync>(params);
  probes::GradientProbeOptions probe_options;
  probe_options.param_fp_every = config.health_every > 0 ? config.health_every : 10;
  grad_probe = std::make_unique<probes::GradientProbe>(session, params.names, params.tensors,
                                                       grad_sync->buckets(), probe_options);
  grad_probe->FingerprintParams(trace::records::fp_why::kInit);

  optimizer =
      std::make_unique<torch::optim::Adam>(params.tensors, torch::optim::AdamOptions(config.lr));

  // Per-rank dropout stream (base + rank); `rng-collision` gives every rank the base.
  dropout_seed = static_cast<uint64_t>(config.seed) + (faults.rng_collision() ? 0 : env.rank);
  dropout_rng.set_current_seed(MixSeed(dropout_seed, 0));
  probes::records::WriteRng(session, "dropout", "init", static_cast<int64_t>(dropout_seed),
                            GeneratorHash(dropout_rng));
}

void Trainer::State::BuildData() {
  DataOptions data;
  data.corpus.vocab = config.vocab;
  data.corpus.seq_len = config.seq_len;
  data.corpus.size = config.dataset_size;
  data.corpus.seed = static_cast<uint64_t>(config.seed);
  data.corpus.slow_ms = faults.slow_loader_ms();
  data.world_size = env.world_size;
  data.rank = env.rank;
  data.shuffle_seed =
      faults.sampler_seed() ? kForeignSamplerSeed + env.rank : static_cast<uint64_t>(config.seed);
  data.batch_size = config.batch_size;
  data.workers = config.workers;
  data.set_epoch = !faults.no_set_epoch();
  stream = std::make_unique<BatchStream>(data, session);
  torch::Generator sampler_rng = at::detail::createCPUGenerator(data.shuffle_seed);
  probes::records::WriteRng(session, "sampler", "init", static_cast<int64_t>(data.shuffle_seed),
                            GeneratorHash(sampler_rng));
}

void Trainer::State::Resume() {
  std::string path = config.resume;
  if (faults.ckpt_stale()) {
    // The rank whose checkpoint directory listing is stale picks up the previous file.
    const std::string older = OlderCheckpoint(path);
    if (!older.empty()) path = older;
  }
  const int64_t t0 = trace::MonotonicNs();
  LoadResult loaded = LoadCheckpoint(path, params, *optimizer);
  probes::records::CheckpointRecord r;
  r.op = trace::records::kCkptLoad;
  r.path = path;
  r.bytes = loaded.bytes;
  r.hash = loaded.model_hash;
  r.ckpt_step = loaded.state.position.step;
  r.epoch = loaded.state.position.epoch;
  r.dur = trace::MonotonicNs() - t0;
  r.map_location = "cpu";
  r.prefix_stripped = loaded.prefix_stripped;
  r.missing = loaded.missing;
  r.unexpected = loaded.unexpected;
  probes::records::WriteCheckpoint(session, r);
  if (!loaded.missing.empty()) {
    throw CheckpointError("checkpoint " + path + " lacks " + std::to_string(loaded.missing.size()) +
                          " parameters, e.g. " + loaded.missing.front());
  }
  scaler.Restore(loaded.state.scale, loaded.state.growth_tracker);

  // Continue where rank 0 continues, so that the ranks stay in lockstep (a rank that
  // loaded another file keeps its tensors: that is the fault to be found).
  TrainPosition position = loaded.state.position;
  if (env.world_size > 1) {
    torch::Tensor agreed = torch::tensor(
        {position.step, position.epoch, position.epoch_batches, position.sampler_epoch},
        torch::kLong);
    comm.Broadcast(agreed, /*root=*/0, "resume-position");
    position.step = agreed[0].item<int64_t>();
    position.epoch = agreed[1].item<int64_t>();
    position.epoch_batches = agreed[2].item<int64_t>();
    position.sampler_epoch = agreed[3].item<int64_t>();
  }
  start_step = position.step;
  stream->Seek(position);
  grad_probe->FingerprintParams(trace::records::fp_why::kResume);
}

void Trainer::State::TrainStep(int64_t step) {
  const int64_t step_start = trace::MonotonicNs();
  session->BeginStep(step, stream->next_epoch());
  if (stream->next_epoch() != rng_epoch_recorded) {
    rng_epoch_recorded = stream->next_epoch();
    RecordRngStreams("epoch");
  }

  Batch batch;
  {
    PhaseScope phase(session, Phase::kData);
    batch = stream->Next();
    batch.inputs = batch.inputs.to(device);
    batch.targets = batch.targets.to(device);
  }
  samples = batch.inputs.size(0);
  control.Check();

  torch::Tensor loss = Forward(batch, step);
  const double local_loss = loss.item<double>();
  control.Check();
  Backward(loss, step);
  control.Check();

  double global_loss = NAN;
  const bool skip = Sync(step, local_loss, &global_loss);
  control.Check();
  OptimizerStep(step, skip);

  if (config.ckpt_every > 0 && (step + 1) % config.ckpt_every == 0) {
    PhaseScope phase(session, Phase::kCheckpoint);
    SaveCheckpointNow(step + 1);
  }
  probes::StepSummary summary;
  summary.loss = local_loss;
  summary.global_loss = global_loss;
  summary.lr = LearningRate(config, step);
  summary.samples = samples;
  session->EndStep(summary);
  PrintProgress(step, std::isnan(global_loss) ? local_loss : global_loss, step_start);
}

torch::Tensor Trainer::State::Forward(const Batch& batch, int64_t step) {
  PhaseScope phase(session, Phase::kForward);
  if (const int64_t ms = faults.straggler_ms()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  // Both strike mid-compute, where real ones do (a kernel that faults, a deadlock).
  if (faults.crash_at(step)) raise(SIGKILL);
  if (faults.hang_at(step)) {
    // Stuck for good; the failure watcher ends the process once the others give up on it.
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  for (torch::Tensor& p : params.tensors) p.mutable_grad() = torch::Tensor();  // set_to_none
  // Re-seeded from (stream seed, step): a resumed run draws the same masks.
  dropout_rng.set_current_seed(MixSeed(dropout_seed, static_cast<uint64_t>(step)));
  ForwardContext context;
  context.dropout_rng = &dropout_rng;
  context.skip_shared_expert = faults.skip_shared_expert();
  AutocastScope autocast(config.amp == "bf16", device.type());
  ModelOutput out = model->forward(batch.inputs, context);
  torch::Tensor ce = torch::nn::functional::cross_entropy(
      out.logits.reshape({-1, out.logits.size(-1)}).to(torch::kFloat), batch.targets.reshape({-1}));
  return ce + out.aux_loss;
}

void Trainer::State::Backward(const torch::Tensor& loss, int64_t step) {
  PhaseScope phase(session, Phase::kBackward);
  (scaler.enabled() ? loss * scaler.scale() : loss).backward();
  if (faults.overflow_at(step)) {
    // What an fp16 overflow leaves behind: an inf in some gradient.
    torch::NoGradGuard no_grad;
    for (torch::Tensor& p : params.tensors) {
      if (!p.grad().defined()) continue;
      p.mutable_grad().view({-1})[0].fill_(std::numeric_limits<float>::infinity());
      break;
    }
  }
  grad_probe->AfterBackward();
}

bool Trainer::State::Sync(int64_t step, double loss, double* global_loss) {
  PhaseScope phase(session, Phase::kSync);
  inf_local = scaler.enabled() && LossScaler::Overflowed(MaxAbsGrad(params.tensors));
  inf_global = inf_local;
  if (scaler.enabled()) {
    torch::Tensor flag = torch::tensor({inf_local ? 1.0f : 0.0f});
    comm.AllReduce(flag, c10d::ReduceOp::MAX, "found-inf");
    inf_global = flag.item<float>() > 0;
  }
  grad_sync->AllReduceMean(comm, faults.collective_mismatch_at(step) ? 1 : 0);
  grad_probe->AfterSync();  // at the allreduce's completion: every rank agrees here
  if (faults.alter_grad_at(step)) {
    // A rank-local edit after the sync (a hook, a stray in-place op): replicas now differ.
    torch::NoGradGuard no_grad;
    const torch::Tensor& p = params.tensors[FindParam(params, kDesyncParam)];
    p.mutable_grad().mul_(1.5).add_(1e-3);
  }

  // In float32, as a PyTorch job averages its loss (all_reduce of the loss tensor, then
  // divided): the mean is a float32 again, which the step record writes in its short form.
  torch::Tensor sum = torch::tensor({static_cast<float>(loss)}, torch::kFloat);
  comm.AllReduce(sum, c10d::ReduceOp::SUM, "loss");
  *global_loss = sum.item<float>() / static_cast<float>(comm.world_size());

  if (config.health_every > 0 && (step + 1) % config.health_every == 0) {
    torch::Tensor failed = torch::tensor({control.peer_failed() ? 1.0f : 0.0f});
    comm.AllReduce(failed, c10d::ReduceOp::MAX, "health");
    if (failed.item<float>() > 0) {
      throw StopRun(std::string(trace::records::end_reason::kPeerFailure), 1,
                    "health check: another rank reported a failure");
    }
  }
  // `scaler-desync`: this rank decides on its own flag, as if the reduction were not there.
  return faults.scaler_desync() ? inf_local : inf_global;
}

void Trainer::State::OptimizerStep(int64_t step, bool skip) {
  PhaseScope phase(session, Phase::kOptimizer);
  grad_probe->BeforeOptimizerStep();  // before unscaling and clipping touch the gradients
  const double lr = LearningRate(config, step);
  for (auto& group : optimizer->param_groups()) {
    static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
  }
  const double scale = scaler.scale();
  norm_scaled = scaler.enabled() ? GradNorm(params.tensors) : 0;
  if (!skip) {
    const bool clip = config.clip_norm > 0;
    if (scaler.enabled() && clip && faults.clip_before_unscale()) {
      const double norm = ClipGradNorm(params.tensors, config.clip_norm);
      probes::records::WriteClip(session, /*unscaled=*/false, norm, config.clip_norm);
      ScaleGrads(params.tensors, 1.0 / scale);
    } else {
      if (scaler.enabled()) ScaleGrads(params.tensors, 1.0 / scale);
      if (clip) {
        const double norm = ClipGradNorm(params.tensors, config.clip_norm);
        probes::records::WriteClip(session, /*unscaled=*/true, norm, config.clip_norm);
      }
    }
    optimizer->step();
  }
  if (scaler.enabled()) {
    probes::records::ScalerRecord r;
    r.scale = scale;
    r.inf_local = inf_local;
    r.inf_global = inf_global;
    r.skipped = skip;
    r.event = scaler.Update(skip);
    r.norm_scaled = norm_scaled;
    r.norm = norm_scaled / scale;
    probes::records::WriteScaler(session, r);
  }
  grad_probe->AfterOptimizerStep(step);
  if (config.health_every > 0 && step % config.health_every == 0) RecordRngStreams("periodic");
}

void Trainer::State::RecordRngStreams(const char* why) {
  probes::ProbeTimer timer(session);  // hashing the generators is the probe's work too
  probes::records::WriteRng(session, "dropout", why, static_cast<int64_t>(dropout_seed),
                            GeneratorHash(dropout_rng));
  probes::records::WriteRng(session, "cpu", why, config.seed,
                            GeneratorHash(at::detail::getDefaultCPUGenerator()));
  // Each visible GPU's default generator, when this LibTorch has CUDA (none here).
  const auto& cuda = at::detail::getCUDAHooks();
  if (!cuda.hasCUDA()) return;
  for (int i = 0; i < cuda.getNumGPUs(); ++i)
    probes::records::WriteRng(session, "cuda:" + std::to_string(i), why, config.seed,
                              GeneratorHash(at::globalContext().defaultGenerator(
                                  at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(i)))));
}

void Trainer::State::SaveCheckpointNow(int64_t steps_done) {
  // Rank 0 alone writes; `ckpt-all-ranks` is the script that forgot the rank check.
  if (env.rank != 0 && !faults.ckpt_all_ranks()) return;
  CheckpointState state;
  state.position = stream->position();
  state.position.step = steps_done;
  state.scale = scaler.scale();
  state.growth_tracker = scaler.growth_tracker();
  state.world_size = env.world_size;
  state.seed = config.seed;
  const std::string path = CheckpointPath(config.out, steps_done);
  const std::string temp_suffix =
      faults.ckpt_all_ranks() ? ".tmp-rank" + std::to_string(env.rank) : ".tmp";
  const int64_t t0 = trace::MonotonicNs();
  SaveResult saved = SaveCheckpoint(path, temp_suffix, params, *optimizer, state);
  probes::records::CheckpointRecord r;
  r.op = trace::records::kCkptSave;
  r.path = path;
  r.bytes = saved.bytes;
  r.hash = saved.model_hash;
  r.ckpt_step = steps_done;
  r.epoch = state.position.epoch;
  r.dur = trace::MonotonicNs() - t0;
  probes::records::WriteCheckpoint(session, r);
}

void Trainer::State::PrintProgress(int64_t step, double loss, int64_t step_start_ns) const {
  // Only for a person watching: the launcher pipes the ranks' output in scripts and tests.
  if (env.rank != 0 || config.log_every <= 0 || !isatty(STDERR_FILENO)) return;
  const bool last = step + 1 == total_steps;
  if ((step + 1) % config.log_every != 0 && !last) return;
  std::fprintf(stderr, "step %6lld  loss %.4f  %.1f ms/step\n", static_cast<long long>(step), loss,
               (trace::MonotonicNs() - step_start_ns) / 1e6);
}

}  // namespace dsdiag::trainer
