// TrainConfig: every setting of `dsdiag train` (docs/contract.md), torch-free so that the CLI,
// the launcher and the trace header share one definition. Model sizes default to a model
// that trains 50 steps on 4 ranks in well under a minute on 2 CPU cores.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "inject/inject_spec.h"
#include "trace/json_value.h"

namespace dsdiag::trainer {

struct TrainConfig {
  // Run shape.
  int nproc = 0;        // >0: launch this many local ranks; 0: run as one rank from env
  int64_t steps = -1;   // optimizer steps; -1: unbounded (then epochs bounds the run)
  int64_t epochs = -1;  // -1: unbounded (then steps bounds); neither given: steps = 50
  int batch_size = 8;   // per rank
  int workers = 0;      // data-loader worker threads
  int64_t seed = 1234;
  std::string amp = "off";              // off | bf16 | fp16
  double clip_norm = 0;                 // 0: no clipping
  int64_t ckpt_every = 0;               // 0: no periodic checkpoint
  std::string resume;                   // checkpoint path to resume from
  std::string out;                      // run dir; default runs/<timestamp>
  double timeout_s = 60;                // collective watchdog / process-group timeout
  std::string device = "cpu";           // cpu | cuda
  std::string backend = "";             // gloo | nccl; empty: gloo on cpu, nccl on cuda
  std::string probes = "light";         // off | light | full
  std::string trace_compress = "none";  // none | zstd: rank-<R>.jsonl or rank-<R>.jsonl.zst
  inject::InjectPlan inject;            // the --inject specs, parsed once by the CLI
  int64_t dataset_size = 1024;          // samples in the synthetic corpus

  // Model (DeepSeek-style MoE decoder).
  int vocab = 64;
  int seq_len = 16;
  int d_model = 32;
  int n_layers = 2;
  int n_heads = 2;
  int n_experts = 4;
  int top_k = 2;
  int d_ff = 64;
  double dropout = 0.1;
  double lr = 3e-3;

  int64_t health_every = 10;  // steps between health-check allreduces
  int64_t log_every = 10;     // steps between progress lines on a terminal

  // The settings as a flat JSON object for the trace header's `config`.
  trace::JsonValue ToJson() const;
};

}  // namespace dsdiag::trainer
