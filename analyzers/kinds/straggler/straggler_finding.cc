#include "analyzers/kinds/straggler/straggler_finding.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "analyzers/framework/finding_kinds.h"
#include "trace/record_types.h"

namespace dsdiag::analyzers::straggler {
namespace {

using trace::JsonValue;

constexpr int64_t kMinExcessNs = 1 * kMs;
constexpr double kStepShare = 0.10;      // of the median step time
constexpr double kNoiseFactor = 5.0;     // times the ranks' spread of mean excess
constexpr double kRareFactor = 2.0;      // times the threshold, for ranks late in few steps
constexpr double kMadToSigma = 1.4826;   // median absolute deviation -> standard deviation
constexpr double kErrorLostShare = 0.5;  // of the median rank's step time
constexpr double kPhaseExplains = 0.25;  // of the mean excess, for a phase to be named
constexpr size_t kMaxRows = 8;           // stragglers detailed in the evidence table

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

struct Verdict {
  int rank = 0;
  double mean_excess = 0;
};

// The rank whose mean excess is the (lower) median of all ranks': the typical rank.
int MedianRank(const std::vector<RankStats>& ranks) {
  std::vector<std::pair<double, int>> v;
  for (size_t r = 0; r < ranks.size(); ++r)
    if (ranks[r].Judged()) v.emplace_back(ranks[r].MeanExcess(), static_cast<int>(r));
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2].second;
}

// Per phase, the median over ranks of the mean time per step.
std::map<std::string, double> MedianPhases(const std::vector<RankStats>& ranks) {
  std::map<std::string, std::vector<double>> values;
  for (const RankStats& s : ranks) {
    if (!s.present || s.steps == 0) continue;
    for (const auto& [phase, ns] : s.phase_ns) values[phase];
  }
  for (auto& [phase, v] : values)
    for (const RankStats& s : ranks)
      if (s.present && s.steps) v.push_back(s.MeanPhase(phase));
  std::map<std::string, double> medians;
  for (const auto& [phase, v] : values) medians[phase] = Median(v);
  return medians;
}

struct Explanation {
  std::string phase;  // empty: none
  double rank_ns = 0;
  double median_ns = 0;
};

Explanation Explain(const RankStats& s, const std::map<std::string, double>& medians,
                    double mean_excess) {
  Explanation best;
  double best_diff = 0;
  for (const auto& [phase, median] : medians) {
    if (phase == trace::phase::kSync) continue;
    const double diff = s.MeanPhase(phase) - median;
    if (diff > best_diff) {
      best_diff = diff;
      best = {phase, s.MeanPhase(phase), median};
    }
  }
  if (best_diff < kPhaseExplains * mean_excess) return {};
  return best;
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
              const std::map<std::string, double>& medians, const Explanation* why) {
  const RankStats& s = ranks[rank];
  JsonValue row = JsonValue::Object();
  row.Set("rank", rank);
  row.Set("role", role);
  row.Set("collectives", s.collectives);
  row.Set("last_share", std::round(s.LastShare() * 1000) / 1000);
  row.Set("mean_lateness_ms", Ms(s.MeanLateness()));
  row.Set("p95_lateness_ms", Ms(s.P95()));
  row.Set("max_lateness_ms", Ms(double(s.max_lateness_ns)));
  row.Set("mean_excess_ms", Ms(s.MeanExcess()));
  row.Set("held_others_ms", Ms(double(s.held_ns)));
  row.Set("clock_offset_ms", Ms(double(s.clock.offset_ns())));
  JsonValue phases = JsonValue::Object();
  for (const auto& [phase, median] : medians) phases.Set(phase, Ms(s.MeanPhase(phase)));
  row.Set("phase_ms", std::move(phases));
  if (why) {
    row.Set("excess_phase", why->phase.empty() ? JsonValue() : JsonValue(why->phase));
    if (!why->phase.empty()) {
      row.Set("excess_phase_ms", Ms(why->rank_ns));
      row.Set("median_phase_ms", Ms(why->median_ns));
    }
  }
  return row;
}

Finding MakeFinding(const std::vector<RankStats>& ranks, const std::vector<Verdict>& stragglers,
                    double threshold, double noise, double median_step, double median_total) {
  const std::map<std::string, double> medians = MedianPhases(ranks);
  const int median_rank = MedianRank(ranks);
  Finding f;
  f.kind = std::string(kind::kStraggler);
  int64_t held = 0;
  JsonValue rows = JsonValue::Array();
  std::vector<Explanation> why;
  for (size_t i = 0; i < stragglers.size(); ++i) {
    const int rank = stragglers[i].rank;
    const RankStats& s = ranks[rank];
    f.ranks.push_back(rank);
    held += s.held_ns;
    why.push_back(Explain(s, medians, stragglers[i].mean_excess));
    if (auto step = FirstStep(s, stragglers[i].mean_excess))
      f.step = f.step ? std::min(*f.step, *step) : *step;
    if (i < kMaxRows) rows.Push(Row(ranks, rank, "straggler", medians, &why.back()));
  }
  NormalizeRanks(&f.ranks);
  rows.Push(Row(ranks, median_rank, "median", medians, nullptr));
  const double lost_share = median_total > 0 ? held / median_total : 0;
  f.severity = lost_share >= kErrorLostShare ? Severity::kError : Severity::kWarning;

  const int worst = stragglers.front().rank;
  const RankStats& w = ranks[worst];
  std::string who = "rank " + std::to_string(worst);
  if (stragglers.size() > 1) {
    who = std::to_string(stragglers.size()) + " ranks (" + FormatRankRanges(f.ranks) +
          ") hold up the collectives; the worst, " + who + ",";
  }
  f.summary = who + " is the last to enter " + PercentText(w.LastShare()) + " of collectives, " +
              MsText(w.MeanLateness()) + " after the earliest rank on average (p95 " +
              MsText(w.P95()) + ")";
  const Explanation& e = why.front();
  if (!e.phase.empty()) {
    f.summary += "; its " + PhaseLabel(e.phase) + " takes " + MsText(e.rank_ns) + " per step vs " +
                 MsText(e.median_ns) + " on the median rank";
  }
  f.summary += "; the job waited " + PercentText(lost_share) + " of its step time for " +
               (stragglers.size() > 1 ? "them" : "it");

  JsonValue& ev = f.evidence;
  ev.Set("ranks", std::move(rows));
  ev.Set("stragglers", static_cast<int64_t>(stragglers.size()));
  ev.Set("median_rank", median_rank);
  ev.Set("threshold_ms", Ms(threshold));
  ev.Set("noise_ms", Ms(noise));
  ev.Set("median_step_ms", Ms(median_step));
  ev.Set("held_ms", Ms(double(held)));
  ev.Set("lost_share", std::round(lost_share * 1000) / 1000);
  ev.Set("excess_phase", e.phase.empty() ? JsonValue() : JsonValue(e.phase));
  f.hint = (stragglers.size() > 1 ? "The worst straggler: " : "") + PhaseHint(e.phase) +
           " Every other rank waits for it at each collective (their `sync` phase grows "
           "by as much).";
  return f;
}

}  // namespace

std::optional<Finding> JudgeStragglers(const std::vector<RankStats>& ranks) {
  std::vector<double> step_means, step_totals, excesses;
  for (const RankStats& s : ranks) {
    if (!s.present) continue;
    if (s.steps) {
      step_means.push_back(double(s.step_ns) / s.steps);
      step_totals.push_back(double(s.step_ns));
    }
    if (s.Judged()) excesses.push_back(s.MeanExcess());
  }
  if (excesses.size() < 2) return std::nullopt;
  const double median_step = Median(step_means);
  const double threshold = std::max(double(kMinExcessNs), kStepShare * median_step);
  const double center = Median(excesses);
  std::vector<double> deviations;
  for (double x : excesses) deviations.push_back(std::abs(x - center));
  const double noise = kMadToSigma * Median(deviations);
  // Two ranks are their own median: each is as far from it as the other.
  const bool outliers_only = excesses.size() >= 3;

  std::vector<Verdict> stragglers;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankStats& s = ranks[r];
    if (!s.Judged()) continue;
    const double excess = s.MeanExcess();
    // Late in most steps (a slow rank), or rarely but by so much that it costs twice the
    // threshold on average (checkpoint stalls, GC pauses); a few unlucky steps are noise.
    const bool costs = s.MedianStepExcess() > threshold || excess > kRareFactor * threshold;
    if (costs && excess > threshold && (!outliers_only || excess - center > kNoiseFactor * noise))
      stragglers.push_back({static_cast<int>(r), excess});
  }
  if (stragglers.empty()) return std::nullopt;
  std::stable_sort(stragglers.begin(), stragglers.end(), [](const Verdict& a, const Verdict& b) {
    return a.mean_excess > b.mean_excess;
  });
  return MakeFinding(ranks, stragglers, threshold, noise, median_step, Median(step_totals));
}

}  // namespace dsdiag::analyzers::straggler
