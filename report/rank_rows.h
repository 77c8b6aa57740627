// RankRows: how the analysed ranks map onto the rows of a chart. Up to `max_rows` ranks get
// a row each; beyond, consecutive ranks (in rank order) share a row, ceil(ranks/max_rows)
// to a row, so that 1,024 ranks draw as 128 rows of 8.
#pragma once

#include <string>
#include <vector>

namespace dsdiag::report {

class RankRows {
 public:
  RankRows() = default;
  // `ranks`: the analysed ranks, sorted; position i in it is the rank's index.
  RankRows(std::vector<int> ranks, int max_rows);

  int rows() const { return rows_; }
  int per_row() const { return per_row_; }
  int RowOf(int rank_index) const { return rank_index / per_row_; }
  // Rank numbers in row `row`.
  std::vector<int> RanksOf(int row) const;
  // "3", or "0-7" for a shared row (gaps in the rank numbers shown as in FormatRankRanges).
  std::string Label(int row) const;
  const std::vector<int>& ranks() const { return ranks_; }

 private:
  std::vector<int> ranks_;
  int per_row_ = 1;
  int rows_ = 0;
};

}  // namespace dsdiag::report
