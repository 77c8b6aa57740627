// straggler: ranks that reach the collectives late, again and again, so that everyone else
// waits for them — and the phase of their step that takes longer than on the other ranks.
//
// Input: `coll` records (ts = when the rank entered the collective), `step` records with
// their per-phase times, and `clock` records:
//   {"type":"coll","ts":7000,"step":3,"pg":0,"seq":17,"op":"allreduce",...,"dur":2100000}
//   {"type":"step","ts":5000,"step":3,"dur":41000000,...,"phases":{"data":1200000,...}}
// Enter times are mapped to rank 0's clock first (rank_clock.h), so that a skewed wall clock
// on some host does not make its rank look late or early. Collectives before a rank's first
// step_begin (the initial broadcast) are left out: launch skew is not straggling.
//
// For each collective (pg, seq) that two or more ranks entered, a rank's *lateness* is its
// enter time minus the earliest rank's; the *on-time arrival* is the k-th earliest enter
// (k = ceil(10% of the ranks), at least 1), and a rank's *excess* is its enter time minus
// that, clamped at 0. Per step a rank's step lateness is its largest excess at any collective
// of the step (once the others have waited for it, the step's later collectives start
// together: a mean over buckets would dilute it). A rank is judged with at least 3
// collectives in at least 5 steps. It is a straggler when, against the on-time ranks (the
// lower half of the judged ranks by mean step lateness),
//   its mean step lateness - their typical mean > max(1 ms, 10% of the median step time)
//                                                                 (it costs something)
//   and either its median step lateness passes their typical median by that too (late in
//   most steps), or its mean passes theirs by twice that (rarely late, but by a lot)
//                                                                 (it is no bad luck)
//   and, with 3 on-time ranks or more, its mean - their typical mean > 5 x their spread
//   (1.4826 x the median absolute deviation of their means)      (it is an outlier)
// The earliest tenth, not the median rank, is the reference: slow ranks drag a median along
// (two slow ranks of four, the midpoint of two ranks), so two slow ranks at once are both
// named; when every judged rank would be named, none is. A rank that passes these is also
// tested for persistence (straggler_windows.h): per window of steps, is its mean lateness
// above the judged ranks' median? A sign test (binomial, p <= 1% / the ranks tested) tells a
// rank late window after window from a busy host that slows one rank now and another later;
// a rank that fails it is named only for a rare but costly stall, at info. The reference
// rank whose phases are compared is a real on-time rank (the median non-straggler by mean
// step lateness).
// Per straggler the finding gives the per-step lateness (median, mean, p95: what the rule
// judges), the share of collectives it entered last, mean / p95 / max lateness per collective
// (p95 from a fixed log histogram, ~6% resolution, so memory stays bounded), the time the
// job stood still for it alone (per step, the most it arrived after every other rank at one
// collective), and the phase that explains it: the phase (`sync` aside, where the others'
// waiting shows) whose mean time exceeds the reference rank's the most.
// Why the phase takes longer (its `cause`), where the step records carry what the scheduler
// says of the phase's thread (`cpu`: ns on a CPU, `runq`: ns runnable but waiting for one):
// of the phase's extra wall time over the reference rank's, the larger part is its extra CPU
// time with the run-queue wait the host adds to it ("more-compute": it computes more or
// slower), run-queue time beyond that ("cpu-starved": other processes on its host took its
// cores), or neither ("blocked": I/O, a lock, a sleep).
// Where both ranks' step records carry device time (`dev`: a Python job on CUDA), the phase
// is the one whose device time exceeds the reference rank's the most (`phase_clock`
// "device"): on CUDA the host times say when a phase's kernels were queued, and a slow
// forward on the device shows up in whichever phase next syncs. The cause stays the host
// thread's (its scheduler figures for that phase).
// Severity: warning; error when the job stood still for the stragglers at least half of the
// reference rank's total step time (the job ran at most half speed because of them). Info
// when no straggler is persistent and slower for a reason of its own (cpu-starved is the
// host's contention, not the rank's doing), whatever it cost.
//
// This file gathers (RankStats, straggler_stats.h) and measures each collective; the verdict
// and the finding are in straggler_finding.cc.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/call_sites.h"
#include "analyzers/kinds/common/collective_window.h"
#include "analyzers/kinds/straggler/straggler_finding.h"
#include "analyzers/kinds/straggler/straggler_stats.h"
#include "trace/record_types.h"
#include "trace/records/coll_record.h"
#include "trace/records/step_record.h"
#include "trace/trace_reader.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace straggler {
namespace {

class StragglerAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kStraggler; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kCollective, trace::rec::kStep, trace::rec::kStepBegin, trace::rec::kClock,
            trace::rec::kSite};
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
      const records::CollView coll(r);
      const auto pg = coll.pg();
      const auto seq = coll.seq();
      if (!pg || !seq) return;
      window_.Add({static_cast<int>(*pg), *seq}, r.step(),
                  {rank.rank, s.clock.ToRank0(r.ts()), sites_.Of(rank.rank, coll.site())});
    } else if (type == trace::rec_id::kSite) {
      sites_.Add(rank.rank, r);
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
      if (const int site = s.WorstSite(); site != 0)
        s.late_at = sites_.Short(site) + (sites_.fn(site).empty() ? "" : " in " + sites_.fn(site));
    }
    if (auto f = JudgeStragglers(ranks_)) findings->push_back(std::move(*f));
  }

 private:
  void AddStep(RankStats* s, const trace::Record& r) {
    ++s->steps;
    const records::StepView step(r);
    s->step_ns += std::max<int64_t>(0, step.dur().value_or(0));
    // Straight off the parsed record (a JsonValue tree per step adds up over a big run):
    // the first of duplicate keys counts, int64 values only.
    if (!step.phases(&phase_members_)) return;  // reused: no allocation per step
    AddPhases(&s->phase_ns);
    if (step.cpu(&phase_members_)) {
      ++s->cpu_steps;
      AddPhases(&s->phase_cpu_ns);
    }
    if (step.runq(&phase_members_)) {
      ++s->runq_steps;
      AddPhases(&s->phase_runq_ns);
    }
    if (step.dev(&phase_members_)) {
      ++s->device_steps;
      AddPhases(&s->device_phase_ns, /*device=*/true);
    }
    if (const auto load = step.load(); load && *load >= 0) {
      s->load_sum += *load;
      ++s->load_steps;
    }
  }

  // phase_members_'s int64 values into `sums` (`dev`'s own `step` and `coll` keys are not
  // phases).
  void AddPhases(PhaseSums* sums, bool device = false) {
    for (const trace::Record::NumberMember& m : phase_members_) {
      if (!m.is_int64) continue;
      if (device && (m.name == records::StepDevKeys::step.name() ||
                     m.name == records::StepDevKeys::coll.name()))
        continue;
      *RankStats::NsOf(sums, m.name, &phase_names_) += std::max<int64_t>(0, m.int64);
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
    // The on-time arrival: the k-th earliest, k a tenth of the ranks (at least 1).
    std::vector<double>& behind = behind_;
    behind.clear();
    for (const Arrival& x : a) behind.push_back(double(x.enter - earliest));
    const size_t k = std::max<size_t>(1, (a.size() + 9) / 10);
    std::nth_element(behind.begin(), behind.begin() + static_cast<std::ptrdiff_t>(k - 1),
                     behind.end());
    const double on_time = behind[k - 1];
    int64_t second = INT64_MIN;
    for (size_t i = 0; i < a.size(); ++i)
      if (i != last) second = std::max(second, a[i].enter);

    for (size_t i = 0; i < a.size(); ++i) {
      RankStats& s = ranks_[a[i].rank];
      const int64_t lateness = a[i].enter - earliest;
      const int64_t excess =
          std::max<int64_t>(0, static_cast<int64_t>(std::llround(double(lateness) - on_time)));
      ++s.collectives;
      s.lateness_ns += lateness;
      s.excess_ns += excess;
      s.max_lateness_ns = std::max(s.max_lateness_ns, lateness);
      s.StepExcess(slot.step, excess);
      s.AddSiteExcess(a[i].site, excess);
      s.histogram.Add(BucketOf(lateness));
      for (size_t l = 0; l < kLevelsNs.size() && excess >= kLevelsNs[l]; ++l)
        if (!s.first_step_past[l]) s.first_step_past[l] = slot.step;
    }
    RankStats& late = ranks_[a[last].rank];
    ++late.last;
    late.Held(slot.step, a[last].enter - second);
  }

  std::vector<RankStats> ranks_;  // by rank number
  RunSites sites_;
  CollectiveWindow<Arrival> window_;
  std::vector<trace::Record::NumberMember> phase_members_;  // AddStep's scratch
  NameTable phase_names_;                                   // what the ranks' PhaseSums name
  std::vector<Arrival> arrivals_;                           // Measure's scratch
  std::vector<double> behind_;                              // Measure's scratch
};

}  // namespace
}  // namespace straggler

std::unique_ptr<Analyzer> CreateStragglerAnalyzer() {
  return std::make_unique<straggler::StragglerAnalyzer>();
}

}  // namespace dsdiag::analyzers
