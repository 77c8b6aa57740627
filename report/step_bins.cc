#include "report/step_bins.h"

#include <algorithm>

namespace dsdiag::report {

void BinStats::Add(double value, int rank, int64_t step) {
  sum += value;
  ++count;
  if (value > max) {
    max = value;
    max_rank = rank;
    max_step = step;
  }
  if (value < min) {
    min = value;
    min_rank = rank;
    min_step = step;
  }
}

void BinStats::Merge(const BinStats& other) {
  if (other.empty()) return;
  sum += other.sum;
  count += other.count;
  if (other.max > max) {
    max = other.max;
    max_rank = other.max_rank;
    max_step = other.max_step;
  }
  if (other.min < min) {
    min = other.min;
    min_rank = other.min_rank;
    min_step = other.min_step;
  }
}

int StepAxis::Bin(int64_t step) {
  if (!started_) {
    started_ = true;
    origin_ = step;
  }
  if (step < origin_) step = origin_;
  int64_t bin = (step - origin_) / width_;
  while (bin >= max_bins_) {
    width_ *= 2;
    bins_ = (bins_ + 1) / 2;
    for (BinnedRows* grid : grids_) grid->Halve();
    bin = (step - origin_) / width_;
  }
  bins_ = std::max(bins_, static_cast<int>(bin) + 1);
  return static_cast<int>(bin);
}

BinnedRows::BinnedRows(StepAxis* axis, int rows) : axis_(axis), cells_(std::max(rows, 0)) {
  axis_->Attach(this);
}

void BinnedRows::Add(int row, int64_t step, double value, int rank) {
  const int bin = axis_->Bin(step);
  std::vector<BinStats>& cells = cells_[row];
  if (static_cast<int>(cells.size()) <= bin) cells.resize(bin + 1);
  cells[bin].Add(value, rank, step);
  ++values_;
}

const BinStats& BinnedRows::At(int row, int bin) const {
  static const BinStats kEmpty;
  const std::vector<BinStats>& cells = cells_[row];
  return bin < static_cast<int>(cells.size()) ? cells[bin] : kEmpty;
}

BinStats BinnedRows::RowTotal(int row) const {
  BinStats total;
  for (const BinStats& cell : cells_[row]) total.Merge(cell);
  return total;
}

void BinnedRows::Halve() {
  for (std::vector<BinStats>& cells : cells_) {
    std::vector<BinStats> merged((cells.size() + 1) / 2);
    for (size_t i = 0; i < cells.size(); ++i) merged[i / 2].Merge(cells[i]);
    cells.swap(merged);
  }
}

}  // namespace dsdiag::report
