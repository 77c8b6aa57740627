// loader-starvation: training loops that spend their time waiting for data — the whole
// job's (every rank's loader is too slow), or one rank's (its loader is slower than its
// peers', and they wait for it in the gradient allreduce).
//
// Input: the `loader` records (one per batch, `wait` = ns the loop blocked on it) and the
// `step` records (`dur` = the step's wall time):
//   {"type":"loader","step":3,"wait":1200000,"samples":8}
//   {"type":"step","step":3,"dur":41000000,...}
// Per rank and step, wait fraction = sum of the step's waits / its duration. The first
// step each rank measures is left out: it includes starting the loader's workers (what
// `dsdiag loader-sweep` reports as time to first batch). Over the remaining steps (medians
// over steps per rank), two verdicts, each one finding:
//  - the job: the median rank's wait fraction exceeds kMaxWaitFraction (30%), the lower
//    median (with two ranks, the faster one: both wait). Every rank waits, so this is a fact
//    about the job's input pipeline, named once with every measured rank. Judging each rank
//    against the line instead would pin the warning on whichever rank a noisy host pushed
//    over it (29% and 31% are the same job, and neither is named);
//  - a slow rank: its wait exceeds kOutlierFactor (3x) the median rank's wait by more than
//    kOutlierMinNs (5 ms): this rank's loader is slower than its peers' (the others then
//    wait for it in the gradient allreduce, so their own fractions stay low).
// The lower median, not the mean of the middle two: a slow rank must not drag its own
// reference along (two ranks at 72% and 0% are one slow rank, not a starved job).
// Severity: warning. At least kMinSteps measured steps are needed. Evidence lists the top
// ranks by wait fraction and the median rank, and `scope` ("job" or "rank").
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "trace/record_types.h"
#include "trace/records/loader_record.h"
#include "trace/records/step_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace {

using trace::JsonValue;

constexpr double kMaxWaitFraction = 0.30;
constexpr double kOutlierFactor = 3.0;
constexpr int64_t kOutlierMinNs = 5'000'000;
constexpr size_t kMinSteps = 3;
constexpr size_t kTopRanks = 8;

// The lower median: with two values, the smaller.
double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = (v.size() - 1) / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  return v[mid];
}

// For evidence a human reads: 0.7023394826601675 -> 0.7023.
double Round(double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

struct RankWaits {
  std::map<int64_t, int64_t> wait_by_step;  // steps not closed yet
  int64_t first_step = -1;
  std::vector<double> fractions;
  std::vector<double> waits;  // ns
};

struct RankSummary {
  int rank = 0;
  double fraction = 0;  // median over steps
  double wait = 0;      // median ns per step
  size_t steps = 0;
};

class LoaderStarvationAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kLoaderStarvation; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kLoader, trace::rec::kStep};
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type_id() == trace::rec_id::kLoader) {
      if (auto wait = records::LoaderView(r).wait(); wait && *wait >= 0)
        ranks_[rank.rank].wait_by_step[r.step()] += *wait;
      return;
    }
    if (r.type_id() != trace::rec_id::kStep) return;
    auto it = ranks_.find(rank.rank);
    if (it == ranks_.end()) return;
    RankWaits& w = it->second;
    auto wait = w.wait_by_step.find(r.step());
    const auto dur = records::StepView(r).dur();
    if (wait == w.wait_by_step.end() || !dur || *dur <= 0) return;
    if (w.first_step < 0) {
      w.first_step = r.step();  // the loader's start-up: not counted
    } else {
      w.fractions.push_back(
          std::min(1.0, static_cast<double>(wait->second) / static_cast<double>(*dur)));
      w.waits.push_back(static_cast<double>(wait->second));
    }
    w.wait_by_step.erase(w.wait_by_step.begin(), std::next(wait));
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    std::vector<RankSummary> summaries;
    for (const auto& [rank, w] : ranks_)
      if (w.fractions.size() >= kMinSteps)
        summaries.push_back({rank, Median(w.fractions), Median(w.waits), w.fractions.size()});
    if (summaries.empty()) return;
    Typical typical;
    std::vector<double> waits, fractions;
    for (const RankSummary& s : summaries) {
      waits.push_back(s.wait);
      fractions.push_back(s.fraction);
    }
    typical.wait = Median(waits);
    typical.fraction = Median(fractions);
    if (typical.fraction > kMaxWaitFraction) {
      std::vector<int> all;
      for (const RankSummary& s : summaries) all.push_back(s.rank);
      findings->push_back(MakeFinding(summaries, all, typical, Scope::kJob));
      return;  // every rank waits: a slower one among them is the same pipeline's story
    }
    std::vector<int> slow;
    for (const RankSummary& s : summaries) {
      const bool outlier = summaries.size() >= 2 && s.wait > kOutlierFactor * typical.wait &&
                           s.wait - typical.wait > static_cast<double>(kOutlierMinNs);
      if (outlier) slow.push_back(s.rank);
    }
    if (!slow.empty()) findings->push_back(MakeFinding(summaries, slow, typical, Scope::kRank));
  }

 private:
  enum class Scope { kJob, kRank };
  struct Typical {  // the median rank's (the lower median)
    double wait = 0, fraction = 0;
  };

  static std::string Percent(double x) {
    return std::to_string(static_cast<int>(x * 100 + 0.5)) + "%";
  }
  static std::string Ms(double ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f ms", ns / 1e6);
    return std::string(buf);
  }

  // The summary line: the job's wait (spread over the ranks), or the slow ranks' against
  // the median rank's. `summaries` sorted by wait fraction, highest first.
  static std::string Summary(const std::vector<RankSummary>& summaries,
                             const std::vector<int>& ranks, const Typical& typical, Scope scope) {
    const RankSummary& worst = summaries.front();
    if (scope == Scope::kJob) {
      const RankSummary& least = summaries.back();
      const std::string who = summaries.size() == 1
                                  ? "Rank " + std::to_string(worst.rank) + " waits"
                                  : "Every rank waits (" + FormatRankRanges(ranks) + ")";
      std::string spread;
      if (summaries.size() > 1 && Percent(least.fraction) != Percent(worst.fraction))
        spread = ", from " + Percent(least.fraction) + " on rank " + std::to_string(least.rank) +
                 " to " + Percent(worst.fraction) + " on rank " + std::to_string(worst.rank);
      return who + " for data: the job's input pipeline cannot keep up; the median rank spends " +
             Percent(typical.fraction) + " of a step (" + Ms(typical.wait) +
             ") blocked on its loader" + spread;
    }
    return (ranks.size() == 1 ? "Rank " : "Ranks ") + FormatRankRanges(ranks) +
           (ranks.size() == 1 ? " waits" : " wait") + " for data far longer than its peers: rank " +
           std::to_string(worst.rank) + " spends " + Percent(worst.fraction) + " of a step (" +
           Ms(worst.wait) + ") blocked on the loader, the median rank " +
           Percent(typical.fraction) + " (" + Ms(typical.wait) + ")";
  }

  Finding MakeFinding(std::vector<RankSummary> summaries, const std::vector<int>& ranks,
                      const Typical& typical, Scope scope) const {
    Finding f;
    f.kind = std::string(kind::kLoaderStarvation);
    f.severity = Severity::kWarning;
    f.ranks = ranks;
    int64_t step = -1;
    for (int r : ranks) {
      const int64_t s = ranks_.at(r).first_step;
      if (step < 0 || s < step) step = s;
    }
    if (step >= 0) f.step = step;
    f.subject = "data loader";
    std::sort(summaries.begin(), summaries.end(), [](const RankSummary& a, const RankSummary& b) {
      return a.fraction != b.fraction ? a.fraction > b.fraction : a.rank < b.rank;
    });
    f.summary = Summary(summaries, ranks, typical, scope);
    JsonValue top = JsonValue::Array();
    for (size_t i = 0; i < summaries.size() && i < kTopRanks; ++i) {
      JsonValue row = JsonValue::Object();
      row.Set("rank", summaries[i].rank);
      row.Set("wait_fraction", Round(summaries[i].fraction, 4));
      row.Set("wait_ms", Round(summaries[i].wait / 1e6, 3));
      row.Set("steps", static_cast<int64_t>(summaries[i].steps));
      top.Push(std::move(row));
    }
    f.evidence.Set("scope", scope == Scope::kJob ? "job" : "rank");
    f.evidence.Set("ranks", std::move(top));
    const bool job = scope == Scope::kJob;
    f.evidence.Set("median_wait_fraction", Round(typical.fraction, 4));
    f.evidence.Set("median_wait_ms", Round(typical.wait / 1e6, 3));
    f.evidence.Set("max_wait_fraction", kMaxWaitFraction);
    f.evidence.Set("outlier_factor", kOutlierFactor);
    f.evidence.Set("outlier_min_ms", static_cast<double>(kOutlierMinNs) / 1e6);
    f.hint = job ? "Every rank's training loop is waiting for batches: run `dsdiag loader-sweep` "
                   "to pick a worker count (DataLoader num_workers) and batch size that keep "
                   "up, enable pin_memory / prefetching, and check the shared storage or "
                   "preprocessing; on a shared host, the loader workers compete with the "
                   "ranks for its cores."
                 : "That rank's input pipeline is slower than its peers': check its storage, "
                   "its node's load and its DataLoader settings (num_workers, prefetch); "
                   "`dsdiag loader-sweep` picks a worker count that keeps up.";
    return f;
  }

  std::map<int, RankWaits> ranks_;
};

}  // namespace

std::unique_ptr<Analyzer> CreateLoaderStarvationAnalyzer() {
  return std::make_unique<LoaderStarvationAnalyzer>();
}

}  // namespace dsdiag::analyzers
