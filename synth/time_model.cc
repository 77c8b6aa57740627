#include "synth/time_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "synth/noise.h"

namespace dsdiag::synth {
namespace {

constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1000 * kUs;
constexpr int64_t kSec = 1000 * kMs;

// Mean phase durations of one step of the reference trainer's small model on a CPU rank.
constexpr int64_t kDataNs = 1200 * kUs;
constexpr int64_t kForwardNs = 15 * kMs;
constexpr int64_t kBackwardNs = 22 * kMs;
constexpr int64_t kOptimizerNs = 1800 * kUs;
constexpr int64_t kSyncTailNs = 40 * kUs;  // copying the reduced buckets back

// Allreduce cost: a latency per tree level plus bytes over the ring's bandwidth.
constexpr int64_t kCollectiveLatencyNs = 25 * kUs;
constexpr double kBytesPerNs = 1.5;  // 1.5 GB/s

// 2026-01-01T00:00:00Z: synthetic runs happen on a fixed day so that a seed fixes every byte.
constexpr int64_t kWallBaseNs = int64_t{1767225600} * kSec;

// Noise namespaces: the second Noise key is the step for per-step values, negative
// for constants of a rank or host.
constexpr int64_t kRankConstants = -1;
constexpr int64_t kHostConstants = -2;

// Noise slots of one rank-step.
enum Slot : uint32_t {
  kSlotData,
  kSlotForward,
  kSlotBackward,
  kSlotOptimizer,
  kSlotGap,
  kSlotEnter,  // + bucket
  kSlotExit = kSlotEnter + kMaxBuckets,
};

// Slots of a rank's or host's constants.
enum ConstSlot : uint32_t {
  kSlotLaunch,
  kSlotParams,
  kSlotFirstStep,
  kSlotOffsetNoise,
  kSlotOffsetErr,
  kSlotHostBoot,
  kSlotHostWallError,
};

int64_t Ns(double v) { return static_cast<int64_t>(std::llround(v)); }

// `mean` scaled by (1 + spread * u), u uniform in [-1, 1).
int64_t Jittered(const Noise& n, uint32_t slot, int64_t mean, double spread) {
  return Ns(static_cast<double>(mean) * (1.0 + spread * n.Symmetric(slot)));
}

int Host(int rank) { return rank / kRanksPerHost; }

}  // namespace

TimeModel::TimeModel(uint64_t seed, int ranks, const SynthModel& params, const Faults& faults)
    : seed_(seed),
      ranks_(ranks),
      buckets_(static_cast<int>(params.buckets().size())),
      faults_(faults),
      wall_epoch_(kWallBaseNs + static_cast<int64_t>(Mix(seed) % 86400) * kSec) {
  if (buckets_ < 1 || buckets_ > kMaxBuckets) {
    throw std::logic_error("synth: parameter table needs 1.." + std::to_string(kMaxBuckets) +
                           " buckets");
  }
  int64_t total = 0;
  for (const Bucket& b : params.buckets()) total += b.numel;
  int64_t done = 0;
  const int levels = static_cast<int>(std::ceil(std::log2(std::max(2, ranks))));
  for (int k = 0; k < buckets_; ++k) {
    const Bucket& b = params.buckets()[k];
    done += b.numel;
    ready_fraction_[k] = static_cast<double>(done) / static_cast<double>(total);
    const double bytes = 4.0 * static_cast<double>(b.numel);
    transfer_ns_[k] = kCollectiveLatencyNs * levels + Ns(2.0 * bytes / kBytesPerNs);
  }
}

int64_t TimeModel::LaunchTime(int rank) const {
  return Ns(Noise(seed_, rank, kRankConstants).Uniform(kSlotLaunch) * 300 * kMs);
}

int64_t TimeModel::ParamsTime(int rank) const {
  return LaunchTime(rank) +
         Jittered(Noise(seed_, rank, kRankConstants), kSlotParams, 600 * kMs, 0.15);
}

// Everyone leaves the process-group rendezvous together, then measures its clock offset.
int64_t TimeModel::ClockTime(int rank) const { return FirstStepStart(rank) - 3 * kMs; }

int64_t TimeModel::FirstStepStart(int rank) const {
  return 2 * kSec + Ns(Noise(seed_, rank, kRankConstants).Uniform(kSlotFirstStep) * 2 * kMs);
}

StepWork TimeModel::Work(int rank, int64_t step, int64_t start) const {
  const Noise n(seed_, rank, step);
  StepWork w;
  w.start = start;
  w.data_end = start + Jittered(n, kSlotData, kDataNs, 0.10);
  w.forward_end = w.data_end + Jittered(n, kSlotForward, kForwardNs, 0.05);
  // A straggler's extra time comes first in backward, so every bucket it holds is late.
  const int64_t extra = faults_.StragglerNs(rank);
  const int64_t compute = Jittered(n, kSlotBackward, kBackwardNs, 0.05);
  w.backward_end = w.forward_end + extra + compute;
  for (int k = 0; k < buckets_; ++k) {
    const int64_t ready =
        w.forward_end + extra + Ns(ready_fraction_[k] * static_cast<double>(compute));
    w.enter[k] = ready + Ns(2 * kUs + n.Uniform(kSlotEnter + k) * 13 * kUs);
  }
  w.optimizer_ns = Jittered(n, kSlotOptimizer, kOptimizerNs, 0.05);
  w.gap_ns = Jittered(n, kSlotGap, 20 * kUs, 0.5);
  return w;
}

StepEnd TimeModel::End(const StepWork& work, int64_t last_exit) const {
  StepEnd e;
  e.sync_end = std::max(work.backward_end, last_exit) + kSyncTailNs;
  e.optimizer_end = e.sync_end + work.optimizer_ns;
  e.next_start = e.optimizer_end + work.gap_ns;
  return e;
}

// Under 10 us, while transfers take at least kCollectiveLatencyNs: per-rank completions
// of consecutive allreduces never swap.
int64_t TimeModel::ExitJitter(int rank, int64_t step, int bucket) const {
  return Ns(Noise(seed_, rank, step).Uniform(kSlotExit + bucket) * 10 * kUs);
}

int64_t TimeModel::Mono(int rank, int64_t t) const {
  // Hosts booted between 1 h and 25 h before the launch.
  const Noise host(seed_, Host(rank), kHostConstants);
  return 3600 * kSec + Ns(host.Uniform(kSlotHostBoot) * 86400.0 * kSec) + t;
}

int64_t TimeModel::HostWallError(int host) const {
  if (host == 0) return 0;  // rank 0's host is the reference
  return Ns(Noise(seed_, host, kHostConstants).Symmetric(kSlotHostWallError) * 150 * kUs);
}

int64_t TimeModel::Wall(int rank, int64_t t) const {
  return wall_epoch_ + t + HostWallError(Host(rank)) + faults_.SkewNs(rank);
}

// Half the best round trip to rank 0: a few us on rank 0's host, tens across the network.
int64_t TimeModel::OffsetErr(int rank) const {
  if (rank == 0) return 0;
  const Noise n(seed_, rank, kRankConstants);
  if (Host(rank) == 0) return 2 * kUs + Ns(n.Uniform(kSlotOffsetErr) * 4 * kUs);
  return 15 * kUs + Ns(n.Uniform(kSlotOffsetErr) * 25 * kUs);
}

// The true offset to rank 0 (host error and skews), measured to within its error. Rank 0
// is the reference: a skew on rank 0 shows as the opposite offset on everyone else.
int64_t TimeModel::MeasuredOffset(int rank) const {
  if (rank == 0) return 0;
  const Noise n(seed_, rank, kRankConstants);
  const double noise = 0.8 * n.Symmetric(kSlotOffsetNoise) * static_cast<double>(OffsetErr(rank));
  return HostWallError(Host(rank)) + faults_.SkewNs(rank) - faults_.SkewNs(0) + Ns(noise);
}

}  // namespace dsdiag::synth
