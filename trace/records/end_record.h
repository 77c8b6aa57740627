// The `end` record (docs/trace-format.md, "`end`"): the last line of every exit dsdiag
// controls — why the rank ended, the exit status that follows, the signal's name or the
// error's message, and the time the probes spent in themselves over the run. Its absence is
// what rank-died looks for. Written by the session (Session::End); read by the run's
// dispatch (rank fates), the timeline and the report.
//
//   {"type":"end","ts":98765,"step":50,"reason":"ok","status":0,"probe_ns":4312000}
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct EndKeys {
  static constexpr FieldKey reason{"reason"};  // "ok", "signal", "error", "peer-failure", ...
  static constexpr FieldKey status{"status"};
  static constexpr FieldKey signal{"signal"};  // reason "signal": its name
  static constexpr FieldKey error{"error"};    // other reasons: the message, when there is one
  static constexpr FieldKey probe_ns{"probe_ns"};
};

struct EndRecord {
  static constexpr std::string_view kType = rec::kEnd;
  std::string_view reason;
  int status = 0;
  std::string_view detail;  // the signal's name (reason "signal") or the error; empty: none
  int64_t probe_ns = -1;    // negative: left out (synth: no probes)
};
void AppendFields(const EndRecord& r, JsonLine* line);

class EndView {
 public:
  explicit EndView(const Record& r) : r_(r) {}
  std::optional<std::string_view> reason() const { return r_.Str(EndKeys::reason); }
  std::optional<int64_t> status() const { return r_.Int(EndKeys::status); }
  std::optional<std::string_view> signal() const { return r_.Str(EndKeys::signal); }
  std::optional<std::string_view> error() const { return r_.Str(EndKeys::error); }
  std::optional<int64_t> probe_ns() const { return r_.Int(EndKeys::probe_ns); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
