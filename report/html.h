// Small pieces of HTML and SVG text the report is made of: escaping, number and duration
// formatting, colours. Everything the report shows from a trace or a finding goes through
// Escape: trace strings are user data (parameter names, messages, env values).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dsdiag::report {

// Escapes & < > " ' for text and attribute values alike.
std::string Escape(std::string_view text);
void AppendEscaped(std::string* out, std::string_view text);

// Shortest of up to `digits` significant digits: 2.3291, 65536, 1.2e+07 (printf %g).
std::string Num(double value, int digits = 6);
// A coordinate in SVG user units: at most 2 decimals, no trailing zeros.
std::string Coord(double value);
// A duration for people: "850 ns", "12.3 us", "31.2 ms", "4.05 s".
std::string Duration(double ns);
// 1234567 -> "1,234,567".
std::string Thousands(int64_t value);
// "steps 64-127" or "step 5".
std::string StepSpan(int64_t first, int64_t last);

// Sequential colour for t in [0, 1] (pale to dark red), as "#rrggbb".
std::string HeatColor(double t);
// Categorical colours for series and phases: distinct at a glance, and for i >= their
// number a repeat of the list.
std::string SeriesColor(int i);
std::string PhaseColor(std::string_view phase, int index);

// About `target` round tick values covering [lo, hi] (1, 2 or 5 times a power of ten).
std::vector<double> NiceTicks(double lo, double hi, int target);

}  // namespace dsdiag::report
