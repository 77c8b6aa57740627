// LineChart: an inline-SVG chart of a few series over a numeric x axis — the loss and
// loss-scale curves (x = step) and the loader sweep (x = workers). Each point is a small
// circle carrying its value in a <title> tooltip and a data-value attribute, so that the
// numbers behind a curve can be read off the page (and checked by tests).
//
// Size: one polyline per series plus one circle per point; callers keep points to a few
// thousand (the step bins do).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dsdiag::report {

struct ChartPoint {
  double x = 0;
  double y = 0;
  std::optional<double> lo, hi;  // drawn as a whisker (loader sweep: min..max)
  std::string title;             // tooltip text (escaped when drawn)
};

struct ChartSeries {
  std::string name;
  std::string color;
  std::vector<ChartPoint> points;  // by x
};

// A shaded band, e.g. the min..max of every rank under the lines of rank groups.
struct ChartBand {
  std::vector<double> x, lo, hi;
  std::string title;
};

struct LineChart {
  std::string id;  // the svg element's id
  std::string x_label, y_label;
  bool log_y = false;  // base-2 ticks; for loss scales (powers of two)
  bool integer_x = false;
  std::vector<ChartSeries> series;
  std::optional<ChartBand> band;
  std::optional<double> marker_x;  // a dashed vertical line (the recommendation)
  std::string marker_label;
};

// The <svg> element, then an HTML legend when there is more than one series.
std::string DrawLineChart(const LineChart& chart);

}  // namespace dsdiag::report
