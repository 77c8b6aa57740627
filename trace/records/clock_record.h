// The `clock` record (docs/trace-format.md, "Other records"): the rank's clock offset to rank
// 0, measured over the job's store at start and at the end (NTP's method, best of several
// round trips). Written by the session; read by the rank clock (trace/rank_clock.h), which
// puts every rank's times on rank 0's.
//
//   {"type":"clock","step":0,"when":"start","offset":-1200,"offset_err":300,"rtt":600}
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct ClockKeys {
  static constexpr FieldKey when{"when"};  // "start", "end"
  static constexpr FieldKey offset{"offset"};
  static constexpr FieldKey offset_err{"offset_err"};
  static constexpr FieldKey rtt{"rtt"};
};

struct ClockRecord {
  static constexpr std::string_view kType = rec::kClock;
  std::string_view when;
  int64_t offset = 0;  // ns to add to this rank's monotonic time for rank 0's
  int64_t offset_err = 0;
  int64_t rtt = 0;
};
void AppendFields(const ClockRecord& r, JsonLine* line);

class ClockView {
 public:
  explicit ClockView(const Record& r) : r_(r) {}
  std::optional<std::string_view> when() const { return r_.Str(ClockKeys::when); }
  std::optional<int64_t> offset() const { return r_.Int(ClockKeys::offset); }
  std::optional<int64_t> offset_err() const { return r_.Int(ClockKeys::offset_err); }
  std::optional<int64_t> rtt() const { return r_.Int(ClockKeys::rtt); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
