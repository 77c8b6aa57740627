#include "report/line_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/html.h"

namespace dsdiag::report {
namespace {

constexpr double kLeft = 70, kRight = 20, kTop = 14, kBottom = 44;
constexpr double kPlotW = 900, kPlotH = 260;

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void Add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool valid() const { return lo <= hi; }
};

class Scale {
 public:
  Scale(Range r, double pixels, bool log, bool flip) : pixels_(pixels), log_(log), flip_(flip) {
    if (!r.valid()) r = {0, 1};
    lo_ = T(r.lo);
    hi_ = T(r.hi);
    if (hi_ - lo_ < 1e-12) {  // a flat series: centre it
      const double pad = log_ ? 1 : std::max(std::fabs(lo_) * 0.05, 1e-9);
      lo_ -= pad;
      hi_ += pad;
    } else if (flip_) {  // y: keep points off the frame
      const double pad = (hi_ - lo_) * 0.05;
      lo_ -= pad;
      hi_ += pad;
    }
  }
  double operator()(double v) const {
    const double f = (T(v) - lo_) / (hi_ - lo_);
    return flip_ ? pixels_ * (1 - f) : pixels_ * f;
  }
  double lo() const { return U(lo_); }
  double hi() const { return U(hi_); }

 private:
  double T(double v) const { return log_ ? std::log2(std::max(v, 1e-300)) : v; }
  double U(double v) const { return log_ ? std::exp2(v) : v; }
  double pixels_, lo_ = 0, hi_ = 1;
  bool log_, flip_;
};

std::vector<double> YTicks(const Scale& y, bool log) {
  if (!log) return NiceTicks(y.lo(), y.hi(), 5);
  std::vector<double> ticks;
  const int first = static_cast<int>(std::ceil(std::log2(y.lo()) - 1e-9));
  const int last = static_cast<int>(std::floor(std::log2(y.hi()) + 1e-9));
  const int stride = std::max(1, (last - first + 1) / 6);
  for (int e = first; e <= last; e += stride) ticks.push_back(std::exp2(e));
  return ticks;
}

void AppendAxes(const LineChart& c, const Scale& x, const Scale& y, std::string* out) {
  out->append("<g class=\"axis\">");
  for (double t : YTicks(y, c.log_y)) {
    const std::string py = Coord(kTop + y(t));
    out->append("<line class=\"grid\" x1=\"" + Coord(kLeft) + "\" x2=\"" + Coord(kLeft + kPlotW) +
                "\" y1=\"" + py + "\" y2=\"" + py + "\"/>");
    out->append("<text x=\"" + Coord(kLeft - 6) + "\" y=\"" + py +
                "\" text-anchor=\"end\" dominant-baseline=\"middle\">" + Num(t, 8) + "</text>");
  }
  std::vector<double> xt = NiceTicks(x.lo(), x.hi(), 8);
  if (c.integer_x)
    xt.erase(std::remove_if(xt.begin(), xt.end(), [](double t) { return t != std::floor(t); }),
             xt.end());
  for (double t : xt) {
    const std::string px = Coord(kLeft + x(t));
    out->append("<line x1=\"" + px + "\" x2=\"" + px + "\" y1=\"" + Coord(kTop + kPlotH) +
                "\" y2=\"" + Coord(kTop + kPlotH + 4) + "\"/>");
    out->append("<text x=\"" + px + "\" y=\"" + Coord(kTop + kPlotH + 16) +
                "\" text-anchor=\"middle\">" + Num(t, 6) + "</text>");
  }
  out->append("<line x1=\"" + Coord(kLeft) + "\" x2=\"" + Coord(kLeft + kPlotW) + "\" y1=\"" +
              Coord(kTop + kPlotH) + "\" y2=\"" + Coord(kTop + kPlotH) + "\"/>");
  out->append("<text class=\"label\" x=\"" + Coord(kLeft + kPlotW / 2) + "\" y=\"" +
              Coord(kTop + kPlotH + 36) + "\" text-anchor=\"middle\">");
  AppendEscaped(out, c.x_label);
  out->append("</text><text class=\"label\" transform=\"translate(14," + Coord(kTop + kPlotH / 2) +
              ") rotate(-90)\" text-anchor=\"middle\">");
  AppendEscaped(out, c.y_label);
  out->append("</text></g>");
}

void AppendBand(const ChartBand& band, const Scale& x, const Scale& y, std::string* out) {
  if (band.x.empty()) return;
  out->append("<polygon class=\"band\" points=\"");
  for (size_t i = 0; i < band.x.size(); ++i)
    out->append(Coord(kLeft + x(band.x[i])) + "," + Coord(kTop + y(band.hi[i])) + " ");
  for (size_t i = band.x.size(); i-- > 0;)
    out->append(Coord(kLeft + x(band.x[i])) + "," + Coord(kTop + y(band.lo[i])) + " ");
  out->append("\"><title>");
  AppendEscaped(out, band.title);
  out->append("</title></polygon>");
}

void AppendSeries(const ChartSeries& s, const Scale& x, const Scale& y, std::string* out) {
  out->append("<g class=\"series\" data-name=\"");
  AppendEscaped(out, s.name);
  out->append("\" stroke=\"" + s.color + "\" fill=\"" + s.color + "\">");
  if (s.points.size() > 1) {
    out->append("<polyline fill=\"none\" points=\"");
    for (const ChartPoint& p : s.points)
      out->append(Coord(kLeft + x(p.x)) + "," + Coord(kTop + y(p.y)) + " ");
    out->append("\"/>");
  }
  for (const ChartPoint& p : s.points) {
    const std::string px = Coord(kLeft + x(p.x));
    if (p.lo && p.hi) {
      out->append("<line class=\"whisker\" x1=\"" + px + "\" x2=\"" + px + "\" y1=\"" +
                  Coord(kTop + y(*p.lo)) + "\" y2=\"" + Coord(kTop + y(*p.hi)) + "\"/>");
    }
    out->append("<circle cx=\"" + px + "\" cy=\"" + Coord(kTop + y(p.y)) +
                "\" r=\"2.5\" data-value=\"" + Num(p.y, 8) + "\"><title>");
    AppendEscaped(out, p.title);
    out->append("</title></circle>");
  }
  out->append("</g>");
}

void AppendLegend(const LineChart& c, std::string* out) {
  if (c.series.size() < 2 && !c.band) return;
  out->append("<div class=\"legend\">");
  for (const ChartSeries& s : c.series) {
    out->append("<span><i style=\"background:" + s.color + "\"></i>");
    AppendEscaped(out, s.name);
    out->append("</span>");
  }
  if (c.band) {
    out->append("<span><i class=\"band-swatch\"></i>");
    AppendEscaped(out, c.band->title);
    out->append("</span>");
  }
  out->append("</div>");
}

}  // namespace

std::string DrawLineChart(const LineChart& c) {
  Range xr, yr;
  for (const ChartSeries& s : c.series) {
    for (const ChartPoint& p : s.points) {
      xr.Add(p.x);
      yr.Add(p.y);
      if (p.lo) yr.Add(*p.lo);
      if (p.hi) yr.Add(*p.hi);
    }
  }
  if (c.band) {
    for (double v : c.band->x) xr.Add(v);
    for (double v : c.band->lo) yr.Add(v);
    for (double v : c.band->hi) yr.Add(v);
  }
  if (c.marker_x) xr.Add(*c.marker_x);
  const bool log_y = c.log_y && yr.valid() && yr.lo > 0;
  const Scale x(xr, kPlotW, false, false);
  const Scale y(yr, kPlotH, log_y, true);
  const double width = kLeft + kPlotW + kRight, height = kTop + kPlotH + kBottom;

  std::string out = "<svg class=\"chart\" id=\"" + Escape(c.id) + "\" viewBox=\"0 0 " +
                    Coord(width) + " " + Coord(height) + "\" width=\"" + Coord(width) +
                    "\" role=\"img\">";
  AppendAxes(c, x, y, &out);
  if (c.band) AppendBand(*c.band, x, y, &out);
  if (c.marker_x) {
    const std::string px = Coord(kLeft + x(*c.marker_x));
    out.append("<g class=\"marker\"><line x1=\"" + px + "\" x2=\"" + px + "\" y1=\"" + Coord(kTop) +
               "\" y2=\"" + Coord(kTop + kPlotH) + "\"/><text x=\"" + px + "\" y=\"" +
               Coord(kTop + 10) + "\" dx=\"4\">");
    AppendEscaped(&out, c.marker_label);
    out.append("</text></g>");
  }
  for (const ChartSeries& s : c.series) AppendSeries(s, x, y, &out);
  out.append("</svg>");
  AppendLegend(c, &out);
  return out;
}

}  // namespace dsdiag::report
