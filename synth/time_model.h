// TimeModel: when things happen on each rank of a synthetic run, and how each rank's clocks
// read them.
//
// Times here are "true" ns since the job's launch, one clock for all ranks. A record's `ts`
// is the rank's CLOCK_MONOTONIC: its host's boot offset plus true time (ranks on one host
// share the host's clocks; 8 ranks per host). Wall clocks differ per host by a little NTP
// error, and by whatever a clock-skew fault adds; the measured offset in the header says so,
// within its stated error, as the trainer's clock probe would measure it.
//
// A step on one rank: data, forward, backward (gradient buckets become ready one after
// another during backward and their allreduces are called then), sync (waiting for the
// outstanding allreduces), optimizer. The allreduces themselves are cross-rank: see
// schedule.h. Every duration carries seeded jitter (noise.h), so the rank that arrives last
// differs from step to step unless a straggler is injected.
#pragma once

#include <array>
#include <cstdint>

#include "synth/faults.h"
#include "synth/synth_model.h"

namespace dsdiag::synth {

inline constexpr int kMaxBuckets = 16;
inline constexpr int kRanksPerHost = 8;

// One rank's own work in one step, before it waits for anyone.
struct StepWork {
  int64_t start = 0;
  int64_t data_end = 0;
  int64_t forward_end = 0;
  int64_t backward_end = 0;                  // straggler delay included
  std::array<int64_t, kMaxBuckets> enter{};  // when each bucket's allreduce is called
  int64_t optimizer_ns = 0;
  int64_t gap_ns = 0;  // loop overhead between this step's end and the next step_begin
};

// How one step ends on one rank once its last allreduce has completed.
struct StepEnd {
  int64_t sync_end = 0;
  int64_t optimizer_end = 0;  // the step's end
  int64_t next_start = 0;
};

class TimeModel {
 public:
  TimeModel(uint64_t seed, int ranks, const SynthModel& params, const Faults& faults);

  int ranks() const { return ranks_; }
  int buckets() const { return buckets_; }
  uint64_t seed() const { return seed_; }

  // Before step 0: the process starts (header), builds the model (params), meets the
  // others (clock measurement) and starts training.
  int64_t LaunchTime(int rank) const;
  int64_t ParamsTime(int rank) const;
  int64_t ClockTime(int rank) const;
  int64_t FirstStepStart(int rank) const;

  StepWork Work(int rank, int64_t step, int64_t start) const;
  StepEnd End(const StepWork& work, int64_t last_exit) const;
  // Duration of bucket `bucket`'s allreduce once every rank has entered it.
  int64_t TransferNs(int bucket) const { return transfer_ns_[bucket]; }
  // The spread of completion times across ranks, added to the common completion.
  int64_t ExitJitter(int rank, int64_t step, int bucket) const;

  // Clocks of `rank` at true time t, and its measured offset to rank 0.
  int64_t Mono(int rank, int64_t t) const;
  int64_t Wall(int rank, int64_t t) const;
  int64_t MeasuredOffset(int rank) const;
  int64_t OffsetErr(int rank) const;
  // The wall time of the launch on rank 0's clock (names the run).
  int64_t LaunchWall() const { return wall_epoch_; }

 private:
  int64_t HostWallError(int host) const;

  uint64_t seed_;
  int ranks_;
  int buckets_;
  Faults faults_;
  int64_t wall_epoch_;
  std::array<double, kMaxBuckets> ready_fraction_{};  // of backward, per bucket
  std::array<int64_t, kMaxBuckets> transfer_ns_{};
};

}  // namespace dsdiag::synth
