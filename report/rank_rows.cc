#include "report/rank_rows.h"

#include <algorithm>

#include "analyzers/framework/finding.h"

namespace dsdiag::report {

RankRows::RankRows(std::vector<int> ranks, int max_rows) : ranks_(std::move(ranks)) {
  const int n = static_cast<int>(ranks_.size());
  max_rows = std::max(max_rows, 1);
  per_row_ = std::max(1, (n + max_rows - 1) / max_rows);
  rows_ = (n + per_row_ - 1) / per_row_;
}

std::vector<int> RankRows::RanksOf(int row) const {
  const size_t first = static_cast<size_t>(row) * per_row_;
  const size_t last = std::min(ranks_.size(), first + per_row_);
  return std::vector<int>(ranks_.begin() + first, ranks_.begin() + last);
}

std::string RankRows::Label(int row) const { return analyzers::FormatRankRanges(RanksOf(row)); }

}  // namespace dsdiag::report
