#include "analyzers/kinds/straggler/straggler_stats.h"

#include <algorithm>
#include <cmath>

namespace dsdiag::analyzers::straggler {

int BucketOf(int64_t ns) {
  if (ns < static_cast<int64_t>(kFirstEdgeNs)) return 0;
  const int i = 1 + static_cast<int>(std::floor(kPerDecade * std::log10(ns / kFirstEdgeNs)));
  return std::min(i, kBuckets - 1);
}

double BucketMiddle(int i) {
  if (i == 0) return 0;
  return kFirstEdgeNs * std::pow(10.0, (i - 0.5) / kPerDecade);
}

// Reorders *v. Selection, not a sort: called per collective with every rank's arrival.
double MedianInPlace(std::vector<double>* v) {
  if (v->empty()) return 0;
  const size_t n = v->size();
  const auto mid = v->begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(v->begin(), mid, v->end());
  if (n % 2) return *mid;
  // The other middle value is the largest of the lower half.
  return (*std::max_element(v->begin(), mid) + *mid) / 2;
}

double Median(std::vector<double> v) { return MedianInPlace(&v); }

}  // namespace dsdiag::analyzers::straggler
