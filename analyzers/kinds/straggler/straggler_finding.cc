#include "analyzers/kinds/straggler/straggler_finding.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "analyzers/framework/finding_kinds.h"
#include "trace/record_types.h"
#include "trace/records/phase_record.h"

namespace dsdiag::analyzers::straggler {
namespace {

using trace::JsonValue;

constexpr int64_t kMinExcessNs = 1 * kMs;
constexpr double kStepShare = 0.10;      // of the median step time
constexpr double kNoiseFactor = 5.0;     // times the on-time ranks' spread of mean excess
constexpr size_t kMinForNoise = 3;       // on-time ranks needed to measure their spread
constexpr double kRareFactor = 2.0;      // times the threshold, for ranks late in few steps
constexpr double kMadToSigma = 1.4826;   // median absolute deviation -> standard deviation
constexpr double kErrorLostShare = 0.5;  // of the reference rank's step time
constexpr double kPhaseExplains = 0.25;  // of the mean excess, for a phase to be named
constexpr size_t kMaxRows = 8;           // stragglers detailed in the evidence table
// The persistence test's family-wise level, over the ranks whose lateness costs enough to be
// tested (Bonferroni).
constexpr double kAlpha = 0.01;

double Ms(double ns) { return std::round(ns / 1e3) / 1e3; }

std::string MsText(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ns >= 100 * kMs ? "%.0f ms" : "%.1f ms", ns / 1e6);
  return buf;
}

std::string PercentText(double share) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", share * 100);
  return buf;
}

std::string PhaseLabel(const std::string& phase) {
  if (phase == trace::phase::kData) return "data wait";
  if (phase == trace::phase::kCheckpoint) return "checkpoint I/O";
  return phase;
}

std::string PhaseHint(const std::string& phase) {
  if (phase == trace::phase::kData)
    return "It waits on its data loader: give it more workers or faster storage, and check that "
           "its shard is not larger or slower to decode than the others' "
           "(`dsdiag loader-sweep`).";
  if (phase == trace::phase::kCheckpoint)
    return "It writes checkpoints while the others go on to the next collective: save "
           "asynchronously, or from every rank's shard in parallel, or less often.";
  if (phase == trace::phase::kForward || phase == trace::phase::kBackward ||
      phase == trace::phase::kOptimizer)
    return "It computes slower: a slower, throttled or shared device or CPU (other processes "
           "on its host, thermal or power limits, fewer CPU threads), or more work (longer "
           "sequences, MoE routing imbalance). Compare its host's load and device clocks with "
           "the others'.";
  return "No phase of its step explains it: look at what the rank does between steps "
         "(logging, evaluation, host-side work) and at its host's load.";
}

std::string StarvedHint() {
  return "Its thread was runnable but waited for a core: other processes on its host (another "
         "job, its own loader workers, more intra-op threads than cores) took them. Give each "
         "rank its cores (pin ranks, OMP_NUM_THREADS, fewer loader workers) or keep other jobs "
         "off the host; the rank's own work is not slower.";
}

struct Verdict {
  int rank = 0;
  double mean_excess = 0;
  Persistence persistence;
  bool persistent = false;  // late in significantly more windows than not
};

// What the verdict compares every rank with.
struct Judgement {
  std::vector<Verdict> stragglers;  // worst first
  int reference_rank = 0;  // a real on-time rank: its phases are what the stragglers' differ from
  double threshold = 0;
  double noise = 0;
  double median_step = 0;
  double alpha = 0;          // the level each rank's persistence test is held to
  int64_t window_steps = 1;  // steps per window of the persistence test
};

// What an on-time rank looks like: the lower half of the judged ranks by mean per-step
// lateness (the ones that are not late) — their typical mean and median lateness (they are
// late too, a little, behind the earliest tenth: jitter, a shared core) and 1.4826 x the
// median absolute deviation of their means.
struct OnTime {
  double mean = 0;    // median of their mean per-step lateness
  double median = 0;  // median of their median per-step lateness
  double noise = 0;
  size_t ranks = 0;
};

OnTime OnTimeRanks(const std::vector<RankStats>& ranks) {
  std::vector<const RankStats*> judged;
  for (const RankStats& s : ranks)
    if (s.Judged()) judged.push_back(&s);
  std::sort(judged.begin(), judged.end(), [](const RankStats* a, const RankStats* b) {
    return a->MeanExcess() < b->MeanExcess();
  });
  judged.resize((judged.size() + 1) / 2);
  std::vector<double> means, medians, deviations;
  for (const RankStats* s : judged) {
    means.push_back(s->MeanExcess());
    medians.push_back(s->StepExcessQuantile(0.5));
  }
  OnTime t;
  t.ranks = judged.size();
  t.mean = Median(means);
  t.median = Median(medians);
  for (double x : means) deviations.push_back(std::abs(x - t.mean));
  t.noise = kMadToSigma * Median(deviations);
  return t;
}

std::optional<Judgement> Judge(const std::vector<RankStats>& ranks) {
  Judgement j;
  std::vector<double> step_means;
  size_t judged = 0;
  for (const RankStats& s : ranks) {
    if (!s.present) continue;
    if (s.steps) step_means.push_back(double(s.step_ns) / s.steps);
    judged += s.Judged() ? 1 : 0;
  }
  if (judged < 2) return std::nullopt;
  j.median_step = Median(step_means);
  j.threshold = std::max(double(kMinExcessNs), kStepShare * j.median_step);
  const OnTime on_time = OnTimeRanks(ranks);
  j.noise = on_time.noise;
  // Too few on-time ranks to tell jitter from a pattern (two to five ranks): the cost tests,
  // beyond what the on-time ranks see themselves, and the persistence test decide alone.
  const bool noise_test = on_time.ranks >= kMinForNoise;
  std::vector<const WindowSeries*> series(ranks.size(), nullptr);
  for (size_t r = 0; r < ranks.size(); ++r)
    if (ranks[r].Judged()) series[r] = &ranks[r].windows;
  const std::vector<Persistence> persistence = TestPersistence(series);
  for (const WindowSeries* w : series)
    if (w) j.window_steps = std::max(j.window_steps, w->len());
  // The ranks late by enough, and how: in most steps, or rarely but by a lot.
  std::vector<std::pair<size_t, bool>> costly;  // (rank, rare)
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankStats& s = ranks[r];
    if (!s.Judged()) continue;
    const double excess = s.MeanExcess() - on_time.mean;
    // Late in most steps (a slow rank), or rarely but by so much that it costs twice the
    // threshold on average (checkpoint stalls, GC pauses); a few unlucky steps are noise.
    const bool typical = s.MedianStepExcess() - on_time.median > j.threshold;
    const bool rare = excess > kRareFactor * j.threshold;
    const bool outlier = !noise_test || excess > kNoiseFactor * j.noise;
    if ((typical || rare) && excess > j.threshold && outlier) costly.emplace_back(r, rare);
  }
  j.alpha = costly.empty() ? kAlpha : kAlpha / double(costly.size());
  for (const auto& [r, rare] : costly) {
    // Window after window, or only in some (a busy host slows one rank now, another
    // later): only the rare but costly stall is named without it, and at info.
    const bool persistent = persistence[r].p <= j.alpha;
    if (persistent || rare)
      j.stragglers.push_back(
          {static_cast<int>(r), ranks[r].MeanExcess(), persistence[r], persistent});
  }
  // Every rank late is nobody late: the on-time arrival is one of them.
  if (j.stragglers.empty() || j.stragglers.size() >= judged) return std::nullopt;
  std::stable_sort(
      j.stragglers.begin(), j.stragglers.end(),
      [](const Verdict& a, const Verdict& b) { return a.mean_excess > b.mean_excess; });
  // The reference: the median on-time rank by mean lateness (the lower median: a real rank).
  std::vector<std::pair<double, int>> others;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (!ranks[r].Judged()) continue;
    const bool late = std::any_of(j.stragglers.begin(), j.stragglers.end(),
                                  [&](const Verdict& v) { return v.rank == static_cast<int>(r); });
    if (!late) others.emplace_back(ranks[r].MeanExcess(), static_cast<int>(r));
  }
  std::sort(others.begin(), others.end());
  j.reference_rank = others[(others.size() - 1) / 2].second;
  return j;
}

// Why a phase takes longer than on the reference rank: its extra wall time split into extra
// time on a CPU, extra time waiting for one, and the rest (blocked).
struct Cause {
  std::string name;  // "more-compute", "cpu-starved", "blocked"; empty: not measured
  double cpu_ns = 0, reference_cpu_ns = 0;    // per step, on a CPU
  double runq_ns = 0, reference_runq_ns = 0;  // per step, waiting for a CPU
  double blocked_ns = 0;                      // extra wall time neither explains
  double load = -1;                           // the straggler's host load per CPU
};

struct Explanation {
  std::string phase;           // empty: none
  const char* clock = "host";  // whose times chose it: "host", or "device" (`dev`)
  double rank_ns = 0;
  double reference_ns = 0;
  Cause cause;
};

// Names the largest of the three parts of `extra_ns` (the time to explain). On a busy host
// every CPU-ns of work also waits in the run queue, at the rate the reference rank waits
// (its run-queue time per CPU-ns): extra work costs its CPU time and that much waiting
// ("more-compute"); waiting beyond it is the host's ("cpu-starved"); the rest is time
// neither running nor waiting for a core ("blocked": I/O, a lock, a sleep). Over a phase
// that rest is measured (the phase's wall time less its CPU and run-queue time); over the
// whole step (`step_typical_ns` given) it includes the time between phases, which no figure
// covers: there, a rank that waited for a core at least as long as it is late is taken to have lost
// the race for one there too (on a contended host, which of two ranks loses it is the
// scheduler's choice), not to be blocked.
//
// Where the cores are contended — the reference rank itself waited in the run queue at least
// as long as it ran, or the host had kContendedLoad runnable threads per CPU — the same work
// also takes more CPU time on a core shared with the load (a busy SMT sibling, caches the
// load evicts): CPU time up to kContendedCpuSlack over the reference's counts as the host's
// there, not as more work. (A clean DDP job beside CPU hogs at 4x gave one rank 16% more CPU
// a step than its peer, and was called a straggler that computes more; so did one of two
// clean jobs sharing 2 cores, host load 2.4, its ranks waiting for a core 0.4 ns per ns run.)
// On a quiet host every extra CPU-ns stays the rank's own.
constexpr double kContendedCpuSlack = 0.25;
constexpr double kContendedLoad = 2.0;

// There too the scheduler's figures lag: a thread's CPU and run-queue times are brought up to
// date at ticks and switches, so on a contended core a span's two can add up to more than
// its wall time (a clean job beside 2x CPU hogs: the on-time rank's forward 3.7 ms of wall
// for 3.0 ms on a CPU and 4.0 ms waiting for one). `accounting_error_ns` is that over-count,
// the larger of the two ranks'; a blocked remainder within it is the accounting's, and counts
// as the host's. (That job's late rank had 0.8 ms of its 1.4 ms extra forward left
// unexplained and was called blocked, a straggler warning.) This function says how much:
double OverCount(double cpu, double runq, double wall) { return std::max(0.0, cpu + runq - wall); }

// `step_typical_ns`: over the whole step, how late the rank is in a typical step (the
// median; none over a phase). The race for a core is lost when the rank waited for one as
// long as that, even where a few steps' stalls (a contended host's) raise its mean lateness
// above its wait. (A clean 2-rank DDP tutorial job beside 3 CPU hogs, torch 1.13, one run in
// 8: its late rank waited 2.9 ms a step for a core, was late 1.7 ms in a typical step but
// 3.7 ms on average, and the 2.0 ms left over was called blocked: a straggler error. A sleep, a
// lock or I/O that makes a rank late is there in its typical step too.)
Cause Split(double cpu, double ref_cpu, double runq, double ref_runq, double extra_ns, double load,
            double accounting_error_ns, std::optional<double> step_typical_ns) {
  Cause c;
  c.cpu_ns = cpu;
  c.reference_cpu_ns = ref_cpu;
  c.runq_ns = std::max(0.0, runq);
  c.reference_runq_ns = std::max(0.0, ref_runq);
  c.load = load;
  const double rate = ref_cpu > 0 ? c.reference_runq_ns / ref_cpu : 0;
  const bool contended = rate >= 1.0 || load >= kContendedLoad;
  const double extra_cpu = std::max(0.0, cpu - ref_cpu);
  const double slowed = contended ? std::min(extra_cpu, kContendedCpuSlack * ref_cpu) : 0.0;
  const double more_cpu = extra_cpu - slowed;
  const double compute = more_cpu * (1 + rate);
  const double starved =
      std::max(0.0, c.runq_ns - c.reference_runq_ns - more_cpu * rate) + slowed * (1 + rate);
  double starved_or_lagging = starved;
  c.blocked_ns = std::max(0.0, extra_ns - compute - starved);
  if (contended && c.blocked_ns <= accounting_error_ns) {
    starved_or_lagging += c.blocked_ns;
    c.blocked_ns = 0;
  }
  if (compute >= 0.5 * extra_ns || (compute >= starved_or_lagging && compute >= c.blocked_ns))
    c.name = "more-compute";  // its own work explains most of it
  else if (starved_or_lagging >= c.blocked_ns ||
           (step_typical_ns && c.runq_ns >= std::min(extra_ns, *step_typical_ns)))
    c.name = "cpu-starved";
  else
    c.name = "blocked";
  return c;
}

// Why the phase takes longer than on the reference rank (its extra wall time).
Cause PhaseCause(const RankStats& s, const RankStats& reference, const std::string& phase,
                 double extra_wall_ns) {
  const double cpu = s.MeanCpu(phase), ref_cpu = reference.MeanCpu(phase);
  if (cpu < 0 || ref_cpu < 0) return {};  // older traces: no scheduler figures
  const double runq = s.MeanRunq(phase), ref_runq = reference.MeanRunq(phase);
  const double error = std::max(OverCount(cpu, runq, s.MeanPhase(phase)),
                                OverCount(ref_cpu, ref_runq, reference.MeanPhase(phase)));
  return Split(cpu, ref_cpu, runq, ref_runq, extra_wall_ns, s.MeanLoad(), error,
               /*step_typical_ns=*/std::nullopt);
}

// Why the rank is late when no one phase explains it: over its whole step, the extra CPU and
// run-queue time against the reference rank's, and the rest of its mean lateness. (Where a
// Python job's backward holds the wait for the gradient allreduce, the on-time rank's
// backward is as long as the late one's: the phases' wall times cannot tell them apart, the
// scheduler's figures can.)
Cause StepCause(const RankStats& s, const RankStats& reference, double mean_excess) {
  const double cpu = s.MeanStepCpu(), ref_cpu = reference.MeanStepCpu();
  if (cpu < 0 || ref_cpu < 0) return {};
  const double runq = s.MeanStepRunq(), ref_runq = reference.MeanStepRunq();
  const auto wall = [](const RankStats& r) { return r.steps ? double(r.step_ns) / r.steps : 0; };
  const double error =
      std::max(OverCount(cpu, runq, wall(s)), OverCount(ref_cpu, ref_runq, wall(reference)));
  return Split(cpu, ref_cpu, runq, ref_runq, mean_excess, s.MeanLoad(), error,
               std::max(0.0, s.MedianStepExcess()));
}

// The phase (sync aside, where the others' waiting shows) whose mean time per step exceeds
// the reference rank's the most, when it explains a good share of the excess: by device time
// where both ranks have it, else by host time.
Explanation Explain(const RankStats& s, const RankStats& reference, double mean_excess) {
  const bool device = s.device_steps > 0 && reference.device_steps > 0;
  const auto mean = [device](const RankStats& r, std::string_view phase) {
    return device ? r.MeanDevicePhase(phase) : r.MeanPhase(phase);
  };
  Explanation best;
  double best_diff = 0;
  for (const auto& [phase, ns] : device ? s.device_phase_ns : s.phase_ns) {
    if (phase == trace::phase::kSync) continue;
    const double diff = mean(s, phase.view()) - mean(reference, phase.view());
    if (diff > best_diff) {
      best_diff = diff;
      best = {std::string(phase.view()), device ? "device" : "host", mean(s, phase.view()),
              mean(reference, phase.view())};
    }
  }
  if (best_diff < kPhaseExplains * mean_excess) {
    Explanation step_only;
    step_only.cause = StepCause(s, reference, mean_excess);
    return step_only;
  }
  // The cause is the host thread's: by device time, only where the host's phase took most of
  // the extra too (else the device, not the thread, was slower: no cause is claimed).
  const double host_diff = s.MeanPhase(best.phase) - reference.MeanPhase(best.phase);
  if (!device || host_diff >= 0.5 * best_diff)
    best.cause = PhaseCause(s, reference, best.phase, device ? host_diff : best_diff);
  return best;
}

std::string LoadText(double load) {
  if (load < 0) return "";
  char buf[48];
  std::snprintf(buf, sizeof buf, "; host load %.2f per CPU", load);
  return buf;
}

// What the cause says, after the phase's times ("it", the rank) or of the whole step.
std::string CauseText(const Cause& c, int reference_rank) {
  const std::string ref = " on rank " + std::to_string(reference_rank);
  if (c.name == "cpu-starved")
    return "it was starved of CPU, waiting " + MsText(c.runq_ns) + " per step for a core (vs " +
           MsText(c.reference_runq_ns) + ref + LoadText(c.load) +
           ") — contention on a shared host, not a slower rank";
  if (c.name == "more-compute")
    return "it ran " + MsText(c.cpu_ns) + " per step on a CPU (vs " + MsText(c.reference_cpu_ns) +
           ref + "): it computes more, or slower";
  if (c.name == "blocked")
    return "it was blocked (neither running nor waiting for a core: I/O, a lock, a sleep) " +
           MsText(c.blocked_ns) + " per step longer than" + ref;
  return "";
}

std::optional<int64_t> FirstStep(const RankStats& s, double mean_excess) {
  std::optional<int64_t> step;
  for (size_t l = 0; l < kLevelsNs.size(); ++l) {
    if (kLevelsNs[l] > mean_excess / 2 && l > 0) break;
    if (s.first_step_past[l]) step = s.first_step_past[l];
  }
  return step;
}

JsonValue Row(const std::vector<RankStats>& ranks, int rank, const std::string& role,
              const RankStats& reference, const Explanation* why, const Verdict* verdict) {
  const RankStats& s = ranks[rank];
  JsonValue row = JsonValue::Object();
  row.Set("rank", rank);
  row.Set("role", role);
  row.Set("collectives", s.collectives);
  row.Set("steps", s.excess_steps);
  row.Set("last_share", std::round(s.LastShare() * 1000) / 1000);
  // Per step, the step's largest lateness behind the on-time ranks: what the rule judges.
  row.Set("step_lateness_median_ms", Ms(s.StepExcessQuantile(0.5)));
  row.Set("step_lateness_mean_ms", Ms(s.MeanExcess()));
  row.Set("step_lateness_p95_ms", Ms(s.StepExcessQuantile(0.95)));
  // Per collective, behind the earliest rank.
  row.Set("mean_lateness_ms", Ms(s.MeanLateness()));
  row.Set("p95_lateness_ms", Ms(s.P95()));
  row.Set("max_lateness_ms", Ms(double(s.max_lateness_ns)));
  row.Set("held_others_ms", Ms(double(s.held_ns)));
  if (!s.late_at.empty()) row.Set("late_at", s.late_at);
  row.Set("clock_offset_ms", Ms(double(s.clock.offset_ns())));
  JsonValue phases = JsonValue::Object();
  for (const auto& [phase, ns] : s.phase_ns)
    phases.Set(phase.view(), Ms(s.MeanPhase(phase.view())));
  for (const auto& [phase, ns] : reference.phase_ns)
    if (!phases.Find(phase.view())) phases.Set(phase.view(), Ms(s.MeanPhase(phase.view())));
  row.Set("phase_ms", std::move(phases));
  if (s.MeanStepCpu() >= 0) row.Set("step_cpu_ms", Ms(s.MeanStepCpu()));
  if (s.MeanStepRunq() >= 0) row.Set("step_runq_ms", Ms(s.MeanStepRunq()));
  if (s.MeanLoad() >= 0) row.Set("host_load", std::round(s.MeanLoad() * 100) / 100);
  if (verdict) {
    // The persistence test: windows of steps it was later than the judged ranks' median in.
    row.Set("windows", verdict->persistence.windows);
    row.Set("late_windows", verdict->persistence.late);
    row.Set("persistence_p", std::round(verdict->persistence.p * 1e6) / 1e6);
    row.Set("persistent", verdict->persistent);
  }
  if (why) {
    row.Set("excess_phase", why->phase.empty() ? JsonValue() : JsonValue(why->phase));
    if (!why->phase.empty()) {
      // Said where device time chose it; host time is what every older run's finding used.
      if (std::string_view(why->clock) != "host") row.Set("phase_clock", why->clock);
      row.Set("excess_phase_ms", Ms(why->rank_ns));
      row.Set("reference_phase_ms", Ms(why->reference_ns));
    }
    const Cause& c = why->cause;
    if (!c.name.empty()) {
      // Over the excess phase, or (no phase explains it) the whole step; per step.
      row.Set("cause", c.name);
      row.Set("cause_of", why->phase.empty() ? "step" : "phase");
      row.Set("cause_cpu_ms", Ms(c.cpu_ns));
      row.Set("cause_reference_cpu_ms", Ms(c.reference_cpu_ns));
      row.Set("cause_runq_ms", Ms(c.runq_ns));
      row.Set("cause_reference_runq_ms", Ms(c.reference_runq_ns));
      row.Set("cause_blocked_ms", Ms(c.blocked_ns));
    }
  }
  return row;
}

std::string Summary(const std::vector<RankStats>& ranks, const Judgement& j,
                    const std::vector<int>& named, const Explanation& e, double lost_share) {
  const int worst = j.stragglers.front().rank;
  const RankStats& w = ranks[worst];
  std::string who = "rank " + std::to_string(worst);
  if (j.stragglers.size() > 1) {
    who = std::to_string(j.stragglers.size()) + " ranks (" + FormatRankRanges(named) +
          ") hold up the collectives; the worst, " + who + ",";
  }
  std::string summary = who + " enters the step's collectives " +
                        MsText(w.StepExcessQuantile(0.5)) + " after the on-time ranks in most " +
                        "steps (per-step lateness: median " + MsText(w.StepExcessQuantile(0.5)) +
                        ", mean " + MsText(w.MeanExcess()) + ", p95 " +
                        MsText(w.StepExcessQuantile(0.95)) + "), the last to enter " +
                        PercentText(w.LastShare()) + " of collectives";
  if (!w.late_at.empty()) summary += ", most behind at the collective of " + w.late_at;
  if (!e.phase.empty()) {
    summary += "; its " + PhaseLabel(e.phase) + " takes " + MsText(e.rank_ns) + " per step vs " +
               MsText(e.reference_ns) + " on rank " + std::to_string(j.reference_rank);
    if (!e.cause.name.empty()) summary += ": " + CauseText(e.cause, j.reference_rank);
  } else if (!e.cause.name.empty()) {
    summary +=
        "; no one phase explains it, but over its step " + CauseText(e.cause, j.reference_rank);
  }
  summary += "; the job waited " + PercentText(lost_share) + " of its step time for " +
             (j.stragglers.size() > 1 ? "them" : "it");
  const Persistence& p = j.stragglers.front().persistence;
  if (!j.stragglers.front().persistent)
    summary += "; late in " + std::to_string(p.late) + " of " + std::to_string(p.windows) +
               " windows of steps only: a stall, not a persistently slower rank";
  return summary;
}

Finding MakeFinding(const std::vector<RankStats>& ranks, const Judgement& j) {
  const RankStats& reference = ranks[j.reference_rank];
  Finding f;
  f.kind = std::string(kind::kStraggler);
  int64_t held = 0;
  JsonValue rows = JsonValue::Array();
  std::vector<Explanation> why;
  for (size_t i = 0; i < j.stragglers.size(); ++i) {
    const int rank = j.stragglers[i].rank;
    const RankStats& s = ranks[rank];
    f.ranks.push_back(rank);
    held += s.held_ns;
    why.push_back(Explain(s, reference, j.stragglers[i].mean_excess));
    if (auto step = FirstStep(s, j.stragglers[i].mean_excess))
      f.step = f.step ? std::min(*f.step, *step) : *step;
    if (i < kMaxRows)
      rows.Push(Row(ranks, rank, "straggler", reference, &why.back(), &j.stragglers[i]));
  }
  NormalizeRanks(&f.ranks);
  rows.Push(Row(ranks, j.reference_rank, "reference", reference, nullptr, nullptr));
  const double reference_total = double(reference.step_ns);
  const double lost_share = reference_total > 0 ? held / reference_total : 0;
  const Explanation& e = why.front();
  // A warning needs a rank slower for a reason of its own, window after window: a rank
  // starved of CPU is the host's contention, a rank late in some windows only is a stall.
  bool own = false;
  for (size_t i = 0; i < j.stragglers.size(); ++i)
    own |= j.stragglers[i].persistent && why[i].cause.name != "cpu-starved";
  if (!own)
    f.severity = Severity::kInfo;
  else
    f.severity = lost_share >= kErrorLostShare ? Severity::kError : Severity::kWarning;
  f.summary = Summary(ranks, j, f.ranks, e, lost_share);

  JsonValue& ev = f.evidence;
  ev.Set("ranks", std::move(rows));
  ev.Set("stragglers", static_cast<int64_t>(j.stragglers.size()));
  ev.Set("reference_rank", j.reference_rank);
  ev.Set("threshold_ms", Ms(j.threshold));
  ev.Set("noise_ms", Ms(j.noise));
  ev.Set("window_steps", j.window_steps);
  ev.Set("persistence_alpha", std::round(j.alpha * 1e6) / 1e6);
  ev.Set("median_step_ms", Ms(j.median_step));
  ev.Set("held_ms", Ms(double(held)));
  ev.Set("lost_share", std::round(lost_share * 1000) / 1000);
  ev.Set("excess_phase", e.phase.empty() ? JsonValue() : JsonValue(e.phase));
  ev.Set("cause", e.cause.name.empty() ? JsonValue() : JsonValue(e.cause.name));
  // j.stragglers is worst first, as the rows.
  f.hint = (j.stragglers.size() > 1
                ? "The worst straggler is rank " + std::to_string(j.stragglers.front().rank) + ". "
                : std::string()) +
           (e.cause.name == "cpu-starved" ? StarvedHint() : PhaseHint(e.phase)) +
           " Every other rank waits for it at each collective (their `sync` phase grows "
           "by as much).";
  return f;
}

}  // namespace

std::optional<Finding> JudgeStragglers(const std::vector<RankStats>& ranks) {
  const std::optional<Judgement> j = Judge(ranks);
  if (!j) return std::nullopt;
  return MakeFinding(ranks, *j);
}

}  // namespace dsdiag::analyzers::straggler
