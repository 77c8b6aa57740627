#include "trainer/loader_sweep_summary.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace dsdiag::trainer {
namespace {

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string Setting(int workers, int batch_size) {
  return std::to_string(workers) + (workers == 1 ? " worker" : " workers") + " at batch " +
         std::to_string(batch_size);
}

std::string OrDash(const std::optional<double>& v) { return v ? Fixed(*v, 1) : "-"; }

}  // namespace

double MedianOf(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::optional<trace::LoaderSweepRecommendation> RecommendLoaderSetting(
    const std::vector<trace::LoaderSweepPoint>& points, double tolerance) {
  if (points.empty()) return std::nullopt;
  const trace::LoaderSweepPoint* best = &points.front();
  for (const trace::LoaderSweepPoint& p : points)
    if (p.samples_per_s_median > best->samples_per_s_median) best = &p;
  const double floor = best->samples_per_s_median * (1 - tolerance);
  const trace::LoaderSweepPoint* pick = best;
  for (const trace::LoaderSweepPoint& p : points) {
    if (p.samples_per_s_median < floor) continue;
    if (p.workers < pick->workers ||
        (p.workers == pick->workers && p.batch_size < pick->batch_size))
      pick = &p;
  }
  trace::LoaderSweepRecommendation r;
  r.workers = pick->workers;
  r.batch_size = pick->batch_size;
  const std::string rate = Fixed(pick->samples_per_s_median, 1) + " samples/s";
  if (pick == best) {
    r.reason = "fastest median throughput (" + rate + ")";
  } else {
    const double behind = 100 * (1 - pick->samples_per_s_median / best->samples_per_s_median);
    r.reason = rate + ", within " + Fixed(tolerance * 100, 0) + "% of the fastest (" +
               Setting(best->workers, best->batch_size) + ", " +
               Fixed(best->samples_per_s_median, 1) + " samples/s, " + Fixed(behind, 1) +
               "% more) with fewer workers";
  }
  return r;
}

std::string LoaderSweepTable(const trace::LoaderSweep& result) {
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%7s %6s %14s %19s %14s %13s\n", "workers", "batch",
                "samples/s med", "min-max", "first batch ms", "peak RSS MB");
  out += line;
  for (const trace::LoaderSweepPoint& p : result.points) {
    const std::string spread = OrDash(p.samples_per_s_min) + "-" + OrDash(p.samples_per_s_max);
    std::snprintf(line, sizeof line, "%7d %6d %14.1f %19s %14s %13s\n", p.workers, p.batch_size,
                  p.samples_per_s_median, spread.c_str(), OrDash(p.first_batch_ms).c_str(),
                  OrDash(p.peak_rss_mb).c_str());
    out += line;
  }
  if (result.recommendation) {
    const trace::LoaderSweepRecommendation& r = *result.recommendation;
    const std::string setting =
        r.batch_size ? Setting(r.workers, *r.batch_size) : std::to_string(r.workers) + " workers";
    out += "recommendation: " + setting + ": " + r.reason + "\n";
  }
  return out;
}

}  // namespace dsdiag::trainer
