#include "analyzers/kinds/straggler/straggler_windows.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "analyzers/kinds/straggler/straggler_stats.h"

namespace dsdiag::analyzers::straggler {
namespace {

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

void WindowSeries::Add(int64_t step, double lateness_ns) {
  int64_t index = FloorDiv(step, len_);
  if (windows_.empty()) first_ = index;
  // Out of range on either side: coarser windows until the step fits (a step before the
  // first one seen comes from a helper thread's record that lagged its rank).
  while (index < first_ ? first_ - index + static_cast<int64_t>(windows_.size()) > kMaxWindows
                        : index - first_ >= kMaxWindows) {
    Coarsen();
    index = FloorDiv(step, len_);
  }
  if (index < first_) {
    windows_.insert(windows_.begin(), static_cast<size_t>(first_ - index), Window{});
    first_ = index;
  }
  if (index - first_ >= static_cast<int64_t>(windows_.size()))
    windows_.resize(static_cast<size_t>(index - first_ + 1));
  Window& w = windows_[static_cast<size_t>(index - first_)];
  w.sum += lateness_ns;
  ++w.steps;
}

void WindowSeries::Coarsen() {
  const int64_t first = FloorDiv(first_, 2);
  std::vector<Window> merged;
  for (size_t i = 0; i < windows_.size(); ++i) {
    const auto at = static_cast<size_t>(FloorDiv(first_ + static_cast<int64_t>(i), 2) - first);
    if (at >= merged.size()) merged.resize(at + 1);
    merged[at].sum += windows_[i].sum;
    merged[at].steps += windows_[i].steps;
  }
  windows_ = std::move(merged);
  first_ = first;
  len_ *= 2;
}

std::vector<std::pair<int64_t, WindowSeries::Window>> WindowSeries::At(int64_t len) const {
  std::vector<std::pair<int64_t, Window>> out;
  for (size_t i = 0; i < windows_.size(); ++i) {
    if (windows_[i].steps == 0) continue;
    const int64_t index = FloorDiv((first_ + static_cast<int64_t>(i)) * len_, len);
    if (out.empty() || out.back().first != index) out.emplace_back(index, Window{});
    out.back().second.sum += windows_[i].sum;
    out.back().second.steps += windows_[i].steps;
  }
  return out;
}

double UpperTail(int64_t n, int64_t k) {
  if (k <= 0) return 1;
  if (k > n) return 0;
  double tail = 0;
  for (int64_t i = k; i <= n; ++i)
    tail += std::exp(std::lgamma(double(n) + 1) - std::lgamma(double(i) + 1) -
                     std::lgamma(double(n - i) + 1) - double(n) * std::log(2.0));
  return std::min(1.0, tail);
}

std::vector<Persistence> TestPersistence(const std::vector<const WindowSeries*>& series) {
  int64_t len = 1;
  for (const WindowSeries* s : series)
    if (s) len = std::max(len, s->len());
  // Window -> each judged rank's mean step lateness in it. Two passes over the ranks, so that
  // only one rank's windows are held at a time (16,384 ranks).
  std::map<int64_t, std::vector<double>> by_window;
  for (const WindowSeries* s : series) {
    if (!s) continue;
    for (const auto& [index, w] : s->At(len)) by_window[index].push_back(w.sum / double(w.steps));
  }
  std::map<int64_t, double> median;
  for (auto& [index, means] : by_window)
    if (means.size() >= 2) median[index] = MedianInPlace(&means);
  std::vector<Persistence> out(series.size());
  for (size_t r = 0; r < series.size(); ++r) {
    if (!series[r]) continue;
    Persistence& p = out[r];
    for (const auto& [index, w] : series[r]->At(len)) {
      const auto m = median.find(index);
      if (m == median.end()) continue;
      const double mean = w.sum / double(w.steps);
      if (mean == m->second) continue;
      ++p.windows;
      p.late += mean > m->second ? 1 : 0;
    }
    p.p = UpperTail(p.windows, p.late);
  }
  return out;
}

}  // namespace dsdiag::analyzers::straggler
