#include "analyzers/rank_clock.h"

#include "trace/record_types.h"

namespace dsdiag::analyzers {

RankClock::RankClock(const trace::ClockReference& reference)
    : mono_ns_(reference.mono_ns),
      wall_ns_(reference.wall_ns),
      offset_ns_(reference.offset_ns),
      offset_err_ns_(reference.offset_err_ns) {}

bool RankClock::Refine(const trace::Record& record) {
  if (record.type_id() != trace::rec_id::kClock) return false;
  const std::optional<int64_t> offset = record.Int("offset");
  const int64_t err = record.Int("offset_err").value_or(-1);
  // A record that measured nothing (offset_err -1) does not undo a measured offset.
  if (!offset || (err < 0 && offset_err_ns_ >= 0)) return false;
  SetOffset(*offset, err);
  return true;
}

void RankClock::SetOffset(int64_t offset_ns, int64_t offset_err_ns) {
  offset_ns_ = offset_ns;
  offset_err_ns_ = offset_err_ns;
}

}  // namespace dsdiag::analyzers
