#include "trainer/loader_sweep_result.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "trace/json_value.h"

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

trace::JsonValue Optional(const std::optional<double>& v) {
  return v ? trace::JsonValue(*v) : trace::JsonValue();
}

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
    if (p.workers < pick->workers ||
        (p.workers == pick->workers && p.batch_size < pick->batch_size))
      pick = &p;
  }
  LoaderSweepRecommendation r;
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

std::string LoaderSweepJson(const LoaderSweepResult& result) {
  trace::JsonValue root = trace::JsonValue::Object();
  root.Set("schema", "dsdiag.loader-sweep/1");
  trace::JsonValue points = trace::JsonValue::Array();
  for (const LoaderSweepPoint& p : result.points) {
    trace::JsonValue o = trace::JsonValue::Object();
    o.Set("workers", p.workers);
    o.Set("batch_size", p.batch_size);
    o.Set("samples_per_s_median", p.samples_per_s_median);
    o.Set("samples_per_s_min", p.samples_per_s_min);
    o.Set("samples_per_s_max", p.samples_per_s_max);
    o.Set("first_batch_ms", Optional(p.first_batch_ms));
    o.Set("peak_rss_mb", Optional(p.peak_rss_mb));
    points.Push(std::move(o));
  }
  root.Set("points", std::move(points));
  if (result.recommendation) {
    trace::JsonValue rec = trace::JsonValue::Object();
    rec.Set("workers", result.recommendation->workers);
    rec.Set("batch_size", result.recommendation->batch_size);
    rec.Set("reason", result.recommendation->reason);
    root.Set("recommendation", std::move(rec));
  }
  return root.ToJson() + "\n";
}

std::string LoaderSweepTable(const LoaderSweepResult& result) {
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%7s %6s %14s %19s %14s %13s\n", "workers", "batch",
                "samples/s med", "min-max", "first batch ms", "peak RSS MB");
  out += line;
  for (const LoaderSweepPoint& p : result.points) {
    const std::string spread = Fixed(p.samples_per_s_min, 1) + "-" + Fixed(p.samples_per_s_max, 1);
    std::snprintf(line, sizeof line, "%7d %6d %14.1f %19s %14s %13s\n", p.workers, p.batch_size,
                  p.samples_per_s_median, spread.c_str(),
                  p.first_batch_ms ? Fixed(*p.first_batch_ms, 1).c_str() : "-",
                  p.peak_rss_mb ? Fixed(*p.peak_rss_mb, 1).c_str() : "-");
    out += line;
  }
  if (result.recommendation)
    out += "recommendation: " +
           Setting(result.recommendation->workers, result.recommendation->batch_size) + ": " +
           result.recommendation->reason + "\n";
  return out;
}

}  // namespace dsdiag::trainer
