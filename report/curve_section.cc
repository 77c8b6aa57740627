// Per-rank curves of a value recorded once a step: the loss (`step.loss`) and the loss
// scale (`scaler.scale`). Up to kMaxCurveLines lines: one per rank, or one per group of
// consecutive ranks (their mean). When lines or points aggregate (rank groups, step bins),
// a grey band shows the min..max over every rank, so one rank's divergence stays visible.
#include <string>

#include "report/html.h"
#include "report/line_chart.h"
#include "report/sections.h"

namespace dsdiag::report {
namespace {

struct CurveSpec {
  std::string id;
  std::string heading;
  std::string value;  // "loss", "loss scale"
  std::string explanation;
  bool log_y = false;
};

double BinCentre(const StepAxis& axis, int bin) {
  return static_cast<double>(axis.FirstStep(bin)) + static_cast<double>(axis.width() - 1) / 2;
}

std::string PointTitle(const std::string& who, const CurveSpec& spec, const StepAxis& axis, int bin,
                       const BinStats& cell) {
  const std::string where = who + " · " + StepSpan(axis.FirstStep(bin), axis.LastStep(bin));
  if (cell.count == 1) return where + ": " + spec.value + " " + Num(cell.max, 8);
  return where + ": mean " + spec.value + " " + Num(cell.mean(), 6) + "\nmin " + Num(cell.min, 8) +
         " (rank " + std::to_string(cell.min_rank) + ", step " + std::to_string(cell.min_step) +
         "), max " + Num(cell.max, 8) + " (rank " + std::to_string(cell.max_rank) + ", step " +
         std::to_string(cell.max_step) + ")";
}

LineChart MakeChart(const CurveSpec& spec, const Curves& curves, const StepAxis& axis) {
  LineChart chart;
  chart.id = spec.id + "-svg";
  chart.x_label = "step";
  chart.y_label = spec.value;
  chart.log_y = spec.log_y;
  chart.integer_x = true;
  const RankRows& lines = curves.lines;
  for (int line = 0; line < lines.rows(); ++line) {
    ChartSeries s;
    s.name = (lines.per_row() == 1 ? "rank " : "ranks ") + lines.Label(line);
    s.color = SeriesColor(line);
    for (int b = 0; b < axis.bins(); ++b) {
      const BinStats& cell = curves.by_line.At(line, b);
      if (cell.empty()) continue;
      ChartPoint p;
      p.x = BinCentre(axis, b);
      p.y = cell.mean();
      p.title = PointTitle(s.name, spec, axis, b, cell);
      s.points.push_back(std::move(p));
    }
    if (!s.points.empty()) chart.series.push_back(std::move(s));
  }
  if (lines.per_row() > 1 || axis.width() > 1) {
    ChartBand band;
    band.title = "min..max of every rank";
    for (int b = 0; b < axis.bins(); ++b) {
      const BinStats& cell = curves.all.At(0, b);
      if (cell.empty()) continue;
      band.x.push_back(BinCentre(axis, b));
      band.lo.push_back(cell.min);
      band.hi.push_back(cell.max);
    }
    chart.band = std::move(band);
  }
  return chart;
}

std::string BinningNote(const Curves& curves, const StepAxis& axis) {
  std::string note;
  if (curves.lines.per_row() > 1)
    note += " Each line is the mean of " + std::to_string(curves.lines.per_row()) + " ranks.";
  if (axis.width() > 1)
    note += " Each point is the mean of " + std::to_string(axis.width()) + " steps.";
  return note;
}

void AppendCurves(const CurveSpec& spec, const Curves& curves, const StepAxis& axis,
                  std::string* out) {
  out->append("<section id=\"" + spec.id + "\"><h2>" + spec.heading + "</h2><p class=\"note\">" +
              spec.explanation + BinningNote(curves, axis) + "</p>");
  out->append(DrawLineChart(MakeChart(spec, curves, axis)));
  out->append("</section>");
}

}  // namespace

void AppendCurveSections(const RunCollector& data, std::string* out) {
  CurveSpec loss;
  loss.id = "loss";
  loss.heading = "Loss";
  loss.value = "loss";
  loss.explanation = "Each rank's local loss (<code>step.loss</code>) per step.";
  if (data.loss().all.empty()) {
    out->append(
        "<section id=\"loss\"><h2>Loss</h2><p class=\"none\">No finite loss in the "
        "<code>step</code> records.</p></section>");
  } else {
    AppendCurves(loss, data.loss(), data.axis(), out);
  }
  // Only runs with a loss scaler (AMP fp16) have one to show.
  if (data.scale().all.empty()) return;
  CurveSpec scale;
  scale.id = "loss-scale";
  scale.heading = "Loss scale";
  scale.value = "loss scale";
  scale.log_y = true;
  scale.explanation =
      "The gradient scaler's scale (<code>scaler.scale</code>) per step, on a log axis: "
      "every drop is a backoff after non-finite gradients; ranks whose curves part ways "
      "disagree about overflows.";
  AppendCurves(scale, data.scale(), data.axis(), out);
}

}  // namespace dsdiag::report
