// Mean step time per rank, stacked by phase (the `phases` of the `step` records), one bar
// per row of ranks. What the phases do not cover of the step's `dur` is drawn as
// "(outside phases)". A slow phase on one rank — data on a starved loader, backward on a
// straggler — shows as one bar longer than the rest in that colour.
#include <algorithm>
#include <cmath>

#include "report/html.h"
#include "report/sections.h"
#include "trace/records/phase_record.h"

namespace dsdiag::report {
namespace {

constexpr double kLeft = 120, kTop = 6, kPlotW = 820, kRight = 76;
constexpr char kOutside[] = "(outside phases)";

// Phases in the order a step runs them; unknown names after, as first met.
std::vector<int> PhaseOrder(const std::vector<std::string>& phases) {
  namespace phase = trace::phase;
  static constexpr std::string_view kKnown[] = {phase::kData,      phase::kForward,
                                                phase::kBackward,  phase::kSync,
                                                phase::kOptimizer, phase::kCheckpoint};
  std::vector<int> order;
  for (std::string_view name : kKnown)
    for (size_t i = 0; i < phases.size(); ++i)
      if (phases[i] == name) order.push_back(static_cast<int>(i));
  for (size_t i = 0; i < phases.size(); ++i)
    if (std::find(order.begin(), order.end(), static_cast<int>(i)) == order.end())
      order.push_back(static_cast<int>(i));
  return order;
}

// One bar: the means per step of a row of ranks.
struct Bar {
  int64_t steps = 0;
  double step_ns = 0;            // mean step duration
  std::vector<double> phase_ns;  // mean per phase index
  int slowest_rank = -1;         // the rank with the longest mean step, in a shared row
  double slowest_ns = 0;
};

Bar MakeBar(const RunCollector& data, int row) {
  Bar bar;
  bar.phase_ns.assign(data.phases().size(), 0);
  const RankRows& rows = data.rows();
  double dur = 0;
  for (int rank : rows.RanksOf(row)) {
    const size_t i =
        std::lower_bound(rows.ranks().begin(), rows.ranks().end(), rank) - rows.ranks().begin();
    const RankSteps& s = data.rank_steps()[i];
    if (s.steps == 0) continue;
    bar.steps += s.steps;
    dur += s.dur_ns;
    for (size_t p = 0; p < s.phase_ns.size(); ++p) bar.phase_ns[p] += s.phase_ns[p];
    const double mean = s.dur_ns / static_cast<double>(s.steps);
    if (mean > bar.slowest_ns) {
      bar.slowest_ns = mean;
      bar.slowest_rank = rank;
    }
  }
  if (bar.steps == 0) return bar;
  const double n = static_cast<double>(bar.steps);
  bar.step_ns = dur / n;
  for (double& p : bar.phase_ns) p /= n;
  return bar;
}

void AppendSegment(const std::string& who, const std::string& phase, const std::string& color,
                   double x, double w, double h, double ns, double step_ns, std::string* out) {
  if (w <= 0) return;
  const double share = step_ns > 0 ? 100.0 * ns / step_ns : 0;
  out->append("<rect x=\"" + Coord(x) + "\" width=\"" + Coord(w) + "\" height=\"" + Coord(h) +
              "\" fill=\"" + color + "\" data-phase=\"" + Escape(phase) + "\" data-ns=\"" +
              Num(ns, 10) + "\"><title>" + who + " · " + Escape(phase) + ": " + Duration(ns) +
              " per step (" + Num(share, 3) + "%)</title></rect>");
}

void AppendBar(const RunCollector& data, const std::vector<int>& order, int row, double y, double h,
               double ns_per_px, bool label, std::string* out) {
  const Bar bar = MakeBar(data, row);
  const RankRows& rows = data.rows();
  const std::string who = (rows.per_row() == 1 ? "rank " : "ranks ") + rows.Label(row);
  out->append("<g class=\"bar\" data-ranks=\"" + rows.Label(row) + "\" data-step-ns=\"" +
              Num(bar.step_ns, 10) + "\" transform=\"translate(0," + Coord(y) + ")\">");
  if (label) {
    std::string tip = who + ": mean step " + Duration(bar.step_ns) + " over " +
                      Thousands(bar.steps) + " step records";
    if (rows.per_row() > 1 && bar.slowest_rank >= 0)
      tip += "&#10;slowest: rank " + std::to_string(bar.slowest_rank) + ", mean step " +
             Duration(bar.slowest_ns);
    out->append("<text x=\"" + Coord(kLeft - 6) + "\" y=\"" + Coord(h / 2) +
                "\" text-anchor=\"end\" dominant-baseline=\"middle\">" + who + "<title>" + tip +
                "</title></text>");
  }
  double x = kLeft, covered = 0;
  for (int p : order) {
    const double ns = bar.phase_ns[p];
    AppendSegment(who, data.phases()[p], PhaseColor(data.phases()[p], p), x, ns / ns_per_px, h, ns,
                  bar.step_ns, out);
    x += ns / ns_per_px;
    covered += ns;
  }
  if (bar.step_ns > covered * 1.0001) {
    const double ns = bar.step_ns - covered;
    AppendSegment(who, kOutside, "#ced4da", x, ns / ns_per_px, h, ns, bar.step_ns, out);
  }
  if (bar.steps > 0) {
    out->append("<text class=\"total\" x=\"" +
                Coord(kLeft + std::max(bar.step_ns, covered) / ns_per_px + 4) + "\" y=\"" +
                Coord(h / 2) + "\" dominant-baseline=\"middle\">" + Duration(bar.step_ns) +
                "</text>");
  }
  out->append("</g>");
}

void AppendAxis(double max_ns, double ns_per_px, double y, std::string* out) {
  out->append("<g class=\"axis\">");
  for (double t : NiceTicks(0, max_ns, 8)) {
    const double x = kLeft + t / ns_per_px;
    out->append("<line x1=\"" + Coord(x) + "\" x2=\"" + Coord(x) + "\" y1=\"" + Coord(y) +
                "\" y2=\"" + Coord(y + 4) + "\"/><text x=\"" + Coord(x) + "\" y=\"" +
                Coord(y + 16) + "\" text-anchor=\"middle\">" + Duration(t) + "</text>");
  }
  out->append("<text class=\"label\" x=\"" + Coord(kLeft + kPlotW / 2) + "\" y=\"" + Coord(y + 34) +
              "\" text-anchor=\"middle\">mean time per step</text></g>");
}

void AppendLegend(const RunCollector& data, const std::vector<int>& order, std::string* out) {
  out->append("<div class=\"legend\">");
  for (int p : order) {
    out->append("<span><i style=\"background:" + PhaseColor(data.phases()[p], p) + "\"></i>");
    AppendEscaped(out, data.phases()[p]);
    out->append("</span>");
  }
  out->append(std::string("<span><i style=\"background:#ced4da\"></i>") + kOutside +
              "</span></div>");
}

// "Probes (dsdiag's own cost): 1.2% of step time, at most 1.4% (rank 3)": from the step
// records' probe_ns; nothing when no rank wrote it (synth runs, older traces).
void AppendProbeCost(const RunCollector& data, std::string* out) {
  double probe = 0, steps = 0, worst = -1;
  int worst_rank = -1, ranks = 0;
  for (size_t i = 0; i < data.rank_steps().size(); ++i) {
    const RankSteps& s = data.rank_steps()[i];
    if (s.probe_step_ns <= 0) continue;
    ++ranks;
    probe += s.probe_ns;
    steps += s.probe_step_ns;
    const double share = s.probe_ns / s.probe_step_ns;
    if (share > worst) {
      worst = share;
      worst_rank = data.rows().ranks()[i];
    }
  }
  if (ranks == 0) return;
  out->append(
      "<p class=\"note\" id=\"probe-cost\">The probes' own time (each step record's "
      "<code>probe_ns</code>): " +
      Num(100 * probe / steps, 3) + "% of step time over " + std::to_string(ranks) +
      (ranks == 1 ? " rank" : " ranks"));
  if (ranks > 1)
    out->append(", at most " + Num(100 * worst, 3) + "% (rank " + std::to_string(worst_rank) + ")");
  out->append(".</p>");
}

}  // namespace

void AppendPhaseSection(const RunCollector& data, std::string* out) {
  const RankRows& rows = data.rows();
  out->append(
      "<section id=\"phases\"><h2>Step time by phase</h2><p class=\"note\">Mean time per "
      "step of each rank, split by the phases of its <code>step</code> records. " +
      std::string(rows.per_row() > 1 ? "Rows of " + std::to_string(rows.per_row()) +
                                           " ranks: the mean over their steps; hover the label "
                                           "for the slowest rank of a row."
                                     : "") +
      "</p>");
  double max_ns = 0;
  bool any = false;
  for (int r = 0; r < rows.rows(); ++r) {
    const Bar bar = MakeBar(data, r);
    double covered = 0;
    for (double p : bar.phase_ns) covered += p;
    max_ns = std::max({max_ns, bar.step_ns, covered});
    any = any || bar.steps > 0;
  }
  if (!any) {
    out->append("<p class=\"none\">No <code>step</code> records with a duration.</p></section>");
    return;
  }
  const std::vector<int> order = PhaseOrder(data.phases());
  const double h = rows.rows() <= 16 ? 20 : std::max(4.0, std::floor(640.0 / rows.rows()));
  const double gap = h >= 10 ? 4 : 1;
  const int label_stride = std::max(1, (rows.rows() + 31) / 32);
  const double ns_per_px = (max_ns > 0 ? max_ns : 1) / kPlotW;
  const double plot_h = rows.rows() * (h + gap);
  out->append("<svg class=\"chart bars\" id=\"phases-svg\" viewBox=\"0 0 " +
              Coord(kLeft + kPlotW + kRight) + " " + Coord(kTop + plot_h + 44) + "\" width=\"" +
              Coord(kLeft + kPlotW + kRight) + "\" role=\"img\">");
  for (int r = 0; r < rows.rows(); ++r)
    AppendBar(data, order, r, kTop + r * (h + gap), h, ns_per_px, r % label_stride == 0, out);
  AppendAxis(max_ns, ns_per_px, kTop + plot_h, out);
  out->append("</svg>");
  AppendLegend(data, order, out);
  AppendProbeCost(data, out);
  out->append("</section>");
}

}  // namespace dsdiag::report
