#include "trace/loader_sweep_summary.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace dsdiag::trace {
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

std::string Setting(const LoaderSweepPoint& p) {
  return Setting(p.workers, p.batch_size) +
         trace::LoaderSwitchesText(p.pin_memory, p.persistent_workers);
}

// The switches a point costs (pinned host memory, workers kept alive between epochs): among
// points equally fast, the one with fewer wins.
int SwitchesOn(const LoaderSweepPoint& p) {
  return p.pin_memory.value_or(false) + p.persistent_workers.value_or(false);
}

// Fewer workers, then a smaller batch, then fewer switches on.
bool Cheaper(const LoaderSweepPoint& a, const LoaderSweepPoint& b) {
  if (a.workers != b.workers) return a.workers < b.workers;
  if (a.batch_size != b.batch_size) return a.batch_size < b.batch_size;
  return SwitchesOn(a) < SwitchesOn(b);
}

bool HasSwitches(const std::vector<LoaderSweepPoint>& points) {
  for (const auto& p : points)
    if (p.pin_memory || p.persistent_workers) return true;
  return false;
}

std::string YesNo(const std::optional<bool>& v) { return v ? (*v ? "yes" : "no") : "-"; }

std::string OrDash(const std::optional<double>& v) { return v ? Fixed(*v, 1) : "-"; }

}  // namespace

double MedianOf(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::optional<LoaderSweepRecommendation> RecommendLoaderSetting(
    const std::vector<LoaderSweepPoint>& points, double tolerance) {
  if (points.empty()) return std::nullopt;
  const LoaderSweepPoint* best = &points.front();
  for (const LoaderSweepPoint& p : points)
    if (p.samples_per_s_median > best->samples_per_s_median) best = &p;
  const double floor = best->samples_per_s_median * (1 - tolerance);
  const LoaderSweepPoint* pick = best;
  for (const LoaderSweepPoint& p : points) {
    if (p.samples_per_s_median < floor) continue;
    if (Cheaper(p, *pick)) pick = &p;
  }
  LoaderSweepRecommendation r;
  r.workers = pick->workers;
  r.batch_size = pick->batch_size;
  r.pin_memory = pick->pin_memory;
  r.persistent_workers = pick->persistent_workers;
  const std::string rate = Fixed(pick->samples_per_s_median, 1) + " samples/s";
  if (pick == best) {
    r.reason = "fastest median throughput (" + rate + ")";
  } else {
    const double behind = 100 * (1 - pick->samples_per_s_median / best->samples_per_s_median);
    const bool fewer_workers = pick->workers < best->workers;
    r.reason = rate + ", within " + Fixed(tolerance * 100, 0) + "% of the fastest (" +
               Setting(*best) + ", " + Fixed(best->samples_per_s_median, 1) + " samples/s, " +
               Fixed(behind, 1) + "% more) with " +
               (fewer_workers                         ? "fewer workers"
                : pick->batch_size < best->batch_size ? "a smaller batch"
                                                      : "fewer loader switches on");
  }
  return r;
}

std::string LoaderSweepTable(const LoaderSweep& result) {
  std::string out;
  char line[200];
  // The pin / persist columns only for a sweep that varies them (the Python package's).
  const bool switches = HasSwitches(result.points);
  std::snprintf(line, sizeof line, "%7s %6s %14s %19s %14s %13s", "workers", "batch",
                "samples/s med", "min-max", "first batch ms", "peak RSS MB");
  out += line;
  if (switches) {
    std::snprintf(line, sizeof line, " %4s %8s", "pin", "persist");
    out += line;
  }
  out += "\n";
  for (const LoaderSweepPoint& p : result.points) {
    const std::string spread = OrDash(p.samples_per_s_min) + "-" + OrDash(p.samples_per_s_max);
    std::snprintf(line, sizeof line, "%7d %6d %14.1f %19s %14s %13s", p.workers, p.batch_size,
                  p.samples_per_s_median, spread.c_str(), OrDash(p.first_batch_ms).c_str(),
                  OrDash(p.peak_rss_mb).c_str());
    out += line;
    if (switches) {
      std::snprintf(line, sizeof line, " %4s %8s", YesNo(p.pin_memory).c_str(),
                    YesNo(p.persistent_workers).c_str());
      out += line;
    }
    out += "\n";
  }
  if (result.recommendation) {
    const LoaderSweepRecommendation& r = *result.recommendation;
    const std::string setting = (r.batch_size ? Setting(r.workers, *r.batch_size)
                                              : std::to_string(r.workers) + " workers") +
                                trace::LoaderSwitchesText(r.pin_memory, r.persistent_workers);
    out += "recommendation: " + setting + ": " + r.reason + "\n";
  }
  return out;
}

}  // namespace dsdiag::trace
