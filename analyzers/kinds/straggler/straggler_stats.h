// What the straggler analysis keeps per rank while the collectives stream by: arrival
// lateness and excess per collective and per step, the time the others waited for it alone,
// its phase times — in bounded memory (histograms of fixed buckets), whatever the run's length.
// straggler_analyzer.cc has the rules.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzers/kinds/common/name_table.h"
#include "analyzers/kinds/straggler/bucket_counts.h"
#include "analyzers/kinds/straggler/straggler_windows.h"
#include "trace/rank_clock.h"

namespace dsdiag::analyzers::straggler {

inline constexpr int64_t kMs = 1000000;
inline constexpr int64_t kMinCollectives = 3;
// Steps with collectives a rank needs before it can be called a straggler: "again and
// again" needs repetitions, and in a 4-step run one preempted process on a shared host
// looks like a pattern.
inline constexpr int64_t kMinSteps = 5;

// Lateness histogram: bucket 0 holds < 1 us, bucket i >= 1 holds
// [1 us * 10^((i-1)/20), 1 us * 10^(i/20)): 20 buckets a decade up to 1000 s, then overflow.
inline constexpr int kPerDecade = 20;
inline constexpr int kBuckets = 1 + 9 * kPerDecade + 1;
inline constexpr double kFirstEdgeNs = 1000.0;

int BucketOf(int64_t ns);
// The middle of a bucket (geometric), ns.
double BucketMiddle(int i);

// The median (the mean of the middle two for an even count); 0 when empty. The first
// reorders *v: selection, not a sort, as it runs per collective over every rank's arrival.
double MedianInPlace(std::vector<double>* v);
double Median(std::vector<double> v);

// Steps at which a rank's excess first passed each level; the finding's step is the first
// step past the largest level below half its mean excess (a rank late by 30 ms from step 4
// on may have been 1 ms late by chance at step 0).
inline constexpr std::array<int64_t, 12> kLevelsNs = {
    1 * kMs,   2 * kMs,   5 * kMs,   10 * kMs,   20 * kMs,   50 * kMs,
    100 * kMs, 200 * kMs, 500 * kMs, 1000 * kMs, 2000 * kMs, 5000 * kMs};

// A rank's sums per phase (their names interned in the analyzer's NameTable), in order of
// first sight: a handful, searched linearly.
using PhaseSums = std::vector<std::pair<InternedName, int64_t>>;

struct Arrival {
  int rank = 0;
  int64_t enter = 0;  // rank 0's clock, ns
  int site = 0;       // the run's number of its call site (RunSites); 0: unknown
};

// Aligned, and the fields every collective updates first: Measure walks every rank's stats
// per collective, so at 16,384 ranks what it touches per rank is what it costs.
struct alignas(64) RankStats {
  // Per collective (Measure): the first cache line, and the histogram's bucket.
  int64_t collectives = 0;
  int64_t lateness_ns = 0;
  int64_t excess_ns = 0;
  int64_t max_lateness_ns = 0;
  // The step being gathered and its largest excess so far (see StepExcess below).
  std::optional<int64_t> excess_step;
  int64_t excess_step_max_ns = 0;
  BucketCounts histogram{kBuckets};  // lateness per collective

  bool present = false;
  trace::RankClock clock;
  bool stepping = false;  // a step_begin was seen: collectives count from now on

  int64_t steps = 0;  // `step` records
  int64_t step_ns = 0;
  // Per phase name, in order of first sight: a handful, looked up 5 times per `step` record,
  // where a map compared strings at every level.
  PhaseSums phase_ns;
  const int64_t* FindPhaseNs(std::string_view name) const {
    for (const auto& [phase, ns] : phase_ns)
      if (phase == name) return &ns;
    return nullptr;
  }

  // What the scheduler says of each phase's thread (`step` records' `cpu` and `runq`):
  // ns on a CPU and ns waiting for one, per phase name, over the steps that carry them.
  PhaseSums phase_cpu_ns, phase_runq_ns;
  int64_t cpu_steps = 0, runq_steps = 0;
  double load_sum = 0;  // the host's load per CPU, summed over the steps that carry it
  int64_t load_steps = 0;
  static double MeanOf(const PhaseSums& per_phase, std::string_view phase, int64_t steps) {
    for (const auto& [name, ns] : per_phase)
      if (name == phase) return steps == 0 ? 0 : double(ns) / steps;
    return 0;
  }
  // The sum of `phase`, added at 0 when new, its name interned in `names` then. A rank's
  // first sum makes room for as many phases as the run has shown (most ranks run the same
  // ones), not the doubling's 8 for 5.
  static int64_t* NsOf(PhaseSums* per_phase, std::string_view phase, NameTable* names) {
    for (auto& [name, ns] : *per_phase)
      if (name == phase) return &ns;
    const InternedName interned = names->Intern(phase);
    if (per_phase->empty()) per_phase->reserve(names->size());
    return &per_phase->emplace_back(interned, 0).second;
  }
  // Means per step; negative when the trace carries none (older traces, no schedstat).
  double MeanCpu(std::string_view phase) const {
    return cpu_steps ? MeanOf(phase_cpu_ns, phase, cpu_steps) : -1;
  }
  double MeanRunq(std::string_view phase) const {
    return runq_steps ? MeanOf(phase_runq_ns, phase, runq_steps) : -1;
  }
  double MeanLoad() const { return load_steps ? load_sum / load_steps : -1; }
  // Summed over the step's phases, per step; negative when unknown.
  double MeanStepCpu() const { return cpu_steps ? SumOf(phase_cpu_ns) / cpu_steps : -1; }
  double MeanStepRunq() const { return runq_steps ? SumOf(phase_runq_ns) / runq_steps : -1; }
  static double SumOf(const PhaseSums& per_phase) {
    double sum = 0;
    for (const auto& [name, ns] : per_phase) sum += double(ns);
    return sum;
  }

  // Its excess per call site (the run's site numbers, a handful): where the others waited
  // for it most — the line of the collective (a barrier after a rank-0-only block, say).
  std::vector<std::pair<int, int64_t>> excess_by_site;
  void AddSiteExcess(int site, int64_t ns) {
    if (site == 0 || ns <= 0) return;
    for (auto& [known, sum] : excess_by_site)
      if (known == site) {
        sum += ns;
        return;
      }
    excess_by_site.emplace_back(site, ns);
  }
  int WorstSite() const {
    int worst = 0;
    int64_t most = 0;
    for (const auto& [site, sum] : excess_by_site)
      if (sum > most) {
        most = sum;
        worst = site;
      }
    return worst;
  }
  std::string late_at;  // that site, "train.py:35 in main"; empty when unknown (set by Finish)

  int64_t last = 0;  // collectives it entered last
  std::array<std::optional<int64_t>, kLevelsNs.size()> first_step_past;

  // Time the job stood still for this rank alone: per step, the most it arrived after all
  // the others at one collective (async buckets overlap, so per-collective sums overcount).
  int64_t held_ns = 0;
  std::optional<int64_t> held_step;
  int64_t held_step_ns = 0;

  // Per step, the largest excess (lateness behind the on-time ranks, straggler_analyzer.cc)
  // at any of its collectives, summed over steps. A rank late
  // for the first gradient bucket is on time for the next ones (the others waited), so a
  // mean over collectives would dilute it by the number of buckets.
  int64_t step_excess_sum_ns = 0;
  int64_t excess_steps = 0;

  void StepExcess(int64_t step, int64_t ns) {
    if (excess_step != step) {
      CloseStepExcess();
      excess_step = step;
      excess_step_max_ns = ns;
    }
    excess_step_max_ns = std::max(excess_step_max_ns, ns);
  }
  void CloseStepExcess() {
    if (!excess_step) return;
    step_excess_sum_ns += excess_step_max_ns;
    max_step_excess_ns = std::max(max_step_excess_ns, excess_step_max_ns);
    ++excess_steps;
    step_excess_histogram.Add(BucketOf(excess_step_max_ns));
    windows.Add(*excess_step, double(excess_step_max_ns));
    excess_step.reset();
  }
  BucketCounts step_excess_histogram{kBuckets};  // per-step excess (never negative)
  WindowSeries windows;                          // per-step excess, by window of steps
  int64_t max_step_excess_ns = 0;

  // A quantile over steps of the step's largest excess (from the histogram, ~6%; never above
  // the largest step excess seen).
  double StepExcessQuantile(double q) const {
    if (excess_steps == 0) return 0;
    const int64_t want = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(q * excess_steps)));
    return Quantile(step_excess_histogram, want, max_step_excess_ns);
  }
  double MedianStepExcess() const { return StepExcessQuantile(0.5); }

  // The mean over steps of the step's largest excess.
  double MeanExcess() const { return excess_steps ? double(step_excess_sum_ns) / excess_steps : 0; }
  // Enough evidence to be judged (after CloseStepExcess).
  bool Judged() const {
    return present && collectives >= kMinCollectives && excess_steps >= kMinSteps;
  }
  double MeanLateness() const { return collectives ? double(lateness_ns) / collectives : 0; }
  double LastShare() const { return collectives ? double(last) / collectives : 0; }
  double MeanPhase(std::string_view phase) const {
    const int64_t* ns = FindPhaseNs(phase);
    return ns == nullptr || steps == 0 ? 0 : double(*ns) / steps;
  }
  // Device time per phase (`step` records' `dev`, of an earlier step each), over the steps
  // that carry it: on CUDA what the phases' kernels took, where host times say when they
  // were queued.
  PhaseSums device_phase_ns;
  int64_t device_steps = 0;
  double MeanDevicePhase(std::string_view phase) const {
    return device_steps ? MeanOf(device_phase_ns, phase, device_steps) : -1;
  }

  double P95() const {
    if (histogram.empty() || collectives == 0) return 0;
    const int64_t want = (collectives * 95 + 99) / 100;
    return Quantile(histogram, want, max_lateness_ns);
  }

  // The middle of the bucket where the count reaches `want` (>= 1), never above `max_ns`.
  static double Quantile(const BucketCounts& counts, int64_t want, int64_t max_ns) {
    double at = double(max_ns);
    int64_t seen = 0;
    counts.ForEach([&](int bucket, uint32_t n) {
      seen += n;
      if (seen < want) return false;
      at = std::min(BucketMiddle(bucket), double(max_ns));
      return true;
    });
    return at;
  }

  void Held(int64_t step, int64_t ns) {
    if (held_step != step) {
      held_ns += held_step_ns;
      held_step = step;
      held_step_ns = 0;
    }
    held_step_ns = std::max(held_step_ns, ns);
  }
  void CloseHeld() {
    held_ns += held_step_ns;
    held_step_ns = 0;
    held_step.reset();
  }
};

}  // namespace dsdiag::analyzers::straggler
