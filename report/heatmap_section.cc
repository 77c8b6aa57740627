// The rank x step heatmaps of collective waits (collective_waits.h for the definitions).
//
// At most kMaxHeatmapRows rows (rank_rows.h) by kMaxStepBins columns (step_bins.h): one
// <rect> per non-empty cell, so a 1,024-rank, 10,000-step run draws at most 25,600 cells
// per map. A cell's colour is the extreme of its ranks' per-step sums that points at a
// culprit, so that one rank is not averaged away in a row of 8: the *least* wait (the rank
// everyone waits for waits least) and the *largest* arrival delay. Its tooltip gives min,
// mean and max, and where the extreme was. The colour scale runs from 0 to the map's
// largest cell.
#include <algorithm>
#include <cmath>

#include "report/html.h"
#include "report/sections.h"

namespace dsdiag::report {
namespace {

constexpr double kLeft = 120, kTop = 6, kPlotW = 900, kRight = 16;

enum class Extreme { kMin, kMax };

struct HeatmapSpec {
  std::string id;
  Extreme extreme = Extreme::kMax;  // what colours a cell
  std::string heading;
  std::string explanation;  // HTML
  std::string value;        // "wait", "delay", "time in collectives"
  const BinnedRows* grid = nullptr;
};

double Shown(const HeatmapSpec& spec, const BinStats& cell) {
  return spec.extreme == Extreme::kMin ? cell.min : cell.max;
}

double CellHeight(int rows) {
  if (rows <= 16) return 22;
  return std::max(4.0, std::floor(640.0 / rows));
}

std::string RanksLabel(const RankRows& rows, int row) {
  return (rows.per_row() == 1 ? "rank " : "ranks ") + rows.Label(row);
}

std::string CellTitle(const HeatmapSpec& spec, const RunCollector& data, int row, int bin,
                      const BinStats& cell) {
  const StepAxis& axis = data.axis();
  const std::string where =
      RanksLabel(data.rows(), row) + " · " + StepSpan(axis.FirstStep(bin), axis.LastStep(bin));
  if (cell.count == 1) return where + ": " + spec.value + " " + Duration(cell.max) + " per step";
  const bool min = spec.extreme == Extreme::kMin;
  const std::string extreme = min ? "least " : "most ";
  return where + "&#10;" + extreme + Duration(min ? cell.min : cell.max) + " per step (rank " +
         std::to_string(min ? cell.min_rank : cell.max_rank) + ", step " +
         std::to_string(min ? cell.min_step : cell.max_step) + ")&#10;mean " +
         Duration(cell.mean()) +
         (min ? ", most " + Duration(cell.max) : ", least " + Duration(cell.min));
}

// Who entered collectives last in a row: the rank of the row that did so most often.
std::string EnteredLast(const RunCollector& data, int row) {
  const std::vector<int> ranks = data.rows().RanksOf(row);
  int best = -1;
  int64_t best_last = -1, best_total = 0;
  for (size_t k = 0; k < ranks.size(); ++k) {
    const size_t i = static_cast<size_t>(row) * data.rows().per_row() + k;
    if (data.entered_last()[i] > best_last) {
      best = ranks[k];
      best_last = data.entered_last()[i];
      best_total = data.collectives()[i];
    }
  }
  if (best < 0 || best_total == 0) return "";
  return "&#10;rank " + std::to_string(best) + " entered last in " + Thousands(best_last) + " of " +
         Thousands(best_total) + " collectives";
}

// Each row is scaled so that a bin is one unit wide: cells need no fractional x or width.
void AppendRow(const HeatmapSpec& spec, const RunCollector& data, int row, double y, double h,
               double max, bool label, std::string* out) {
  const BinnedRows& grid = *spec.grid;
  const BinStats total = grid.RowTotal(row);
  const std::string ranks = data.rows().Label(row);
  out->append("<g class=\"hm-row\" data-ranks=\"" + ranks + "\" data-mean-ns=\"" +
              Num(total.mean(), 10) + "\" data-min-ns=\"" + Num(total.empty() ? 0 : total.min, 10) +
              "\" data-max-ns=\"" + Num(total.empty() ? 0 : total.max, 10) +
              "\" transform=\"translate(0," + Coord(y) + ")\">");
  if (label) {
    out->append("<text x=\"" + Coord(kLeft - 6) + "\" y=\"" + Coord(h / 2) +
                "\" text-anchor=\"end\" dominant-baseline=\"middle\">" +
                RanksLabel(data.rows(), row) + "<title>" + RanksLabel(data.rows(), row) +
                ": mean " + spec.value + " " + Duration(total.mean()) + " per step" +
                EnteredLast(data, row) + "</title></text>");
  }
  const int bins = data.axis().bins();
  out->append("<g transform=\"translate(" + Coord(kLeft) + ",0) scale(" +
              Coord(kPlotW / std::max(bins, 1)) + ",1)\">");
  const std::string height = Coord(h);
  for (int b = 0; b < bins; ++b) {
    const BinStats& cell = grid.At(row, b);
    if (cell.empty()) continue;
    out->append("<rect x=\"" + std::to_string(b) + "\" width=\"1\" height=\"" + height +
                "\" fill=\"" + HeatColor(Shown(spec, cell) / max) + "\"><title>" +
                CellTitle(spec, data, row, b, cell) + "</title></rect>");
  }
  out->append("</g></g>");
}

// Ticks at whole steps, under the middle of the step's slot.
void AppendStepAxis(const StepAxis& axis, double y, std::string* out) {
  const int64_t steps = std::max(axis.bins(), 1) * axis.width();
  const int64_t last = axis.origin() + steps - 1;
  out->append("<g class=\"axis\">");
  for (double t : NiceTicks(static_cast<double>(axis.origin()), static_cast<double>(last), 10)) {
    if (t != std::floor(t)) continue;
    const double x = kLeft + (t - axis.origin() + 0.5) / static_cast<double>(steps) * kPlotW;
    out->append("<line x1=\"" + Coord(x) + "\" x2=\"" + Coord(x) + "\" y1=\"" + Coord(y) +
                "\" y2=\"" + Coord(y + 4) + "\"/><text x=\"" + Coord(x) + "\" y=\"" +
                Coord(y + 16) + "\" text-anchor=\"middle\">" + Num(t, 12) + "</text>");
  }
  out->append("<text class=\"label\" x=\"" + Coord(kLeft + kPlotW / 2) + "\" y=\"" + Coord(y + 34) +
              "\" text-anchor=\"middle\">step</text></g>");
}

void AppendLegend(const HeatmapSpec& spec, double max, double y, std::string* out) {
  const std::string gradient = spec.id + "-ramp";
  out->append("<defs><linearGradient id=\"" + gradient + "\">");
  for (int i = 0; i <= 10; ++i)
    out->append("<stop offset=\"" + Num(i / 10.0) + "\" stop-color=\"" + HeatColor(i / 10.0) +
                "\"/>");
  out->append("</linearGradient></defs><g class=\"legend-ramp\"><rect class=\"ramp\" x=\"" +
              Coord(kLeft) + "\" y=\"" + Coord(y) + "\" width=\"240\" height=\"10\" fill=\"url(#" +
              gradient + ")\"/><text x=\"" + Coord(kLeft - 6) + "\" y=\"" + Coord(y + 9) +
              "\" text-anchor=\"end\">0</text><text x=\"" + Coord(kLeft + 246) + "\" y=\"" +
              Coord(y + 9) + "\">" + Duration(max) + " " + spec.value + " per step</text></g>");
}

std::string BinningNote(const HeatmapSpec& spec, const RunCollector& data) {
  const RankRows& rows = data.rows();
  const StepAxis& axis = data.axis();
  std::string note = "Rows: " +
                     (rows.per_row() == 1 ? std::string("one rank each")
                                          : std::to_string(rows.per_row()) + " ranks each") +
                     "; columns: " +
                     (axis.width() == 1 ? std::string("one step each")
                                        : std::to_string(axis.width()) + " steps each") +
                     ".";
  if (rows.per_row() > 1 || axis.width() > 1) {
    note += std::string(" A cell's colour is the ") +
            (spec.extreme == Extreme::kMin ? "least" : "largest") + " " + spec.value +
            " among its ranks and steps; hover it for where that was and for the mean.";
  }
  return note;
}

void AppendHeatmap(const HeatmapSpec& spec, const RunCollector& data, std::string* out) {
  out->append("<section id=\"" + spec.id + "\"><h2>" + spec.heading + "</h2><p class=\"note\">" +
              spec.explanation + " " + BinningNote(spec, data) + "</p>");
  const BinnedRows& grid = *spec.grid;
  if (grid.empty()) {
    out->append("<p class=\"none\">No <code>coll</code> records in this run.</p></section>");
    return;
  }
  double max = 0;
  for (int r = 0; r < grid.rows(); ++r) {
    for (int b = 0; b < data.axis().bins(); ++b) {
      const BinStats& cell = grid.At(r, b);
      if (!cell.empty()) max = std::max(max, Shown(spec, cell));
    }
  }
  const double scale = max > 0 ? max : 1;
  const int rows = data.rows().rows();
  const double h = CellHeight(rows);
  const int label_stride = std::max(1, (rows + 31) / 32);
  const double plot_h = rows * h;
  const double height = kTop + plot_h + 44 + 24;
  out->append("<svg class=\"chart heatmap\" id=\"" + spec.id + "-svg\" viewBox=\"0 0 " +
              Coord(kLeft + kPlotW + kRight) + " " + Coord(height) + "\" width=\"" +
              Coord(kLeft + kPlotW + kRight) +
              "\" role=\"img\" shape-rendering=\"crispEdges\" data-extreme=\"" +
              (spec.extreme == Extreme::kMin ? "min" : "max") + "\" data-max-ns=\"" + Num(max, 10) +
              "\" data-step-width=\"" + std::to_string(data.axis().width()) +
              "\" data-ranks-per-row=\"" + std::to_string(data.rows().per_row()) + "\">");
  out->append("<rect class=\"plot-bg\" x=\"" + Coord(kLeft) + "\" y=\"" + Coord(kTop) +
              "\" width=\"" + Coord(kPlotW) + "\" height=\"" + Coord(plot_h) + "\"/>");
  for (int r = 0; r < rows; ++r)
    AppendRow(spec, data, r, kTop + r * h, h, scale, r % label_stride == 0, out);
  AppendStepAxis(data.axis(), kTop + plot_h, out);
  AppendLegend(spec, max, kTop + plot_h + 48, out);
  out->append("</svg></section>");
}

}  // namespace

void AppendHeatmapSections(const RunCollector& data, std::string* out) {
  HeatmapSpec wait;
  wait.id = "heatmap";
  wait.extreme = Extreme::kMin;
  if (data.waits_abandoned()) {
    wait.heading = "Time in collectives";
    wait.value = "in collectives";
    wait.explanation =
        "Per rank and step: the time the rank spent in collectives (the sum of their "
        "<code>dur</code>). The ranks were too many to read side by side (open-file limit), "
        "so the waits for the last rank could not be matched up; time in collectives is "
        "mostly that wait.";
    wait.grid = &data.coll_time();
    AppendHeatmap(wait, data, out);
    out->append(
        "<section id=\"heatmap-delay\"><h2>Arrival delay</h2><p class=\"none\">Not available: "
        "the ranks could not be read side by side (raise the open-file limit, "
        "<code>ulimit -n</code>, above the number of ranks).</p></section>");
    return;
  }
  wait.heading = "Collective wait";
  wait.value = "wait";
  wait.explanation =
      "Per rank and step: the time the rank waited in the step's collectives for the last "
      "rank to enter them (last rank's enter &minus; this rank's enter, on rank 0's clock, "
      "summed over the step). Everyone waits for a straggler, and it waits for nobody: its row "
      "is the pale one.";
  wait.grid = &data.wait();
  AppendHeatmap(wait, data, out);

  HeatmapSpec delay;
  delay.id = "heatmap-delay";
  delay.heading = "Arrival delay";
  delay.value = "delay";
  delay.explanation =
      "Per rank and step: how long after the first rank this rank entered the step's "
      "collectives (this rank's enter &minus; first rank's enter, summed over the step) — the "
      "time it kept the others waiting. A straggler is the hot row.";
  delay.grid = &data.delay();
  AppendHeatmap(delay, data, out);
}

}  // namespace dsdiag::report
