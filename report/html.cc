#include "report/html.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "trace/records/phase_record.h"

namespace dsdiag::report {

void AppendEscaped(std::string* out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&':
        out->append("&amp;");
        break;
      case '<':
        out->append("&lt;");
        break;
      case '>':
        out->append("&gt;");
        break;
      case '"':
        out->append("&quot;");
        break;
      case '\'':
        out->append("&#39;");
        break;
      default:
        out->push_back(c);
    }
  }
}

std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  AppendEscaped(&out, text);
  return out;
}

std::string Num(double value, int digits) {
  if (!std::isfinite(value)) return std::isnan(value) ? "NaN" : (value > 0 ? "inf" : "-inf");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, value);
  return buf;
}

std::string Coord(double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", value);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

std::string Duration(double ns) {
  const double a = std::fabs(ns);
  if (a < 1e3) return Num(ns, 3) + " ns";
  if (a < 1e6) return Num(ns / 1e3, 3) + " us";
  if (a < 1e9) return Num(ns / 1e6, 3) + " ms";
  return Num(ns / 1e9, 3) + " s";
}

std::string Thousands(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return value < 0 ? "-" + out : out;
}

std::string StepSpan(int64_t first, int64_t last) {
  if (first == last) return "step " + std::to_string(first);
  return "steps " + std::to_string(first) + "-" + std::to_string(last);
}

std::string HeatColor(double t) {
  // Pale cream through orange to dark red: light cells recede, hot ones stand out, and the
  // ramp stays readable in greyscale.
  struct Stop {
    double t;
    int r, g, b;
  };
  static constexpr std::array<Stop, 6> kStops = {{{0.0, 0xfb, 0xf6, 0xe9},
                                                  {0.2, 0xfd, 0xdc, 0x9a},
                                                  {0.4, 0xfc, 0xae, 0x5f},
                                                  {0.6, 0xf0, 0x6e, 0x3c},
                                                  {0.8, 0xc4, 0x2a, 0x22},
                                                  {1.0, 0x6b, 0x04, 0x0f}}};
  if (!std::isfinite(t)) t = 0;
  t = std::clamp(t, 0.0, 1.0);
  size_t i = 1;
  while (i + 1 < kStops.size() && t > kStops[i].t) ++i;
  const Stop& a = kStops[i - 1];
  const Stop& b = kStops[i];
  const double f = (t - a.t) / (b.t - a.t);
  auto mix = [f](int x, int y) { return static_cast<int>(std::lround(x + (y - x) * f)); };
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b));
  return buf;
}

std::string SeriesColor(int i) {
  static constexpr const char* kColors[] = {
      "#1f5fa8", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#0b7285", "#e67700", "#5c940d",
      "#364fc7", "#a61e4d", "#087f5b", "#6741d9", "#495057", "#b08900", "#1098ad", "#9c36b5"};
  constexpr int n = static_cast<int>(std::size(kColors));
  return kColors[((i % n) + n) % n];
}

std::string PhaseColor(std::string_view phase, int index) {
  // Fixed colours for the trainer's phases, so that two reports compare at a glance.
  if (phase == trace::phase::kData) return "#e8590c";
  if (phase == trace::phase::kForward) return "#4c6ef5";
  if (phase == trace::phase::kBackward) return "#7048e8";
  if (phase == trace::phase::kSync) return "#f03e3e";
  if (phase == trace::phase::kOptimizer) return "#37b24d";
  if (phase == trace::phase::kCheckpoint) return "#f59f00";
  if (phase == "other") return "#868e96";
  return SeriesColor(index + 5);
}

std::vector<double> NiceTicks(double lo, double hi, int target) {
  std::vector<double> ticks;
  if (!std::isfinite(lo) || !std::isfinite(hi) || target < 1) return ticks;
  if (hi <= lo) return {lo};
  const double raw = (hi - lo) / target;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (step >= raw) break;
  }
  const double first = std::ceil(lo / step - 1e-9) * step;
  for (double t = first; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
    if (ticks.size() > 100) break;
  }
  return ticks;
}

}  // namespace dsdiag::report
