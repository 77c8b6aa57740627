// loader-starvation: a rank whose training loop spends its time waiting for data.
//
// Input: the `loader` records (one per batch, `wait` = ns the loop blocked on it) and the
// `step` records (`dur` = the step's wall time):
//   {"type":"loader","step":3,"wait":1200000,"samples":8}
//   {"type":"step","step":3,"dur":41000000,...}
// Per rank and step, wait fraction = sum of the step's waits / its duration. The first
// step each rank measures is left out: it includes starting the loader's workers (what
// `dsdiag loader-sweep` reports as time to first batch). Over the remaining steps a rank
// is starved when (medians over steps):
//  - its wait fraction exceeds kMaxWaitFraction (30%): the loader cannot keep up; or
//  - its wait exceeds kOutlierFactor (3x) the median rank's wait by more than
//    kOutlierMinNs (5 ms): this rank's loader is slower than its peers' (the others then
//    wait for it in the gradient allreduce, so their own fractions stay low).
// The median rank is the lower median of the ranks' medians (with two ranks, the faster).
// Severity: warning. At least kMinSteps measured steps are needed. One finding for all
// starved ranks; evidence lists the top ranks by wait fraction and the median rank.
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
    std::vector<double> waits, fractions;
    for (const RankSummary& s : summaries) {
      waits.push_back(s.wait);
      fractions.push_back(s.fraction);
    }
    const double median_wait = Median(waits);
    const double median_fraction = Median(fractions);
    std::vector<int> starved;
    for (const RankSummary& s : summaries) {
      const bool slow = s.fraction > kMaxWaitFraction;
      const bool outlier = summaries.size() >= 2 && s.wait > kOutlierFactor * median_wait &&
                           s.wait - median_wait > static_cast<double>(kOutlierMinNs);
      if (slow || outlier) starved.push_back(s.rank);
    }
    if (starved.empty()) return;
    findings->push_back(MakeFinding(summaries, starved, median_wait, median_fraction));
  }

 private:
  Finding MakeFinding(std::vector<RankSummary> summaries, const std::vector<int>& starved,
                      double median_wait, double median_fraction) const {
    Finding f;
    f.kind = std::string(kind::kLoaderStarvation);
    f.severity = Severity::kWarning;
    f.ranks = starved;
    int64_t step = -1;
    for (int r : starved) {
      const int64_t s = ranks_.at(r).first_step;
      if (step < 0 || s < step) step = s;
    }
    if (step >= 0) f.step = step;
    f.subject = "data loader";
    std::sort(summaries.begin(), summaries.end(), [](const RankSummary& a, const RankSummary& b) {
      return a.fraction != b.fraction ? a.fraction > b.fraction : a.rank < b.rank;
    });
    const RankSummary& worst = summaries.front();
    auto pct = [](double x) { return std::to_string(static_cast<int>(x * 100 + 0.5)) + "%"; };
    auto ms = [](double ns) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f ms", ns / 1e6);
      return std::string(buf);
    };
    f.summary = (starved.size() == 1 ? "Rank " : "Ranks ") + FormatRankRanges(starved) +
                (starved.size() == 1 ? " waits" : " wait") + " for data: rank " +
                std::to_string(worst.rank) + " spends " + pct(worst.fraction) + " of a step (" +
                ms(worst.wait) + ") blocked on the loader, the median rank " +
                pct(median_fraction) + " (" + ms(median_wait) + ")";
    JsonValue top = JsonValue::Array();
    for (size_t i = 0; i < summaries.size() && i < kTopRanks; ++i) {
      JsonValue row = JsonValue::Object();
      row.Set("rank", summaries[i].rank);
      row.Set("wait_fraction", Round(summaries[i].fraction, 4));
      row.Set("wait_ms", Round(summaries[i].wait / 1e6, 3));
      row.Set("steps", static_cast<int64_t>(summaries[i].steps));
      top.Push(std::move(row));
    }
    f.evidence.Set("ranks", std::move(top));
    f.evidence.Set("median_wait_fraction", Round(median_fraction, 4));
    f.evidence.Set("median_wait_ms", Round(median_wait / 1e6, 3));
    f.evidence.Set("max_wait_fraction", kMaxWaitFraction);
    f.evidence.Set("outlier_factor", kOutlierFactor);
    f.evidence.Set("outlier_min_ms", static_cast<double>(kOutlierMinNs) / 1e6);
    f.hint =
        "The training loop is waiting for batches: run `dsdiag loader-sweep` to pick a worker "
        "count (DataLoader num_workers) and batch size that keep up, enable pin_memory / "
        "prefetching, and check that rank's storage or preprocessing.";
    return f;
  }

  std::map<int, RankWaits> ranks_;
};

}  // namespace

std::unique_ptr<Analyzer> CreateLoaderStarvationAnalyzer() {
  return std::make_unique<LoaderStarvationAnalyzer>();
}

}  // namespace dsdiag::analyzers
