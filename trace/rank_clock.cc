#include "trace/rank_clock.h"

#include "trace/record_types.h"
#include "trace/records/clock_record.h"
#include "trace/trace_reader.h"

namespace dsdiag::trace {

bool RankClock::Refine(int64_t offset_ns, int64_t offset_err_ns) {
  // A record that measured nothing (offset_err -1) does not undo a measured offset.
  if (offset_err_ns < 0 && offset_err_ns_ >= 0) return false;
  offset_ns_ = offset_ns;
  offset_err_ns_ = offset_err_ns;
  return true;
}

bool RankClock::Refine(const Record& record) {
  if (record.type_id() != rec_id::kClock) return false;
  const records::ClockView clock(record);
  const std::optional<int64_t> offset = clock.offset();
  if (!offset) return false;
  return Refine(*offset, clock.offset_err().value_or(-1));
}

void OffsetHistory::Add(const Record& record) {
  if (record.type_id() != rec_id::kClock || updates_.size() >= kMaxKept) return;
  const records::ClockView clock(record);
  const std::optional<int64_t> offset = clock.offset();
  if (offset) updates_.push_back({record.ts(), *offset, clock.offset_err().value_or(-1)});
}

int64_t OffsetHistory::ToRank0(int64_t ts) const {
  RankClock clock(header_);
  // File order is time order for the main thread that writes `clock` records; a linear
  // scan keeps that assumption out of the lookup (a handful of entries in practice).
  for (const Update& u : updates_)
    if (u.ts <= ts) clock.Refine(u.offset_ns, u.offset_err_ns);
  return clock.ToRank0(ts);
}

}  // namespace dsdiag::trace
