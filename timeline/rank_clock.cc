#include "timeline/rank_clock.h"

namespace dsdiag::timeline {

void OffsetHistory::Add(int64_t ts, int64_t offset_ns) {
  if (updates_.size() < kMaxKept) updates_.emplace_back(ts, offset_ns);
}

int64_t OffsetHistory::ToRank0(int64_t ts) const {
  RankClock clock(header_);
  // File order is time order for the main thread that writes `clock` records; a linear
  // scan keeps that assumption out of the lookup (a handful of entries in practice).
  for (const auto& [at, offset] : updates_)
    if (at <= ts) clock.SetOffset(offset);
  return clock.ToRank0(ts);
}

}  // namespace dsdiag::timeline
