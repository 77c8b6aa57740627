// Step binning for the report's charts: however long the run, a chart has at most
// kMaxStepBins columns, and memory is rows x bins — never rows x steps.
//
// The number of steps is not known until every trace has been read, so the bins adapt as
// steps arrive: bin b covers steps [origin + b*width, origin + (b+1)*width), width starts at
// 1 and doubles whenever a step would fall past the last bin; doubling merges bins pairwise
// in every grid attached to the axis. The final width depends only on the highest step
// (it is the smallest power of two that fits the run in kMaxStepBins bins), not on the
// order records arrive in. Steps below the origin (a helper thread lagging the first step)
// go in bin 0.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace dsdiag::report {

inline constexpr int kMaxStepBins = 200;

// What one bin holds of the values added to it: enough for the max, min and mean, and
// where the max came from (for tooltips).
struct BinStats {
  double sum = 0;
  int64_t count = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  int max_rank = -1;
  int64_t max_step = -1;
  int min_rank = -1;
  int64_t min_step = -1;

  void Add(double value, int rank, int64_t step);
  void Merge(const BinStats& other);
  bool empty() const { return count == 0; }
  double mean() const { return count ? sum / static_cast<double>(count) : 0; }
};

class BinnedRows;

class StepAxis {
 public:
  explicit StepAxis(int max_bins = kMaxStepBins) : max_bins_(max_bins) {}
  StepAxis(const StepAxis&) = delete;
  StepAxis& operator=(const StepAxis&) = delete;

  // The bin of `step`, widening the bins (and coarsening every attached grid) when it
  // falls past the last one. The first step ever asked for becomes the origin.
  int Bin(int64_t step);

  bool started() const { return started_; }
  int64_t origin() const { return origin_; }
  int64_t width() const { return width_; }
  // Bins from the origin to the highest step seen.
  int bins() const { return bins_; }
  int max_bins() const { return max_bins_; }
  // First and last step of bin `b`.
  int64_t FirstStep(int b) const { return origin_ + b * width_; }
  int64_t LastStep(int b) const { return FirstStep(b) + width_ - 1; }

 private:
  friend class BinnedRows;
  void Attach(BinnedRows* grid) { grids_.push_back(grid); }

  int max_bins_;
  bool started_ = false;
  int64_t origin_ = 0;
  int64_t width_ = 1;
  int bins_ = 0;
  std::vector<BinnedRows*> grids_;
};

// rows x bins of BinStats on a StepAxis. Non-movable: the axis keeps a pointer to it.
class BinnedRows {
 public:
  BinnedRows(StepAxis* axis, int rows);
  BinnedRows(const BinnedRows&) = delete;
  BinnedRows& operator=(const BinnedRows&) = delete;

  void Add(int row, int64_t step, double value, int rank);
  int rows() const { return static_cast<int>(cells_.size()); }
  // Bins beyond those a row has seen are empty.
  const BinStats& At(int row, int bin) const;
  // Everything in a row.
  BinStats RowTotal(int row) const;
  bool empty() const { return values_ == 0; }

 private:
  friend class StepAxis;
  void Halve();  // the axis doubled its width: merge bins pairwise

  StepAxis* axis_;
  std::vector<std::vector<BinStats>> cells_;
  int64_t values_ = 0;
};

}  // namespace dsdiag::report
