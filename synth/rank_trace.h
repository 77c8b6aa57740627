// Rendering of one rank's synthetic trace (rank-<R>.jsonl) and, for ranks whose watchdog
// fires, its flight-recorder dump (flight-rank-<R>.json), from the facts shared by all ranks.
//
// A clean rank writes: header, params, fp param init, clock (start), then per step
//   step_begin, phase data, phase forward, [coll...] phase backward, grad, [coll...],
//   fp grad after-sync, phase sync, phase optimizer, [fp param periodic], step
// (each `coll` at the point its allreduce completes, which may fall inside backward or in
// sync; `periodic` every 10th step), then fp param final, clock (end) and end (reason ok).
// Faults change the tail: see synth_run.h.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "synth/faults.h"
#include "synth/schedule.h"
#include "synth/synth_model.h"
#include "synth/time_model.h"
#include "trace/json_value.h"

namespace dsdiag::synth {

inline constexpr int kBatchSize = 8;
inline constexpr int64_t kStepsPerEpoch = 32;
inline constexpr double kLearningRate = 3e-3;
inline constexpr int64_t kTimeoutNs = int64_t{60} * 1000000000;  // the trainer's default

// Everything the ranks share, read-only while ranks render in parallel.
struct RunFacts {
  int ranks = 0;
  int64_t steps = 0;
  std::string run_id;
  trace::JsonValue config;  // the header's `config`
  const SynthModel* params = nullptr;
  const Faults* faults = nullptr;
  const TimeModel* model = nullptr;
  const Schedule* schedule = nullptr;
  std::vector<int> unused_params;  // parameters without gradient on an unused-param rank
  int64_t stop_time = 0;  // with a crash/hang: when the faulty rank died or hung (true time)
};

// Called with the buffer whenever it holds a few MB, and once at the end; it consumes
// (writes and clears) the buffer. Keeps memory flat for long runs.
using Drain = std::function<void(std::string*)>;

void RenderRankTrace(const RunFacts& run, int rank, std::string* buffer, const Drain& drain);
// Ranks that dump their flight recorder: the survivors of a hang (their watchdog fires).
bool HasFlightDump(const RunFacts& run, int rank);
void AppendFlightDump(const RunFacts& run, int rank, std::string* out);
// When `rank` starts `step` (replays its earlier steps).
int64_t StepStart(const RunFacts& run, int rank, int64_t step);

}  // namespace dsdiag::synth
