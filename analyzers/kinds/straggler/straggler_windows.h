// A rank's step lateness per window of consecutive steps, and the test that asks whether a
// rank is late window after window or only in some: what tells a slow rank from a busy host
// that slows one rank now and another later.
//
// Windows are aligned on step numbers (window i holds steps [i * len, (i + 1) * len)), so
// that every rank's window i covers the same steps. A run starts with one step per window;
// when a rank's steps span more than kMaxWindows windows, len doubles and pairs of windows
// merge: at most kMaxWindows windows a rank, whatever the run's length.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace dsdiag::analyzers::straggler {

// 64 windows: enough for a rank late in every window of 16,384 ranks to pass the
// family-wise test below (2^-19 < 0.05 / 16384), few enough to cost 1 KB a rank.
inline constexpr int64_t kMaxWindows = 64;

class WindowSeries {
 public:
  struct Window {
    double sum = 0;  // step lateness, ns
    int64_t steps = 0;
  };

  void Add(int64_t step, double lateness_ns);
  int64_t len() const { return len_; }
  // (window index at `len`, a power of two no smaller than len(); the steps in it), by index.
  std::vector<std::pair<int64_t, Window>> At(int64_t len) const;

 private:
  void Coarsen();

  int64_t len_ = 1;
  int64_t first_ = 0;  // the window index of windows_[0], at len_
  std::vector<Window> windows_;
};

// The sign test of "late in more windows than on time": over the windows where the rank and
// at least one other judged rank have steps, whether its mean step lateness lies above or
// below the median of every judged rank's in that window (ties left out). Were no rank
// special, each window would go either way with probability 1/2.
struct Persistence {
  int64_t windows = 0;  // windows with a sign (ties left out)
  int64_t late = 0;     // of those, the ones where it was later than the median
  double p = 1;         // one-sided binomial tail: P(X >= late), X ~ Bin(windows, 1/2)
};

// P(X >= k) for X ~ Binomial(n, 1/2).
double UpperTail(int64_t n, int64_t k);

// `series` of the judged ranks (by rank number: null = not judged), at a common window length.
// Returns the test for each judged rank (by rank number; windows == 0 for the others).
std::vector<Persistence> TestPersistence(const std::vector<const WindowSeries*>& series);

}  // namespace dsdiag::analyzers::straggler
