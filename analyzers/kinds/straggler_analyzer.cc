// straggler: ranks that reach the collectives late, again and again, so that everyone else
// waits for them — and the phase of their step that takes longer than on the other ranks.
//
// Input: `coll` records (ts = when the rank entered the collective), `step` records with
// their per-phase times, and `clock` records:
//   {"type":"coll","ts":7000,"step":3,"pg":0,"seq":17,"op":"allreduce",...,"dur":2100000}
//   {"type":"step","ts":5000,"step":3,"dur":41000000,...,"phases":{"data":1200000,...}}
// Enter times are mapped to rank 0's clock first (rank_clock.h), so that a skewed wall clock
// on some host does not make its rank look late or early. For each collective (pg, seq) that
// two or more ranks entered, a rank's *lateness* is its enter time minus the earliest rank's,
// and its *excess* is its enter time minus the median rank's. Collectives before a rank's
// first step_begin (the initial broadcast) are left out: launch skew is not straggling.
//
// A rank is a straggler when, over all the collectives it took part in (at least 3, in at
// least 5 steps), its
// mean excess per step (per step, its largest excess at any collective of the step: once the
// others have waited for it, the step's later collectives start together)
//   > max(1 ms, 10% of the median rank's mean step time)              (it costs something)
//   and either its median per-step excess passes that too (late in most steps), or its mean
//   passes twice that (rarely late, but by a lot)                     (it is no bad luck)
//   mean excess - median over ranks > 5 x their spread (1.4826 x the median absolute
//     deviation of the ranks' mean excess; not applied with 2 ranks)     (it is an outlier)
// The median, not the earliest rank, is the reference: with R ranks the spread of random
// jitter between the first and the last rank grows with R, its median does not; and the
// outlier test keeps the unluckiest of 1024 ranks in a short run from looking guilty. With
// two ranks the median is their midpoint, so a rank late by d has an excess of d/2. So a
// rank that is late every time, or rarely but by a lot (a checkpoint, a GC pause), is found;
// a minority of ranks can be stragglers, half or more cannot (they are the median).
// Per straggler the finding gives the share of collectives it entered last, mean / p95 / max
// lateness (p95 from a fixed log histogram, ~6% resolution, so memory stays bounded), the
// time the job stood still for it alone (per step, the most it arrived after every other rank
// at one collective), and the phase that explains it: the phase (`sync` aside, where the
// others' waiting shows) whose mean time exceeds the median rank's the most.
// Severity: warning; error when the job stood still for the stragglers at least half of the
// median rank's total step time (the job ran at most half speed because of them).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/collective_window.h"
#include "trace/rank_clock.h"
#include "trace/record_types.h"
#include "trace/trace_reader.h"

namespace dsdiag::analyzers {
namespace {

using trace::JsonValue;

constexpr int64_t kMs = 1000000;
constexpr int64_t kMinExcessNs = 1 * kMs;
constexpr double kStepShare = 0.10;     // of the median step time
constexpr double kNoiseFactor = 5.0;    // times the ranks' spread of mean excess
constexpr double kRareFactor = 2.0;     // times the threshold, for ranks late in few steps
constexpr double kMadToSigma = 1.4826;  // median absolute deviation -> standard deviation
constexpr int64_t kMinCollectives = 3;
// Steps with collectives a rank needs before it can be called a straggler: "again and
// again" needs repetitions, and in a 4-step run one preempted process on a shared host
// looks like a pattern.
constexpr int64_t kMinSteps = 5;
constexpr double kErrorLostShare = 0.5;  // of the median rank's step time
constexpr double kPhaseExplains = 0.25;  // of the mean excess, for a phase to be named
constexpr size_t kMaxRows = 8;           // stragglers detailed in the evidence table

// Lateness histogram: bucket 0 holds < 1 us, bucket i >= 1 holds
// [1 us * 10^((i-1)/20), 1 us * 10^(i/20)): 20 buckets a decade up to 1000 s, then overflow.
constexpr int kPerDecade = 20;
constexpr int kBuckets = 1 + 9 * kPerDecade + 1;
constexpr double kFirstEdgeNs = 1000.0;

int BucketOf(int64_t ns) {
  if (ns < static_cast<int64_t>(kFirstEdgeNs)) return 0;
  const int i = 1 + static_cast<int>(std::floor(kPerDecade * std::log10(ns / kFirstEdgeNs)));
  return std::min(i, kBuckets - 1);
}

// The middle of a bucket (geometric), ns.
double BucketMiddle(int i) {
  if (i == 0) return 0;
  return kFirstEdgeNs * std::pow(10.0, (i - 0.5) / kPerDecade);
}

// Steps at which a rank's excess first passed each level; the finding's step is the first
// step past the largest level below half its mean excess (a rank late by 30 ms from step 4
// on may have been 1 ms late by chance at step 0).
constexpr std::array<int64_t, 12> kLevelsNs = {1 * kMs,   2 * kMs,    5 * kMs,    10 * kMs,
                                               20 * kMs,  50 * kMs,   100 * kMs,  200 * kMs,
                                               500 * kMs, 1000 * kMs, 2000 * kMs, 5000 * kMs};

struct Arrival {
  int rank = 0;
  int64_t enter = 0;  // rank 0's clock, ns
};

struct RankStats {
  bool present = false;
  trace::RankClock clock;
  bool stepping = false;  // a step_begin was seen: collectives count from now on

  int64_t steps = 0;  // `step` records
  int64_t step_ns = 0;
  // Per phase name, in order of first sight: a handful, looked up 5 times per `step` record,
  // where a map compared strings at every level.
  std::vector<std::pair<std::string, int64_t>> phase_ns;
  const int64_t* FindPhaseNs(std::string_view name) const {
    for (const auto& [phase, ns] : phase_ns)
      if (phase == name) return &ns;
    return nullptr;
  }
  int64_t* PhaseNs(std::string_view name) {
    if (const int64_t* ns = FindPhaseNs(name)) return const_cast<int64_t*>(ns);
    return &phase_ns.emplace_back(std::string(name), 0).second;
  }

  int64_t collectives = 0;
  int64_t last = 0;  // collectives it entered last
  int64_t lateness_ns = 0;
  int64_t max_lateness_ns = 0;
  int64_t excess_ns = 0;
  std::vector<uint32_t> histogram;  // allocated on its first collective
  std::array<std::optional<int64_t>, kLevelsNs.size()> first_step_past;

  // Time the job stood still for this rank alone: per step, the most it arrived after all
  // the others at one collective (async buckets overlap, so per-collective sums overcount).
  int64_t held_ns = 0;
  std::optional<int64_t> held_step;
  int64_t held_step_ns = 0;

  // Per step, the largest excess at any of its collectives, summed over steps. A rank late
  // for the first gradient bucket is on time for the next ones (the others waited), so a
  // mean over collectives would dilute it by the number of buckets.
  int64_t step_excess_sum_ns = 0;
  int64_t excess_steps = 0;
  std::optional<int64_t> excess_step;
  int64_t excess_step_max_ns = 0;

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
    ++excess_steps;
    if (step_excess_histogram.empty()) step_excess_histogram.assign(kBuckets, 0);
    ++step_excess_histogram[BucketOf(excess_step_max_ns)];
    excess_step.reset();
  }
  std::vector<uint32_t> step_excess_histogram;  // per-step excess; negative ones in bucket 0

  // The median over steps of the step's largest excess (from the histogram, ~6%).
  double MedianStepExcess() const {
    if (excess_steps == 0) return 0;
    const int64_t want = (excess_steps + 1) / 2;
    int64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += step_excess_histogram[i];
      if (seen >= want) return BucketMiddle(i);
    }
    return 0;
  }

  // The mean over steps of the step's largest excess.
  double MeanExcess() const { return excess_steps ? double(step_excess_sum_ns) / excess_steps : 0; }
  // Enough evidence to be judged (after CloseStepExcess).
  bool Judged() const {
    return present && collectives >= kMinCollectives && excess_steps >= kMinSteps;
  }
  double MeanLateness() const { return collectives ? double(lateness_ns) / collectives : 0; }
  double LastShare() const { return collectives ? double(last) / collectives : 0; }
  double MeanPhase(const std::string& phase) const {
    const int64_t* ns = FindPhaseNs(phase);
    return ns == nullptr || steps == 0 ? 0 : double(*ns) / steps;
  }

  double P95() const {
    if (histogram.empty() || collectives == 0) return 0;
    const int64_t want = (collectives * 95 + 99) / 100;
    int64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += histogram[i];
      if (seen >= want) return std::min(BucketMiddle(i), double(max_lateness_ns));
    }
    return double(max_lateness_ns);
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

// Reorders *v. Selection, not a sort: called per collective with every rank's arrival.
double MedianInPlace(std::vector<double>* v) {
  if (v->empty()) return 0;
  const size_t n = v->size();
  const auto mid = v->begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(v->begin(), mid, v->end());
  if (n % 2) return *mid;
  // The other middle value is the largest of the lower half.
  return (*std::max_element(v->begin(), mid) + *mid) / 2;
}

double Median(std::vector<double> v) { return MedianInPlace(&v); }

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

class StragglerAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kStraggler; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kCollective, trace::rec::kStep, trace::rec::kStepBegin, trace::rec::kClock};
  }

  void Begin(const RunContext& run) override {
    int max_rank = -1;
    for (const RankInfo& r : run.ranks) max_rank = std::max(max_rank, r.rank);
    ranks_.resize(static_cast<size_t>(max_rank + 1));
    for (const RankInfo& r : run.ranks) {
      RankStats& s = ranks_[r.rank];
      s.present = true;
      s.clock = trace::RankClock(r.header.clock);
    }
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    RankStats& s = ranks_[rank.rank];
    const int type = r.type_id();
    if (type == trace::rec_id::kCollective) {
      if (!s.stepping) return;
      const auto pg = r.Int("pg");
      const auto seq = r.Int("seq");
      if (!pg || !seq) return;
      window_.Add({static_cast<int>(*pg), *seq}, r.step(), {rank.rank, s.clock.ToRank0(r.ts())});
    } else if (type == trace::rec_id::kStep) {
      AddStep(&s, r);
    } else if (type == trace::rec_id::kStepBegin) {
      s.stepping = true;
    } else if (type == trace::rec_id::kClock) {
      s.clock.Refine(r);
    }
  }

  void OnStepDone(int64_t step) override {
    window_.Flush(
        step, [this](const CollectiveKey&, const CollectiveSlot<Arrival>& slot) { Measure(slot); });
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    window_.FlushAll(
        [this](const CollectiveKey&, const CollectiveSlot<Arrival>& slot) { Measure(slot); });
    for (RankStats& s : ranks_) {
      s.CloseHeld();
      s.CloseStepExcess();
    }
    if (auto f = Judge()) findings->push_back(std::move(*f));
  }

 private:
  void AddStep(RankStats* s, const trace::Record& r) {
    ++s->steps;
    s->step_ns += std::max<int64_t>(0, r.Int("dur").value_or(0));
    // Straight off the parsed record (a JsonValue tree per step adds up over a big run):
    // the first of duplicate keys counts, int64 values only.
    if (!r.NumberMembers("phases", &phase_members_)) return;  // reused: no allocation per step
    for (const trace::Record::NumberMember& m : phase_members_) {
      if (m.is_int64) *s->PhaseNs(m.name) += std::max<int64_t>(0, m.int64);
    }
  }

  void Measure(const CollectiveSlot<Arrival>& slot) {
    std::vector<Arrival>& a = arrivals_;  // reused: no allocation per collective
    a.assign(slot.entries.begin(), slot.entries.end());
    const auto by_rank = [](const Arrival& x, const Arrival& y) { return x.rank < y.rank; };
    // The driver delivers rank by rank, so the entries are usually in order already; the
    // sort (not stable) is left for the other cases, to keep which duplicate survives.
    if (std::adjacent_find(a.begin(), a.end(), [](const Arrival& x, const Arrival& y) {
          return x.rank >= y.rank;
        }) != a.end()) {
      std::sort(a.begin(), a.end(), by_rank);
      a.erase(std::unique(a.begin(), a.end(),
                          [](const Arrival& x, const Arrival& y) { return x.rank == y.rank; }),
              a.end());
    }
    if (a.size() < 2) return;
    int64_t earliest = a[0].enter;
    size_t last = 0;
    for (size_t i = 1; i < a.size(); ++i) {
      earliest = std::min(earliest, a[i].enter);
      if (a[i].enter > a[last].enter) last = i;
    }
    // Relative to the earliest: wall-clock ns (~1.8e18) would lose precision as doubles.
    std::vector<double>& behind = behind_;
    behind.clear();
    for (const Arrival& x : a) behind.push_back(double(x.enter - earliest));
    const double median = MedianInPlace(&behind);
    int64_t second = INT64_MIN;
    for (size_t i = 0; i < a.size(); ++i)
      if (i != last) second = std::max(second, a[i].enter);

    for (size_t i = 0; i < a.size(); ++i) {
      RankStats& s = ranks_[a[i].rank];
      const int64_t lateness = a[i].enter - earliest;
      const int64_t excess = static_cast<int64_t>(std::llround(double(lateness) - median));
      ++s.collectives;
      s.lateness_ns += lateness;
      s.excess_ns += excess;
      s.max_lateness_ns = std::max(s.max_lateness_ns, lateness);
      s.StepExcess(slot.step, excess);
      if (s.histogram.empty()) s.histogram.assign(kBuckets, 0);
      ++s.histogram[BucketOf(lateness)];
      for (size_t l = 0; l < kLevelsNs.size() && excess >= kLevelsNs[l]; ++l)
        if (!s.first_step_past[l]) s.first_step_past[l] = slot.step;
    }
    RankStats& late = ranks_[a[last].rank];
    ++late.last;
    late.Held(slot.step, a[last].enter - second);
  }

  struct Verdict {
    int rank = 0;
    double mean_excess = 0;
  };

  std::optional<Finding> Judge() const {
    std::vector<double> step_means, step_totals, excesses;
    for (const RankStats& s : ranks_) {
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
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const RankStats& s = ranks_[r];
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
    return MakeFinding(stragglers, threshold, noise, median_step, Median(step_totals));
  }

  // The rank whose mean excess is the (lower) median of all ranks': the typical rank.
  int MedianRank() const {
    std::vector<std::pair<double, int>> v;
    for (size_t r = 0; r < ranks_.size(); ++r)
      if (ranks_[r].Judged()) v.emplace_back(ranks_[r].MeanExcess(), static_cast<int>(r));
    std::sort(v.begin(), v.end());
    return v[(v.size() - 1) / 2].second;
  }

  // Per phase, the median over ranks of the mean time per step.
  std::map<std::string, double> MedianPhases() const {
    std::map<std::string, std::vector<double>> values;
    for (const RankStats& s : ranks_) {
      if (!s.present || s.steps == 0) continue;
      for (const auto& [phase, ns] : s.phase_ns) values[phase];
    }
    for (auto& [phase, v] : values)
      for (const RankStats& s : ranks_)
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

  static Explanation Explain(const RankStats& s, const std::map<std::string, double>& medians,
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

  std::optional<int64_t> FirstStep(const RankStats& s, double mean_excess) const {
    std::optional<int64_t> step;
    for (size_t l = 0; l < kLevelsNs.size(); ++l) {
      if (kLevelsNs[l] > mean_excess / 2 && l > 0) break;
      if (s.first_step_past[l]) step = s.first_step_past[l];
    }
    return step;
  }

  JsonValue Row(int rank, const std::string& role, const std::map<std::string, double>& medians,
                const Explanation* why) const {
    const RankStats& s = ranks_[rank];
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

  Finding MakeFinding(const std::vector<Verdict>& stragglers, double threshold, double noise,
                      double median_step, double median_total) const {
    const std::map<std::string, double> medians = MedianPhases();
    const int median_rank = MedianRank();
    Finding f;
    f.kind = std::string(kind::kStraggler);
    int64_t held = 0;
    JsonValue rows = JsonValue::Array();
    std::vector<Explanation> why;
    for (size_t i = 0; i < stragglers.size(); ++i) {
      const int rank = stragglers[i].rank;
      const RankStats& s = ranks_[rank];
      f.ranks.push_back(rank);
      held += s.held_ns;
      why.push_back(Explain(s, medians, stragglers[i].mean_excess));
      if (auto step = FirstStep(s, stragglers[i].mean_excess))
        f.step = f.step ? std::min(*f.step, *step) : *step;
      if (i < kMaxRows) rows.Push(Row(rank, "straggler", medians, &why.back()));
    }
    NormalizeRanks(&f.ranks);
    rows.Push(Row(median_rank, "median", medians, nullptr));
    const double lost_share = median_total > 0 ? held / median_total : 0;
    f.severity = lost_share >= kErrorLostShare ? Severity::kError : Severity::kWarning;

    const int worst = stragglers.front().rank;
    const RankStats& w = ranks_[worst];
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
      f.summary += "; its " + PhaseLabel(e.phase) + " takes " + MsText(e.rank_ns) +
                   " per step vs " + MsText(e.median_ns) + " on the median rank";
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

  std::vector<RankStats> ranks_;  // by rank number
  CollectiveWindow<Arrival> window_;
  std::vector<trace::Record::NumberMember> phase_members_;  // AddStep's scratch
  std::vector<Arrival> arrivals_;                           // Measure's scratch
  std::vector<double> behind_;                              // Measure's scratch
};

}  // namespace

std::unique_ptr<Analyzer> CreateStragglerAnalyzer() {
  return std::make_unique<StragglerAnalyzer>();
}

}  // namespace dsdiag::analyzers
