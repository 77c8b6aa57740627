// The loader sweep (trace/loader_sweep_file.h): the measured points as a table, throughput against
// workers as a curve per batch size (whiskers: min..max of the repeats), the recommended
// worker count marked on both.
#include <map>

#include "report/html.h"
#include "report/line_chart.h"
#include "report/sections.h"

namespace dsdiag::report {
namespace {

std::string Opt(const std::optional<double>& v, int digits = 4) {
  return v ? Num(*v, digits) : "-";
}

bool Recommended(const trace::LoaderSweep& sweep, const trace::LoaderSweepPoint& p) {
  const auto& r = sweep.recommendation;
  return r && r->workers == p.workers && (!r->batch_size || *r->batch_size == p.batch_size) &&
         r->pin_memory == p.pin_memory && r->persistent_workers == p.persistent_workers;
}

// "batch size 32", "batch size 32, pin_memory": one curve per setting besides the workers.
std::string SeriesName(const trace::LoaderSweepPoint& p) {
  return "batch size " + std::to_string(p.batch_size) +
         trace::LoaderSwitchesText(p.pin_memory, p.persistent_workers);
}

bool HasSwitches(const trace::LoaderSweep& sweep) {
  for (const auto& p : sweep.points)
    if (p.pin_memory || p.persistent_workers) return true;
  return false;
}

std::string YesNo(const std::optional<bool>& v) { return v ? (*v ? "yes" : "no") : "-"; }

void AppendTable(const trace::LoaderSweep& sweep, std::string* out) {
  const bool switches = HasSwitches(sweep);
  out->append(
      "<table class=\"sweep\"><thead><tr><th>workers</th><th>batch size</th>"
      "<th>samples/s (median)</th><th>min</th><th>max</th><th>first batch (ms)</th>"
      "<th>peak RSS (MB)</th>");
  if (switches) out->append("<th>pin_memory</th><th>persistent_workers</th>");
  out->append("</tr></thead><tbody>");
  for (const trace::LoaderSweepPoint& p : sweep.points) {
    out->append(std::string("<tr") + (Recommended(sweep, p) ? " class=\"recommended\"" : "") +
                "><td>" + std::to_string(p.workers) + "</td><td>" + std::to_string(p.batch_size) +
                "</td><td>" + Num(p.samples_per_s_median, 5) + "</td><td>" +
                Opt(p.samples_per_s_min, 5) + "</td><td>" + Opt(p.samples_per_s_max, 5) +
                "</td><td>" + Opt(p.first_batch_ms) + "</td><td>" + Opt(p.peak_rss_mb) + "</td>");
    if (switches)
      out->append("<td>" + YesNo(p.pin_memory) + "</td><td>" + YesNo(p.persistent_workers) +
                  "</td>");
    out->append("</tr>");
  }
  out->append("</tbody></table>");
}

LineChart MakeChart(const trace::LoaderSweep& sweep) {
  LineChart chart;
  chart.id = "loader-sweep-svg";
  chart.x_label = "workers";
  chart.y_label = "samples/s";
  chart.integer_x = true;
  std::map<std::string, ChartSeries> by_setting;
  for (const trace::LoaderSweepPoint& p : sweep.points) {
    const std::string name = SeriesName(p);
    ChartSeries& s = by_setting[name];
    s.name = name;
    ChartPoint point;
    point.x = static_cast<double>(p.workers);
    point.y = p.samples_per_s_median;
    point.lo = p.samples_per_s_min;
    point.hi = p.samples_per_s_max;
    if (!point.lo || !point.hi) point.lo = point.hi = std::nullopt;
    point.title = std::to_string(p.workers) + " workers, " + name + ": " +
                  Num(p.samples_per_s_median, 5) + " samples/s median";
    if (point.lo) point.title += " (" + Num(*point.lo, 5) + ".." + Num(*point.hi, 5) + ")";
    s.points.push_back(std::move(point));
  }
  int i = 0;
  for (auto& [name, s] : by_setting) {
    std::stable_sort(s.points.begin(), s.points.end(),
                     [](const ChartPoint& a, const ChartPoint& b) { return a.x < b.x; });
    s.color = SeriesColor(i++);
    chart.series.push_back(std::move(s));
  }
  if (sweep.recommendation) {
    chart.marker_x = static_cast<double>(sweep.recommendation->workers);
    chart.marker_label = "recommended: " + std::to_string(sweep.recommendation->workers);
  }
  return chart;
}

}  // namespace

void AppendLoaderSweepSection(const trace::LoaderSweepFile& result, std::string* out) {
  if (!result.present) return;
  out->append("<section id=\"loader-sweep\"><h2>Loader sweep</h2>");
  if (!result.sweep) {
    out->append("<p class=\"error\">The loader-sweep result cannot be shown: ");
    AppendEscaped(out, result.issue ? result.issue->ToString() : std::string("unreadable"));
    out->append("</p></section>");
    return;
  }
  const trace::LoaderSweep& sweep = *result.sweep;
  out->append(
      "<p class=\"note\">Data-loader throughput measured by <code>dsdiag "
      "loader-sweep</code> or <code>python3 -m dsdiag.torch.loader_sweep</code> "
      "(<code>loader-sweep.json</code>).</p>");
  if (sweep.recommendation) {
    out->append("<p class=\"recommendation\"><b>Recommended: " +
                std::to_string(sweep.recommendation->workers) + " workers");
    if (sweep.recommendation->batch_size)
      out->append(", batch size " + std::to_string(*sweep.recommendation->batch_size));
    out->append(trace::LoaderSwitchesText(sweep.recommendation->pin_memory,
                                          sweep.recommendation->persistent_workers));
    out->append("</b>");
    if (!sweep.recommendation->reason.empty()) {
      out->append(" — ");
      AppendEscaped(out, sweep.recommendation->reason);
    }
    out->append("</p>");
  }
  if (sweep.points.empty()) {
    out->append("<p class=\"none\">The sweep holds no points.</p></section>");
    return;
  }
  AppendTable(sweep, out);
  out->append(DrawLineChart(MakeChart(sweep)));
  out->append("</section>");
}

}  // namespace dsdiag::report
